package disklog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenFile: the bare open behind segment, index and directory files
// keeps os.OpenFile's contract for what disklog relies on: errors that
// name the path and match os.ErrNotExist / os.ErrExist, a file that reads,
// writes and stats, and a directory that lists.
func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "00000001-00000000000000000000.log")

	_, err := openFile(path, os.O_RDWR, 0)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("open of a missing file: %v, want ErrNotExist naming %s", err, path)
	}
	f, err := openFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640); !errors.Is(err, os.ErrExist) {
		t.Fatalf("exclusive create of an existing file: %v, want ErrExist", err)
	}
	if _, err := f.WriteAt([]byte("hello, log"), 3); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := f.ReadAt(buf, 3); err != nil || string(buf) != "hello" {
		t.Fatalf("read back %q, %v", buf, err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != 13 || fi.Mode().Perm() != 0o640&^umask(t) {
		t.Fatalf("stat: %v, %v", fi, err)
	}
	if f.Name() != path {
		t.Errorf("name %q, want %q", f.Name(), path)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadAt(buf, 0); err == nil {
		t.Error("read after close succeeded")
	}

	d, err := openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil || len(names) != 1 || names[0] != filepath.Base(path) {
		t.Fatalf("directory lists %v, %v", names, err)
	}
}

// umask is the process's file creation mask, read by creating a file.
func umask(t *testing.T) os.FileMode {
	p := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(p, nil, 0o777); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return 0o777 &^ fi.Mode().Perm()
}
