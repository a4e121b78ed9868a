package sharestate

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// TestClaimFencesSaves walks two leaders of one share-partition (an earlier
// one, stalled past its fence, and the later one that loaded it after the
// move) and an admin through loads, saves and admin changes, with and
// without claims: with claims the earlier leader's saves are refused once
// the later one claimed (the later leader's snapshot stays), and an admin
// change refuses those of the leader that loaded before it; without
// (local-dev mode, one broker) every save writes. Each leader saves under
// the admin mark it last loaded, as the keeper does.
func TestClaimFencesSaves(t *testing.T) {
	early := assignment.Position{Epoch: 1, Version: 5}
	late := assignment.Position{Epoch: 1, Version: 7}
	type step struct {
		name string
		// op: "claim" (load: Claim, then Load under the lock), "save"
		// (SaveAt of a snapshot starting at start), "alter" (Set to
		// start), "delete" (Set nil), "remove" (Delete).
		op    string
		at    assignment.Position
		start int64
		// superseded: the step fails with ErrSuperseded.
		superseded bool
		// loaded is the start a claim reads (-1: no snapshot).
		loaded int64
		// disk is the snapshot's start on the volume after the step
		// (-1: none).
		disk int64
	}
	fenced := []step{
		{name: "the earlier leader loads", op: "claim", at: early, loaded: -1, disk: -1},
		{name: "and saves", op: "save", at: early, start: 10, disk: 10},
		{name: "the later leader loads what it saved", op: "claim", at: late, loaded: 10, disk: 10},
		{name: "the earlier leader's save is refused", op: "save", at: early, start: 11, superseded: true, disk: 10},
		{name: "the later leader saves", op: "save", at: late, start: 12, disk: 12},
		{name: "the earlier leader's next save leaves the later snapshot", op: "save", at: early, start: 13, superseded: true, disk: 12},
		{name: "the earlier leader cannot load it again", op: "claim", at: early, superseded: true, disk: 12},
		{name: "an admin change takes the claim with it", op: "alter", start: 20, disk: 20},
		{name: "which refuses the leader that loaded before", op: "save", at: late, start: 13, superseded: true, disk: 20},
		{name: "the leader loads the admin's state", op: "claim", at: late, loaded: 20, disk: 20},
		{name: "and saves after it", op: "save", at: late, start: 21, disk: 21},
		{name: "an admin removal takes the claim with the state", op: "delete", disk: -1},
		{name: "a claim gone refuses the leader that loaded before", op: "save", at: late, start: 22, superseded: true, disk: -1},
		{name: "the leader loads again", op: "claim", at: late, loaded: -1, disk: -1},
		{name: "and saves", op: "save", at: late, start: 23, disk: 23},
		{name: "a removal of the state", op: "remove", disk: -1},
		{name: "refuses the leader's next save too", op: "save", at: late, start: 24, superseded: true, disk: -1},
	}
	local := []step{
		{name: "one leader loads", op: "claim", at: late, loaded: -1, disk: -1},
		{name: "another loads from an earlier position", op: "claim", at: early, loaded: -1, disk: -1},
		{name: "both save", op: "save", at: late, start: 10, disk: 10},
		{name: "the earlier too", op: "save", at: early, start: 11, disk: 11},
		{name: "an admin change", op: "alter", start: 20, disk: 20},
		{name: "does not refuse a save", op: "save", at: early, start: 12, disk: 12},
		{name: "an admin removal", op: "delete", disk: -1},
		{name: "does not either", op: "save", at: late, start: 13, disk: 13},
	}
	for _, c := range []struct {
		name   string
		claims bool
		steps  []step
	}{{"claims", true, fenced}, {"local mode", false, local}} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			s.Claims = c.claims
			marks := map[assignment.Position]uint64{}
			for _, st := range c.steps {
				loaded := int64(-1)
				switch st.op {
				case "claim":
					var unlock func()
					unlock, err = s.Claim("g", "t", 0, st.at)
					if err == nil {
						var merr error
						marks[st.at], merr = s.LoadMark("g", "t", 0)
						snap, ok, lerr := s.Load("g", "t", 0)
						unlock()
						if merr != nil {
							t.Fatalf("%s: load mark: %v", st.name, merr)
						}
						if lerr != nil {
							t.Fatalf("%s: load: %v", st.name, lerr)
						}
						if ok {
							loaded = snap.Start
						}
					}
				case "save":
					err = s.SaveAt("g", "t", 0, st.at, marks[st.at], Snapshot{Start: st.start})
				case "alter":
					err = s.Set("g", "t", 0, &Snapshot{Start: st.start}, 7)
				case "delete":
					err = s.Set("g", "t", 0, nil, 8)
				case "remove":
					err = s.Delete("g", "t", 0)
				}
				if st.superseded != errors.Is(err, ErrSuperseded) || (!st.superseded && err != nil) {
					t.Fatalf("%s: %v, superseded: %v", st.name, err, st.superseded)
				}
				if st.op == "claim" && !st.superseded && loaded != st.loaded {
					t.Fatalf("%s: loaded start %d, want %d", st.name, loaded, st.loaded)
				}
				disk := int64(-1)
				if snap, ok, err := s.Load("g", "t", 0); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				} else if ok {
					disk = snap.Start
				}
				if disk != st.disk {
					t.Fatalf("%s: the volume's snapshot starts at %d, want %d", st.name, disk, st.disk)
				}
			}
		})
	}
}

// TestAlterFencesTheLeader: an admin's Set of a snapshot (Alter) removes
// the claim of the leader that loaded the share-partition before, so the
// leader's save of the old state is refused and the admin's snapshot stays;
// the leader's next Claim, from the same assignment file, loads the admin's
// snapshot and saves after it. The claims of share-partitions the admin
// did not change stay.
func TestAlterFencesTheLeader(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	at := assignment.Position{Epoch: 2, Version: 3}
	load := func(p int32) (Snapshot, uint64, bool) {
		t.Helper()
		unlock, err := s.Claim("g", "t", p, at)
		if err != nil {
			t.Fatalf("claim of t-%d: %v", p, err)
		}
		defer unlock()
		mark, err := s.LoadMark("g", "t", p)
		if err != nil {
			t.Fatal(err)
		}
		snap, ok, err := s.Load("g", "t", p)
		if err != nil {
			t.Fatal(err)
		}
		return snap, mark, ok
	}
	old := Snapshot{TopicID: [16]byte{1}, Start: 5, States: []uint8{1, 0}, Counts: []int16{1, 0}}
	for p := range int32(2) {
		if _, mark, _ := load(p); mark != 0 {
			t.Fatalf("mark %d of t-%d before any admin change, want 0", mark, p)
		}
		if err := s.SaveAt("g", "t", p, at, 0, old); err != nil {
			t.Fatal(err)
		}
	}
	altered := Snapshot{TopicID: [16]byte{1}, Start: 2}
	if err := s.Set("g", "t", 0, &altered, 7); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveAt("g", "t", 0, at, 0, old); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("the leader's save of the state it loaded before the alter: %v, want ErrSuperseded", err)
	}
	if snap, ok, err := s.Load("g", "t", 0); err != nil || !ok || snap.Start != altered.Start || len(snap.States) != 0 {
		t.Fatalf("the volume holds %+v (%v, %v), want the admin's start %d", snap, ok, err, altered.Start)
	}
	if err := s.SaveAt("g", "t", 1, at, 0, old); err != nil {
		t.Fatalf("a save of a share-partition the admin did not change: %v", err)
	}
	snap, mark, ok := load(0)
	if !ok || snap.Start != altered.Start {
		t.Fatalf("the leader loaded %+v (%v) again, want the admin's start %d", snap, ok, altered.Start)
	}
	if mark != 7 {
		t.Fatalf("the leader loaded mark %d again, want the admin's 7", mark)
	}
	next := Snapshot{TopicID: [16]byte{1}, Start: 3}
	if err := s.SaveAt("g", "t", 0, at, mark, next); err != nil {
		t.Fatalf("the leader's save after loading again: %v", err)
	}
	if snap, _, _ := s.Load("g", "t", 0); snap.Start != next.Start {
		t.Fatalf("the volume's start %d, want the leader's %d", snap.Start, next.Start)
	}
}

// TestMarkFencesAStaleSaveAfterAReload: a claim is only the position of
// the assignment file, so a leader that loads a share-partition again
// from the same file after an admin change takes the same claim. A save
// of the state it loaded before (queued before the reload, reaching the
// volume after it) is refused by the admin mark, and the admin's snapshot
// stays; the saves of the state loaded again, under the admin's mark,
// write. A mark that cannot be read refuses every save, saying so.
func TestMarkFencesAStaleSaveAfterAReload(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	at := assignment.Position{Epoch: 2, Version: 3}
	// load claims the share-partition at at and reads its mark, as a
	// leader does before its snapshot.
	load := func() uint64 {
		t.Helper()
		unlock, err := s.Claim("g", "t", 0, at)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		mark, err := s.LoadMark("g", "t", 0)
		if err != nil {
			t.Fatal(err)
		}
		return mark
	}
	disk := func() Snapshot {
		t.Helper()
		snap, ok, err := s.Load("g", "t", 0)
		if err != nil || !ok {
			t.Fatalf("no snapshot on the volume: %v", err)
		}
		return snap
	}
	// An earlier admin change left mark 5 (m0).
	if err := s.Set("g", "t", 0, &Snapshot{TopicID: [16]byte{1}, Start: 1}, 5); err != nil {
		t.Fatal(err)
	}
	m0 := load()
	if m0 != 5 {
		t.Fatalf("loaded mark %d, want 5", m0)
	}
	old := Snapshot{TopicID: [16]byte{1}, Start: 4, States: []uint8{1, 1}, Counts: []int16{1, 1}}
	if err := s.SaveAt("g", "t", 0, at, m0, old); err != nil {
		t.Fatalf("the leader's save under the mark it loaded: %v", err)
	}
	// The admin alters (m1), removing the claim; the leader, refused,
	// loads again from the same file: the same claim.
	altered := Snapshot{TopicID: [16]byte{1}, Start: 9, States: []uint8{}, Counts: []int16{}}
	if err := s.Set("g", "t", 0, &altered, 11); err != nil {
		t.Fatal(err)
	}
	m1 := load()
	if m1 != 11 {
		t.Fatalf("loaded mark %d again, want the admin's 11", m1)
	}
	old.Start = 6
	if err := s.SaveAt("g", "t", 0, at, m0, old); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("a save of the state loaded under the old mark, after the reload: %v, want ErrSuperseded", err)
	}
	if got := disk(); !reflect.DeepEqual(got, altered) {
		t.Fatalf("the volume holds %+v, want the admin's %+v", got, altered)
	}
	next := Snapshot{TopicID: [16]byte{1}, Start: 10}
	if err := s.SaveAt("g", "t", 0, at, m1, next); err != nil {
		t.Fatalf("a save of the state loaded again: %v", err)
	}
	if got := disk(); got.Start != next.Start {
		t.Fatalf("the volume's start %d, want the reloaded state's %d", got.Start, next.Start)
	}

	// A damaged mark: no save writes, and the error says why.
	dir, base := s.files("g", "t", 0)
	if err := os.WriteFile(filepath.Join(dir, base+".mark"), []byte{1, 2, 3}, 0o644); err != nil {
		t.Fatal(err)
	}
	err = s.SaveAt("g", "t", 0, at, m1, Snapshot{TopicID: [16]byte{1}, Start: 12})
	if err == nil || errors.Is(err, ErrSuperseded) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "mark") {
		t.Fatalf("a save over an unreadable mark: %v, want an error naming the mark", err)
	}
	if got := disk(); got.Start != next.Start {
		t.Fatalf("the volume's start %d after a save over an unreadable mark, want %d", got.Start, next.Start)
	}
	// Local-dev mode checks no mark.
	s.Claims = false
	if err := s.SaveAt("g", "t", 0, at, m0, Snapshot{TopicID: [16]byte{1}, Start: 13}); err != nil {
		t.Fatalf("a save without claims: %v", err)
	}
	if got := disk(); got.Start != 13 {
		t.Fatalf("the volume's start %d after a save without claims, want 13", got.Start)
	}
}

// An admin change keeps its mark with claims: the leader compares it with
// the one it loaded.
func TestSetWritesTheMark(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	if err := s.Set("g", "t", 0, &Snapshot{Start: 4}, 9); err != nil {
		t.Fatal(err)
	}
	if m, err := s.LoadMark("g", "t", 0); m != 9 || err != nil {
		t.Fatalf("mark %d, %v; want 9", m, err)
	}
	if err := s.Set("g", "t", 0, nil, 11); err != nil {
		t.Fatal(err)
	}
	if m, err := s.LoadMark("g", "t", 0); m != 11 || err != nil {
		t.Fatalf("mark after the removal %d, %v; want 11", m, err)
	}
}

// DropTopics removes a deleted topic's claims with its snapshots and marks
// (a claim without a snapshot too), and leaves the others'.
func TestDropTopicsRemovesClaims(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	at := assignment.Position{Epoch: 1, Version: 1}
	claimed := func(topic string, p int32) {
		t.Helper()
		unlock, err := s.Claim("g", topic, p, at)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	claimed("t", 0)
	if err := s.SaveAt("g", "t", 0, at, 0, Snapshot{TopicID: [16]byte{1}}); err != nil {
		t.Fatal(err)
	}
	claimed("t", 1) // claimed, nothing saved yet
	claimed("keep", 0)
	if err := s.SaveAt("g", "keep", 0, at, 0, Snapshot{TopicID: [16]byte{2}}); err != nil {
		t.Fatal(err)
	}
	n, err := s.DropTopics(func(topic string, _ [16]byte) bool { return topic == "t" })
	if err != nil || n != 2 {
		t.Fatalf("dropped %d, %v; want 2", n, err)
	}
	dir := filepath.Join(s.dir, groupstore.DirName("g"))
	for _, name := range []string{"t-0.state", "t-0.claim", "t-0.claim.lock", "t-1.claim", "t-1.claim.lock"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", name, err)
		}
	}
	if err := s.SaveAt("g", "keep", 0, at, 0, Snapshot{TopicID: [16]byte{2}, Start: 3}); err != nil {
		t.Fatalf("the other topic's claim: %v", err)
	}
	if err := s.SaveAt("g", "t", 0, at, 0, Snapshot{}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("a save after its claim was dropped: %v, want ErrSuperseded", err)
	}
}
