//go:build linux

package memlog

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// newMemFile creates an anonymous in-memory file (memfd_create(2)).
func newMemFile() (*os.File, error) {
	fd, err := unix.MemfdCreate("kaas-memlog", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memlog: memfd_create: %w", err)
	}
	return os.NewFile(uintptr(fd), "kaas-memlog"), nil
}

// memFile is an arenaIO over a memfd.
type memFile struct{ *os.File }

// Release punches a hole: the pages are freed, the file keeps its size.
func (m memFile) Release(off, n int64) error {
	return unix.Fallocate(int(m.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
}
