package groupstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

func claimedStore(t *testing.T) *File {
	t.Helper()
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	return s
}

func openAt(t *testing.T, s *File, group string, epoch, version int64) (Log, State) {
	t.Helper()
	l, st, err := s.OpenAt(group, assignment.Position{Epoch: epoch, Version: version})
	if err != nil {
		t.Fatalf("open at %d.%d: %v", epoch, version, err)
	}
	return l, st
}

// A coordinator that a later one has loaded the group from (it stalled past
// dead-after) gets ErrSuperseded for what it writes after that, and none of
// it is in what the next load reads; what it wrote before is.
func TestClaimFencesAnEarlierCoordinator(t *testing.T) {
	s := claimedStore(t)
	a, _ := openAt(t, s, "g", 1, 10)
	if err := a.Append([]Record{rec("t", 0, 5)}); err != nil {
		t.Fatal(err)
	}
	b, st := openAt(t, s, "g", 1, 20)
	if st.Offsets[TP{"t", 0}].Offset != 5 {
		t.Fatalf("the later coordinator loaded %+v, want offset 5 (written before its claim)", st.Offsets)
	}
	if err := a.Append([]Record{rec("t", 0, 6)}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("append after the later claim: %v, want ErrSuperseded", err)
	}
	if err := a.Append([]Record{rec("t", 1, 1)}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("second append after the later claim: %v, want ErrSuperseded", err)
	}
	if err := a.SaveMembers([]byte("stale")); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("save members after the later claim: %v, want ErrSuperseded", err)
	}
	if err := b.Append([]Record{rec("t", 0, 7)}); err != nil {
		t.Fatal(err)
	}
	if err := b.SaveMembers([]byte("current")); err != nil {
		t.Fatal(err)
	}
	if err := a.Destroy(); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("destroy after the later claim: %v, want ErrSuperseded", err)
	}
	_, st = openAt(t, s, "g", 1, 30)
	if got := st.Offsets[TP{"t", 0}].Offset; got != 7 || len(st.Offsets) != 1 || string(st.Members) != "current" {
		t.Fatalf("loaded offsets %+v members %q, want only t-0 at 7 and the later coordinator's members", st.Offsets, st.Members)
	}
}

// An earlier coordinator cannot load the group once a later one claimed
// it; the same coordinator loading again (its actor restarted) can.
func TestClaimRefusesAnEarlierLoad(t *testing.T) {
	s := claimedStore(t)
	b, _ := openAt(t, s, "g", 2, 5)
	if err := b.Append([]Record{rec("t", 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.OpenAt("g", assignment.Position{Epoch: 1, Version: 9}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("open at an earlier claim: %v, want ErrSuperseded", err)
	}
	again, st := openAt(t, s, "g", 2, 5)
	if st.Offsets[TP{"t", 0}].Offset != 1 {
		t.Fatalf("reloaded %+v", st.Offsets)
	}
	if err := again.Append([]Record{rec("t", 0, 2)}); err != nil {
		t.Fatalf("append after reloading at the same claim: %v", err)
	}
}

// The later coordinator rewrites the log it loads, so the records a stalled
// earlier one still appends through its open descriptor (before it reads
// the claim) land in a file nobody reads.
func TestClaimLeavesLateAppendsUnread(t *testing.T) {
	s := claimedStore(t)
	a, _ := openAt(t, s, "g", 1, 10)
	if err := a.Append([]Record{rec("t", 0, 5)}); err != nil {
		t.Fatal(err)
	}
	openAt(t, s, "g", 1, 20)
	// What a's Append writes before its claim check fails: a frame through
	// its descriptor.
	fl := a.(*fileLog)
	if _, err := fl.f.Write(appendFrame(nil, encodeRecord(rec("t", 0, 99)))); err != nil {
		t.Fatal(err)
	}
	_, st := openAt(t, s, "g", 1, 30)
	if got := st.Offsets[TP{"t", 0}].Offset; got != 5 {
		t.Fatalf("loaded offset %d, want 5: the earlier coordinator's late record was read", got)
	}
}

// Coordinators that load a group without files claim it at their first
// write: the earlier one's first write after the later one's fails, and a
// coordinator whose load found nothing does not overwrite files another
// wrote since.
func TestClaimOfAGroupWithoutFiles(t *testing.T) {
	s := claimedStore(t)
	a, _ := openAt(t, s, "g", 1, 10)
	b, _ := openAt(t, s, "g", 1, 20)
	if err := a.SaveMembers(nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, DirName("g"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a load of a group without files, or removing its absent membership, created its directory: %v", err)
	}
	if err := b.Append([]Record{rec("t", 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Append([]Record{rec("t", 0, 2)}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("earlier coordinator's first write: %v, want ErrSuperseded", err)
	}

	s2 := claimedStore(t)
	late, _ := openAt(t, s2, "h", 1, 20)
	early, _ := openAt(t, s2, "h", 1, 10)
	if err := early.Append([]Record{rec("t", 0, 3)}); err != nil {
		t.Fatal(err)
	}
	if err := late.Append([]Record{rec("t", 0, 4)}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("write of a coordinator that loaded no files after another wrote them: %v, want ErrSuperseded (its state is stale)", err)
	}
	_, st := openAt(t, s2, "h", 1, 20)
	if got := st.Offsets[TP{"t", 0}].Offset; got != 3 {
		t.Fatalf("reloaded offset %d, want the acknowledged 3", got)
	}
}

// Without Claims (local-dev mode) OpenAt is Open: no claim file.
func TestOpenAtWithoutClaims(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := s.OpenAt("g", assignment.Position{Epoch: 3, Version: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]Record{rec("t", 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, DirName("g"), "claim")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("claim file without Claims: %v", err)
	}
	if _, _, err := s.OpenAt("g", assignment.Position{}); err != nil {
		t.Fatalf("a lower position without Claims: %v", err)
	}
}

// A commit a stalled coordinator makes after a later one deleted the group
// (its claim with it) is not acknowledged: it went to a file nobody reads.
func TestClaimGoneWithTheGroup(t *testing.T) {
	s := claimedStore(t)
	a, _ := openAt(t, s, "g", 1, 10)
	if err := a.Append([]Record{rec("t", 0, 5)}); err != nil {
		t.Fatal(err)
	}
	b, _ := openAt(t, s, "g", 1, 20)
	if err := b.Destroy(); err != nil {
		t.Fatal(err)
	}
	if err := a.Append([]Record{rec("t", 0, 6)}); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("append after the group's deletion by a later coordinator: %v, want ErrSuperseded", err)
	}
}
