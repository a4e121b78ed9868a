package assignment

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kaas-project/kaas/storage/atomicfile"
)

// ClusterDir is the directory under the data dir that holds cluster metadata.
const ClusterDir = "__cluster"

// FileName is the assignment file's name inside ClusterDir.
const FileName = "assignment.json"

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
type WriteTiming = atomicfile.Timing

// WriteFileStaged is WriteFileWhen that calls visible (when not nil) as soon
// as the rename is done, before the directory's fsync: from then on every
// reader (fsnotify, a poll) sees the new file, so the controller may start
// its next write while this one's rename is made durable. A directory fsync
// under a busy journal can take longer than the rest of the write. The
// error is the write's, whether or not visible was called: a failure after
// it means the new file is in place but its rename may not survive a crash.
// Temporary files are named "."+FileName+".tmp-<random>" (overlapping
// writes never share one); followers only look at FileName.
func WriteFileStaged(dataDir string, a *Assignment, permit <-chan error, visible func()) (WriteTiming, error) {
	data, err := Encode(a)
	if err != nil {
		return WriteTiming{}, err
	}
	dir := filepath.Join(dataDir, ClusterDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return WriteTiming{}, fmt.Errorf("write assignment: %w", err)
	}
	return atomicfile.WriteWith(dir, FileName, data, atomicfile.Options{
		Mode: 0o644, UniqueTmp: true, Permit: permit, Renamed: visible,
	})
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
