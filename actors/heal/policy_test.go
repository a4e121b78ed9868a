package heal

import (
	"testing"
	"time"
)

func TestTrackerBacksOffAndGivesUp(t *testing.T) {
	p := Policy{Initial: 100 * time.Millisecond, Max: 400 * time.Millisecond, Window: 10 * time.Second, GiveUpAfter: 5}
	t0 := time.Unix(0, 0)
	steps := []struct {
		key  string
		at   time.Duration
		want Decision
	}{
		{"a", 0, Decision{Restart: true, Delay: 0, Recent: 0}},
		{"a", time.Second, Decision{Restart: true, Delay: 100 * time.Millisecond, Recent: 1}},
		{"b", time.Second, Decision{Restart: true, Delay: 0, Recent: 0}}, // keys are independent
		{"a", 2 * time.Second, Decision{Restart: true, Delay: 200 * time.Millisecond, Recent: 2}},
		{"a", 3 * time.Second, Decision{Restart: true, Delay: 400 * time.Millisecond, Recent: 3}},
		{"a", 4 * time.Second, Decision{Restart: true, Delay: 400 * time.Millisecond, Recent: 4}}, // capped at Max
		{"a", 5 * time.Second, Decision{Restart: false, Recent: 5}},                               // gives up
		{"a", 6 * time.Second, Decision{Restart: false, Recent: 5}},
		// Restarts older than the window no longer count (those at 3 s and 4 s still do).
		{"a", 12*time.Second + time.Millisecond, Decision{Restart: true, Delay: 200 * time.Millisecond, Recent: 2}},
		{"a", 30 * time.Second, Decision{Restart: true, Delay: 0, Recent: 0}},
		{"b", 30 * time.Second, Decision{Restart: true, Delay: 0, Recent: 0}},
	}
	tr := NewTracker(p)
	for i, s := range steps {
		if got := tr.Died(s.key, t0.Add(s.at)); got != s.want {
			t.Errorf("step %d (%s at %s): got %+v, want %+v", i, s.key, s.at, got, s.want)
		}
	}
	tr.Forget("a")
	if got := tr.Died("a", t0.Add(31*time.Second)); got != (Decision{Restart: true}) {
		t.Errorf("after Forget: %+v", got)
	}
}

func TestTrackerNeverGivesUpWithoutLimit(t *testing.T) {
	tr := NewTracker(Partitions)
	t0 := time.Unix(0, 0)
	var d Decision
	for i := range 100 {
		d = tr.Died("p", t0.Add(time.Duration(i)*10*time.Millisecond))
		if !d.Restart {
			t.Fatalf("death %d not restarted", i)
		}
	}
	if d.Delay != Partitions.Max {
		t.Errorf("storm delay %s, want the cap %s", d.Delay, Partitions.Max)
	}
}
