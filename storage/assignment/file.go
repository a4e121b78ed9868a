package assignment

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ClusterDir is the directory under the data dir that holds cluster metadata.
const ClusterDir = "__cluster"

// FileName is the assignment file's name inside ClusterDir.
const FileName = "assignment.json"

// tmpPrefix starts the name of WriteFile's temporary files; followers ignore
// them because they only look at FileName.
const tmpPrefix = "." + FileName + ".tmp-"

// Path returns <dataDir>/__cluster/assignment.json.
func Path(dataDir string) string {
	return filepath.Join(dataDir, ClusterDir, FileName)
}

// WriteFile atomically replaces Path(dataDir) with a: it encodes (and so
// validates) a, writes a temporary file in the same directory, fsyncs it,
// renames it over the old file and fsyncs the directory, so a reader sees
// either the old or the new document, never a mix, and the rename survives a
// crash. The directory is created if missing.
func WriteFile(dataDir string, a *Assignment) error {
	return WriteFileWhen(dataDir, a, nil)
}

// WriteFileWhen is WriteFile with a last check: once the temporary file is
// durable, it waits for permit (when not nil) and renames only if permit
// delivers nil; otherwise the temporary file is removed and that error
// returned. The controller re-verifies its Lease meanwhile, so the
// apiserver round trip overlaps the fsync instead of adding to it.
func WriteFileWhen(dataDir string, a *Assignment, permit <-chan error) error {
	_, err := WriteFileStaged(dataDir, a, permit, nil)
	return err
}

// WriteTiming is where a write's time went.
type WriteTiming struct {
	Visible time.Duration // until the rename: readers see the new file from here
	Create  time.Duration // the temporary file's creation
	TmpSync time.Duration // the temporary file's fsync
	Permit  time.Duration // waiting for the permit once the temporary file was durable
	Rename  time.Duration // the rename
	DirSync time.Duration // the directory's fsync after the rename
}

// WriteFileStaged is WriteFileWhen that calls visible (when not nil) as soon
// as the rename is done, before the directory's fsync: from then on every
// reader (fsnotify, a poll) sees the new file, so the controller may start
// its next write while this one's rename is made durable. A directory fsync
// under a busy journal can take longer than the rest of the write. The
// error is the write's, whether or not visible was called: a failure after
// it means the new file is in place but its rename may not survive a crash.
func WriteFileStaged(dataDir string, a *Assignment, permit <-chan error, visible func()) (WriteTiming, error) {
	var tm WriteTiming
	start := time.Now()
	data, err := Encode(a)
	if err != nil {
		return tm, err
	}
	dir := filepath.Join(dataDir, ClusterDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tm, fmt.Errorf("write assignment: %w", err)
	}
	step := time.Now()
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	tm.Create = time.Since(step)
	if err != nil {
		return tm, fmt.Errorf("write assignment: %w", err)
	}
	tmpName := tmp.Name()
	fail := func(step string, err error) (WriteTiming, error) {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return tm, fmt.Errorf("write assignment %s: %s: %w", tmpName, step, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail("write", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail("chmod", err)
	}
	step = time.Now()
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	tm.TmpSync = time.Since(step)
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmpName)
		return tm, fmt.Errorf("write assignment %s: close: %w", tmpName, err)
	}
	if permit != nil {
		step = time.Now()
		err := <-permit
		tm.Permit = time.Since(step)
		if err != nil {
			_ = os.Remove(tmpName)
			return tm, err
		}
	}
	final := filepath.Join(dir, FileName)
	step = time.Now()
	err = os.Rename(tmpName, final)
	tm.Rename = time.Since(step)
	if err != nil {
		_ = os.Remove(tmpName)
		return tm, fmt.Errorf("write assignment: rename %s to %s: %w", tmpName, final, err)
	}
	tm.Visible = time.Since(start)
	if visible != nil {
		visible()
	}
	step = time.Now()
	err = syncDir(dir)
	tm.DirSync = time.Since(step)
	if err != nil {
		return tm, fmt.Errorf("write assignment %s: fsync directory: %w", final, err)
	}
	return tm, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return err
	}
	return d.Close()
}

// ReadFile reads and decodes (strictly, with validation) the file at path.
func ReadFile(path string) (*Assignment, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read assignment: %w", err)
	}
	a, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("read assignment %s: %w", path, err)
	}
	return a, nil
}
