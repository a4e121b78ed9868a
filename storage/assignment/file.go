package assignment

import (
	"fmt"
	"os"
	"path/filepath"
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
	data, err := Encode(a)
	if err != nil {
		return err
	}
	dir := filepath.Join(dataDir, ClusterDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write assignment: %w", err)
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return fmt.Errorf("write assignment: %w", err)
	}
	tmpName := tmp.Name()
	fail := func(step string, err error) error {
		_ = tmp.Close()
		_ = os.Remove(tmpName)
		return fmt.Errorf("write assignment %s: %s: %w", tmpName, step, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fail("write", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fail("chmod", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("fsync", err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("write assignment %s: close: %w", tmpName, err)
	}
	if permit != nil {
		if err := <-permit; err != nil {
			_ = os.Remove(tmpName)
			return err
		}
	}
	final := filepath.Join(dir, FileName)
	if err := os.Rename(tmpName, final); err != nil {
		_ = os.Remove(tmpName)
		return fmt.Errorf("write assignment: rename %s to %s: %w", tmpName, final, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write assignment %s: fsync directory: %w", final, err)
	}
	return nil
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
