package atomicfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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

// updateChildEnv, when set, makes TestUpdateAcrossProcesses a child: it
// names the directory whose counter the child increments.
const updateChildEnv = "ATOMICFILE_UPDATE_CHILD_DIR"

// increment adds one to the decimal counter in dir/counter through Update.
func increment(dir string) error {
	return Update(dir, "counter", Options{Mode: 0o644}, func(cur []byte) ([]byte, error) {
		n := 0
		if len(cur) > 0 {
			var err error
			if n, err = strconv.Atoi(string(cur)); err != nil {
				return nil, err
			}
		}
		return []byte(strconv.Itoa(n + 1)), nil
	})
}

// TestUpdateAcrossProcesses: processes that share a directory (brokers on
// one volume) increment one counter at the same time, each through its own
// lock file descriptor; no increment is lost.
func TestUpdateAcrossProcesses(t *testing.T) {
	const rounds = 40
	if dir := os.Getenv(updateChildEnv); dir != "" {
		for range rounds {
			if err := increment(dir); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	dir := t.TempDir()
	const children = 3
	var cmds []*exec.Cmd
	for range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUpdateAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), updateChildEnv+"="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for range rounds {
		if err := increment(dir); err != nil {
			t.Error(err)
		}
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "counter"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa((children + 1) * rounds); string(b) != want {
		t.Fatalf("counter %s, want %s: increments were lost", b, want)
	}
}

// TestUpdateWritesNothingForNil: a change that returns nil leaves the file
// (and its absence) as it is; change's error comes back as is.
func TestUpdateWritesNothingForNil(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "made")
	var seen []byte
	if err := Update(dir, "f", Options{Mode: 0o644}, func(cur []byte) ([]byte, error) { seen = cur; return nil, nil }); err != nil || seen != nil {
		t.Fatalf("err %v, saw %q", err, seen)
	}
	if _, err := os.Stat(filepath.Join(dir, "f")); !os.IsNotExist(err) {
		t.Fatalf("file written for a nil change: %v", err)
	}
	if err := Update(dir, "f", Options{Mode: 0o644}, func([]byte) ([]byte, error) { return []byte("one"), nil }); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := Update(dir, "f", Options{Mode: 0o644}, func(cur []byte) ([]byte, error) { seen = cur; return []byte("two"), refused }); err != refused || string(seen) != "one" {
		t.Fatalf("err %v, saw %q", err, seen)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "one" {
		t.Fatalf("content %q after a refused change", b)
	}
}

// TestMkdir: a directory is made below a parent that exists, one that
// exists is no error, and none is made below a parent that is gone.
func TestMkdir(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "g")
	for range 2 {
		if err := Mkdir(dir); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("made: %v", err)
	}
	gone := filepath.Join(root, "gone", "g")
	if err := Mkdir(gone); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("below a missing parent: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(gone)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the missing parent was made: %v", err)
	}
}
