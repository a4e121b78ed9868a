package clock

import (
	"slices"
	"testing"
	"time"
)

func TestFakeFiresDueTimersInOrder(t *testing.T) {
	start := time.Unix(1000, 0)
	c := NewFake(start)
	var fired []string
	var at []time.Duration
	rec := func(name string) func() {
		return func() { fired = append(fired, name); at = append(at, c.Since(start)) }
	}
	c.AfterFunc(3*time.Second, rec("c"))
	c.AfterFunc(time.Second, rec("a"))
	c.AfterFunc(time.Second, rec("a2")) // same deadline: start order
	stopped := c.AfterFunc(2*time.Second, rec("stopped"))
	c.AfterFunc(2*time.Second, func() {
		fired = append(fired, "b")
		c.AfterFunc(0, rec("from b")) // due at once: fires in this Advance
	})
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop of a pending timer must report true once")
	}
	c.Advance(2500 * time.Millisecond)
	if want := []string{"a", "a2", "b", "from b"}; !slices.Equal(fired, want) {
		t.Fatalf("fired %v, want %v", fired, want)
	}
	if want := []time.Duration{time.Second, time.Second, 2 * time.Second}; !slices.Equal(at, want) {
		t.Fatalf("fired at %v, want %v", at, want)
	}
	if got := c.Since(start); got != 2500*time.Millisecond {
		t.Fatalf("now %v after the advance", got)
	}
	if c.Pending() != 1 {
		t.Fatalf("%d pending, want 1", c.Pending())
	}
	c.Advance(time.Second)
	if fired[len(fired)-1] != "c" || c.Pending() != 0 {
		t.Fatalf("fired %v, pending %d", fired, c.Pending())
	}
}

func TestFakeTicker(t *testing.T) {
	c := NewFake(time.Unix(0, 0))
	tk := c.NewTicker(time.Second)
	c.Advance(3500 * time.Millisecond) // three ticks; the channel keeps one
	select {
	case got := <-tk.C():
		if got != time.Unix(1, 0) {
			t.Fatalf("tick at %v, want the first", got)
		}
	default:
		t.Fatal("no tick")
	}
	select {
	case <-tk.C():
		t.Fatal("missed ticks were queued")
	default:
	}
	tk.Stop()
	c.Advance(time.Hour)
	select {
	case <-tk.C():
		t.Fatal("tick after Stop")
	default:
	}
}

func TestRealAfterFunc(t *testing.T) {
	done := make(chan struct{})
	Real().AfterFunc(time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("real timer did not fire")
	}
}
