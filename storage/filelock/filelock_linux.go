//go:build linux

package filelock

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Supported tells whether Acquire takes locks here (elsewhere it only
// opens the file).
const Supported = true

// acquire takes an open-file-description lock (fcntl F_OFD_SETLK): owned by
// the descriptor, so goroutines and processes exclude each other; NFS
// forwards it to the server. A holder may remove the lock file (with what
// it guards): a lock taken on a file no longer at path is let go and taken
// again on the file there now, so two holders never hold different files.
func acquire(path string, mode os.FileMode, timeout time.Duration) (func(), bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		fd, err := open(path, mode)
		if err != nil {
			return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
		}
		unlock := func() { _ = unix.Close(fd) }
		locked, err := lock(fd, deadline)
		if !locked || err != nil {
			return unlock, false, err
		}
		if current(fd, path) {
			return unlock, true, nil
		}
		unlock()
	}
}

func open(path string, mode os.FileMode) (int, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, uint32(mode.Perm()))
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// lock waits until deadline for the lock on fd.
func lock(fd int, deadline time.Time) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EINTR) {
			return false, err
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		time.Sleep(time.Millisecond)
	}
}

// current reports whether fd is the file at path.
func current(fd int, path string) bool {
	var held, named unix.Stat_t
	if unix.Fstat(fd, &held) != nil || unix.Stat(path, &named) != nil {
		return false
	}
	return held.Dev == named.Dev && held.Ino == named.Ino
}
