//go:build linux

package filelock

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// acquire takes an open-file-description lock (fcntl F_OFD_SETLK): owned by
// the descriptor, so goroutines and processes exclude each other; NFS
// forwards it to the server.
func acquire(path string, mode os.FileMode, timeout time.Duration) (func(), bool, error) {
	var fd int
	var err error
	for {
		fd, err = unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, uint32(mode.Perm()))
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		return nil, false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	unlock := func() { _ = unix.Close(fd) }
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	deadline := time.Now().Add(timeout)
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk)
		if err == nil {
			return unlock, true, nil
		}
		if !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EINTR) {
			return unlock, false, err
		}
		if time.Now().After(deadline) {
			return unlock, false, nil
		}
		time.Sleep(time.Millisecond)
	}
}
