package txnlog

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// claimed opens a store over dir's transaction logs as a cluster-mode
// coordinator: one per broker process sharing the volume.
func claimed(t *testing.T, dir string) *File {
	t.Helper()
	s, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	return s
}

func at(version int64) assignment.Position { return assignment.Position{Epoch: 1, Version: version} }

func mustLoad(t *testing.T, s *File, id string, pos assignment.Position) (State, bool) {
	t.Helper()
	st, ok, err := s.LoadAt(id, pos)
	if err != nil {
		t.Fatalf("load %q at %v: %v", id, pos, err)
	}
	return st, ok
}

// A coordinator whose id a later one loaded saves nothing that counts:
// its Save fails, and what it would have written is not what the next
// load reads; its removal of the id removes nothing.
func TestClaimFencesAnEarlierCoordinator(t *testing.T) {
	dir := t.TempDir()
	a, b := claimed(t, dir), claimed(t, dir)
	mustLoad(t, a, "x", at(1))
	s1 := State{ID: "x", ProducerID: 5, Status: Ongoing}
	if err := a.Save(s1); err != nil {
		t.Fatal(err)
	}
	if got, ok := mustLoad(t, b, "x", at(2)); !ok || got.Status != Ongoing {
		t.Fatalf("the later coordinator loaded %+v %v, want the earlier one's save", got, ok)
	}
	s2 := s1
	s2.Status = PrepareCommit
	if err := a.Save(s2); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("save by the superseded coordinator: %v, want ErrSuperseded", err)
	}
	if err := a.Remove("x"); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("remove by the superseded coordinator: %v, want ErrSuperseded", err)
	}
	if got, ok := mustLoad(t, claimed(t, dir), "x", at(3)); !ok || got.Status != Ongoing {
		t.Fatalf("next load read %+v %v, want the last save that counted (Ongoing)", got, ok)
	}
}

// A load from an older assignment file than the claim's is refused.
func TestClaimRefusesAnEarlierLoad(t *testing.T) {
	dir := t.TempDir()
	mustLoad(t, claimed(t, dir), "x", at(5))
	if _, _, err := claimed(t, dir).LoadAt("x", at(4)); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("load at an older file: %v, want ErrSuperseded", err)
	}
	// The same file again (a reload after a failed save) is the same claim.
	mustLoad(t, claimed(t, dir), "x", at(5))
}

// A coordinator that opened the log before a later one claimed the id (a
// Save stalled between its open and its write) writes to a file the load
// replaced: what it writes is never read. The same holds for the empty log
// a first Save created.
func TestClaimLeavesLateAppendsUnread(t *testing.T) {
	for _, tc := range []struct {
		name  string
		saved bool // the log holds a record before the stall
	}{{"a log with records", true}, {"an empty log", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a := claimed(t, dir)
			mustLoad(t, a, "x", at(1))
			if tc.saved {
				if err := a.Save(State{ID: "x", ProducerID: 5, Status: Ongoing}); err != nil {
					t.Fatal(err)
				}
			}
			stalled, err := os.OpenFile(filepath.Join(a.Root, a.name("x")), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer stalled.Close()
			mustLoad(t, claimed(t, dir), "x", at(2))
			if _, err := stalled.Write(frame(t, State{ID: "x", ProducerID: 5, Status: PrepareAbort})); err != nil {
				t.Fatal(err)
			}
			got, ok := mustLoad(t, claimed(t, dir), "x", at(3))
			if ok != tc.saved || got.Status == PrepareAbort {
				t.Fatalf("next load read %+v (found %v): the stalled coordinator's late record", got, ok)
			}
		})
	}
}

// Removing an expired id removes its claim and lock file too; the
// coordinator that loaded it earlier writes nothing more, and a later load
// starts afresh.
func TestClaimRemovedWithTheLog(t *testing.T) {
	dir := t.TempDir()
	a, b := claimed(t, dir), claimed(t, dir)
	mustLoad(t, a, "x", at(1))
	if err := a.Save(State{ID: "x", ProducerID: 5, Status: CompleteCommit}); err != nil {
		t.Fatal(err)
	}
	mustLoad(t, b, "x", at(2))
	if err := b.Remove("x"); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(b.Root)
	for _, e := range ents {
		t.Errorf("left after the removal: %s", e.Name())
	}
	if err := a.Save(State{ID: "x", ProducerID: 5, Status: Ongoing}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("save after the removal by a later coordinator: %v, want ErrSuperseded", err)
	}
	if _, ok := mustLoad(t, claimed(t, dir), "x", at(3)); ok {
		t.Fatal("the superseded coordinator's save was read after the removal")
	}
}

// A long log is compacted under the claim: a superseded coordinator's
// compaction replaces nothing.
func TestClaimFencesCompaction(t *testing.T) {
	dir := t.TempDir()
	a := claimed(t, dir)
	mustLoad(t, a, "x", at(1))
	st := State{ID: "x", ProducerID: 5, Status: Ongoing}
	for i := 0; i < compactAfter; i++ {
		st.Epoch = int16(i)
		if err := a.Save(st); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Save(st); err != nil {
		t.Fatal(err)
	}
	if _, n, _, _ := readLog(filepath.Join(a.Root, a.name("x"))); n != 1 {
		t.Fatalf("%d records after %d saves, want the log compacted to 1", n, compactAfter+1)
	}
	for i := 0; i < compactAfter; i++ {
		if err := a.Save(st); err != nil {
			t.Fatal(err)
		}
	}
	mustLoad(t, claimed(t, dir), "x", at(2))
	late := st
	late.Status = PrepareCommit
	if err := a.Save(late); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("compaction by the superseded coordinator: %v, want ErrSuperseded", err)
	}
	if got, _ := mustLoad(t, claimed(t, dir), "x", at(3)); got.Status != Ongoing {
		t.Fatalf("next load read %+v, want the later coordinator's log untouched", got)
	}
}

// Without a position a claiming store refuses to load: it could not fence.
func TestClaimsNeedAPosition(t *testing.T) {
	if _, _, err := claimed(t, t.TempDir()).Load("x"); err == nil {
		t.Fatal("Load without a claim position succeeded on a claiming store")
	}
}

// frame is st as a log record.
func frame(t *testing.T, st State) []byte {
	t.Helper()
	payload, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return groupstore.AppendFrame(nil, payload)
}
