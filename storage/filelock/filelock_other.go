//go:build !linux

package filelock

import (
	"os"
	"time"
)

// Supported tells whether Acquire takes locks here (elsewhere it only
// opens the file).
const Supported = false

// acquire opens the lock file; the lock itself is Linux only
// (open-file-description locks): elsewhere callers go on without it.
func acquire(path string, mode os.FileMode, _ time.Duration) (func(), bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, false, err
	}
	return func() { _ = f.Close() }, false, nil
}
