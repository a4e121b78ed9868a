// Package filelock takes exclusive locks on lock files that processes
// sharing a volume agree on: the claim of a partition or of a group's files,
// and the files any broker may change (atomicfile.Update).
package filelock

import (
	"os"
	"time"
)

// Acquire opens (creating) the lock file at path and takes an exclusive lock
// on it, retrying until timeout. locked is false when the lock could not be
// taken in time (the caller decides whether to go on without it); unlock,
// non-nil whenever the file was opened, releases the lock and the file.
func Acquire(path string, mode os.FileMode, timeout time.Duration) (unlock func(), locked bool, err error) {
	return acquire(path, mode, timeout)
}
