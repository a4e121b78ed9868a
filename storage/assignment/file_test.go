package assignment

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestPath(t *testing.T) {
	if got := Path("/data"); got != "/data/__cluster/assignment.json" {
		t.Fatalf("Path = %q", got)
	}
}

func TestWriteReadFile(t *testing.T) {
	dir := t.TempDir()
	a := sampleAssignment(t)
	if err := WriteFile(dir, a); err != nil { // creates __cluster
		t.Fatal(err)
	}
	got, err := ReadFile(Path(dir))
	if err != nil || !Equal(a, got) {
		t.Fatalf("read back %+v, %v", got, err)
	}
	fi, err := os.Stat(Path(dir))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	a.AssignmentVersion++
	if err := WriteFile(dir, a); err != nil { // replaces
		t.Fatal(err)
	}
	if got, _ := ReadFile(Path(dir)); got.AssignmentVersion != 43 {
		t.Fatalf("version %d after overwrite", got.AssignmentVersion)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ClusterDir))
	if len(entries) != 1 || entries[0].Name() != FileName {
		t.Fatalf("directory holds %v, want only %s (no temp files left)", entries, FileName)
	}
}

func TestWriteFileRejectsInvalidAndKeepsOld(t *testing.T) {
	dir := t.TempDir()
	a := sampleAssignment(t)
	if err := WriteFile(dir, a); err != nil {
		t.Fatal(err)
	}
	bad := sampleAssignment(t)
	bad.Controller = ""
	if err := WriteFile(dir, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	if got, err := ReadFile(Path(dir)); err != nil || !Equal(got, a) {
		t.Fatalf("old file damaged: %v", err)
	}
}

func TestWriteFileUnwritableDir(t *testing.T) {
	dir := t.TempDir()
	// A file where the directory should be.
	if err := os.WriteFile(filepath.Join(dir, ClusterDir), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(dir, sampleAssignment(t)); err == nil {
		t.Fatal("write over a file-as-directory succeeded")
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadFile(Path(dir)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, "a.json")
	if err := os.WriteFile(p, []byte(`{"format": 1`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || !containsAll(err.Error(), p, "truncated") {
		t.Fatalf("truncated file: %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !contains(s, sub) {
			return false
		}
	}
	return true
}

func contains(s, sub string) bool {
	return len(sub) == 0 || len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub))
}

// TestWriteFileStagedIsVisibleBeforeTheDirectorySync: visible runs once
// the new file is in place (a reader sees it whole), and never for a write
// refused before its rename.
func TestWriteFileStagedIsVisibleBeforeTheDirectorySync(t *testing.T) {
	dir := t.TempDir()
	a := sampleAssignment(t)
	if err := WriteFile(dir, a); err != nil {
		t.Fatal(err)
	}
	next := sampleAssignment(t)
	next.AssignmentVersion = a.AssignmentVersion + 1
	var seen *Assignment
	calls := 0
	tm, err := WriteFileStaged(dir, next, nil, func() {
		calls++
		seen, _ = ReadFile(Path(dir))
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || seen == nil || !Equal(seen, next) {
		t.Fatalf("visible called %d times, saw %+v; want the new file once", calls, seen)
	}
	if tm.Visible <= 0 || tm.TmpSync <= 0 || tm.DirSync <= 0 || tm.TmpSync > tm.Visible {
		t.Fatalf("timing %+v", tm)
	}

	refused := sampleAssignment(t)
	refused.AssignmentVersion = next.AssignmentVersion + 1
	permit := make(chan error, 1)
	permit <- errors.New("lease moved on")
	calls = 0
	if _, err := WriteFileStaged(dir, refused, permit, func() { calls++ }); err == nil || calls != 0 {
		t.Fatalf("refused write: err %v, visible called %d times", err, calls)
	}
	if got, _ := ReadFile(Path(dir)); got == nil || got.AssignmentVersion != next.AssignmentVersion {
		t.Fatalf("after a refused write the file is %+v", got)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, ClusterDir))
	if len(entries) != 1 {
		t.Fatalf("directory holds %v, want only %s", entries, FileName)
	}
}
