package producerid

import (
	"testing"
	"time"
)

func TestBrokersStartedInTheSameMillisecondDoNotCollide(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	now := func() time.Time { return at }
	seen := map[int64]int32{}
	gens := map[int32]*Generator{0: New(0, now), 1: New(1, now), 2: New(2, now), 4095: New(4095, now)}
	for i := range 5000 { // several blocks each, in the same millisecond
		for b, g := range gens {
			id := g.Next()
			if id < 0 {
				t.Fatalf("broker %d: negative id %d", b, id)
			}
			if other, dup := seen[id]; dup {
				t.Fatalf("allocation %d: id %d handed out by broker %d and broker %d", i, id, other, b)
			}
			seen[id] = b
		}
	}
}

func TestRestartAllocatesAboveEarlierIncarnation(t *testing.T) {
	at := time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC)
	now := func() time.Time { return at }
	first := New(3, now)
	seen := map[int64]bool{}
	for range 3000 { // three blocks: the generator runs 2 ms ahead of the clock
		seen[first.Next()] = true
	}
	cases := []struct {
		name  string
		after time.Duration
	}{
		{"a restart 3 ms later", 3 * time.Millisecond},
		{"a restart an hour later", time.Hour},
	}
	for _, tc := range cases {
		later := at.Add(tc.after)
		g := New(3, func() time.Time { return later })
		for range 3000 {
			if id := g.Next(); seen[id] {
				t.Fatalf("%s: id %d reused", tc.name, id)
			}
		}
	}
}

func TestIDsKeepTheirFields(t *testing.T) {
	at := epoch.Add(1234 * time.Millisecond)
	g := New(4096+7, func() time.Time { return at }) // broker ids wrap at 4096
	for seq := range int64(3) {
		id := g.Next()
		if block, broker, s := id>>22, id>>10&4095, id&1023; block != 1234 || broker != 7 || s != seq {
			t.Fatalf("id %d: block %d broker %d sequence %d, want 1234 7 %d", id, block, broker, s, seq)
		}
	}
}

func TestClockBeforeEpochOrBackwards(t *testing.T) {
	at := epoch.Add(-time.Hour)
	g := New(1, func() time.Time { return at })
	a := g.Next()
	at = epoch.Add(time.Hour)
	for range 1023 {
		g.Next()
	}
	b := g.Next()               // a new block at the clock's millisecond
	at = epoch.Add(time.Minute) // the clock steps back
	for range 1023 {
		g.Next()
	}
	c := g.Next() // the next block is still after b's
	if !(a < b && b < c) {
		t.Fatalf("ids %d, %d, %d: want increasing blocks", a, b, c)
	}
}
