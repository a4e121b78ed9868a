package claim

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

func TestTakeAndHeld(t *testing.T) {
	f := File{Dir: t.TempDir(), Name: "claim"}
	p := func(e, v int64) assignment.Position { return assignment.Position{Epoch: e, Version: v} }
	if err := f.Held(p(1, 1)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("held with no claim recorded: %v, want ErrSuperseded", err)
	}
	steps := []struct {
		take     assignment.Position
		taken    bool
		refused  bool
		recorded assignment.Position
	}{
		{take: p(1, 5), taken: true, recorded: p(1, 5)},
		{take: p(1, 5), taken: false, recorded: p(1, 5)},
		{take: p(1, 4), refused: true, recorded: p(1, 5)},
		{take: p(2, 1), taken: true, recorded: p(2, 1)},
		{take: p(1, 9), refused: true, recorded: p(2, 1)},
	}
	for i, s := range steps {
		taken, err := f.Take(s.take)
		if s.refused != errors.Is(err, ErrSuperseded) || (!s.refused && err != nil) || taken != s.taken {
			t.Fatalf("step %d: Take(%v) = %v, %v", i, s.take, taken, err)
		}
		if got, ok, err := f.Read(); !ok || err != nil || got != s.recorded {
			t.Fatalf("step %d: recorded %v %v %v, want %v", i, got, ok, err, s.recorded)
		}
		if err := f.Held(s.recorded); err != nil {
			t.Fatalf("step %d: the recorded claim is not held: %v", i, err)
		}
		if s.refused {
			if err := f.Held(s.take); !errors.Is(err, ErrSuperseded) {
				t.Fatalf("step %d: a refused claim holds: %v", i, err)
			}
		}
	}
}

// A claim that cannot be read counts as a later one: nothing is
// acknowledged on it, and no claim replaces it.
func TestDamagedClaim(t *testing.T) {
	f := File{Dir: t.TempDir(), Name: "claim"}
	if err := os.WriteFile(filepath.Join(f.Dir, f.Name), []byte("7 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mine := assignment.Position{Epoch: 9, Version: 9}
	if err := f.Held(mine); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("held on a damaged claim: %v", err)
	}
	if _, err := f.Take(mine); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("take over a damaged claim: %v", err)
	}
}
