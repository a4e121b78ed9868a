package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, "f", []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, "f", []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || string(b) != "two" {
		t.Fatalf("content %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f"+TmpSuffix)); !os.IsNotExist(err) {
		t.Fatal("temporary file left behind")
	}
	if err := Write(filepath.Join(dir, "missing"), "f", nil, 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// TestWriteWithStages: a unique temporary file gets the mode asked for,
// Renamed sees the new content in place, and a refused permit leaves the
// old file and no temporary file behind.
func TestWriteWithStages(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, "f", []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	permit := make(chan error, 1)
	permit <- nil
	var seen string
	tm, err := WriteWith(dir, "f", []byte("two"), Options{Mode: 0o640, UniqueTmp: true, Permit: permit, Renamed: func() {
		b, _ := os.ReadFile(filepath.Join(dir, "f"))
		seen = string(b)
	}})
	if err != nil || seen != "two" {
		t.Fatalf("err %v, Renamed saw %q", err, seen)
	}
	if tm.Visible <= 0 || tm.TmpSync > tm.Visible {
		t.Fatalf("timing %+v", tm)
	}
	if fi, err := os.Stat(filepath.Join(dir, "f")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}

	refused := errors.New("refused")
	permit <- refused
	called := false
	if _, err := WriteWith(dir, "f", []byte("three"), Options{Mode: 0o644, UniqueTmp: true, Permit: permit, Renamed: func() { called = true }}); err != refused || called {
		t.Fatalf("refused write: err %v, Renamed called %v", err, called)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "f"))
	entries, _ := os.ReadDir(dir)
	if string(b) != "two" || len(entries) != 1 {
		t.Fatalf("after a refused write: content %q, directory %v", b, entries)
	}
}

// A volatile write replaces the file whole, as any other, without the
// directory fsync.
func TestWriteVolatile(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, "f", []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm, err := WriteWith(dir, "f", []byte("two"), Options{Mode: 0o644, Volatile: true})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || string(b) != "two" {
		t.Fatalf("content %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f"+TmpSuffix)); !os.IsNotExist(err) {
		t.Fatal("temporary file left behind")
	}
	if tm.DirSync != 0 {
		t.Fatalf("directory fsynced (%v)", tm.DirSync)
	}
}
