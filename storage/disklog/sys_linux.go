//go:build linux

package disklog

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// readSmall reads a file of at most len(buf) bytes into buf with bare
// syscalls: the leader claim is read after every group commit of every
// partition, and an *os.File (poller registration, cleanup, fstat for the
// size) costs more than the read itself. A larger file is an error.
func readSmall(path string, buf []byte) ([]byte, error) {
	fd, err := openRaw(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	n, err := preadFull(fd, buf, 0, path)
	if err != nil {
		return nil, err
	}
	if n == len(buf) {
		return nil, fmt.Errorf("read %s: larger than %d bytes", path, len(buf)-1)
	}
	return buf[:n], nil
}

// syncfs flushes every dirty page and the journal of f's filesystem, and
// reports writeback errors on it since the last syncfs through f.
func syncfs(f *os.File) error { return onFD(f, unix.Syncfs) }

// fdatasync flushes a file's data (and the metadata needed to read it).
func fdatasync(f *os.File) error {
	fsyncs.Add(1)
	return onFD(f, syscall.Fdatasync)
}

// onFD runs call on f's descriptor, again while it is interrupted (EINTR).
func onFD(f *os.File, call func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = call(int(fd))
			if !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}

// localFilesystem reports whether dir is on a filesystem whose readers all
// share one page cache (ext4, XFS, btrfs, tmpfs): there a descriptor kept
// open sees every later write at once. Anything else (NFS above all, where
// only an open revalidates a client's cache) is not.
func localFilesystem(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
		return true
	}
	return false
}

// keptFile is a small file read through a descriptor kept open (one pread
// instead of open, read and close on every read). An fstat after the read
// notices a file replaced by rename (an older broker's claim write): the
// caller then reads it by path.
type keptFile struct {
	mu sync.RWMutex
	fd int // -1: closed
}

func openKept(path string) (*keptFile, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return &keptFile{fd: fd}, nil
}

// read returns the file's content (at most len(buf) bytes) and false when
// the descriptor no longer names the file (closed, or replaced).
func (h *keptFile) read(buf []byte) ([]byte, bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.fd < 0 {
		return nil, false
	}
	var n int
	var err error
	for {
		n, err = unix.Pread(h.fd, buf, 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil || n == len(buf) {
		return nil, false
	}
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil || st.Nlink == 0 {
		return nil, false
	}
	return buf[:n], true
}

func (h *keptFile) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd >= 0 {
		_ = unix.Close(h.fd)
		h.fd = -1
	}
}

// The small files of a leadership move (index files, checkpoint, snapshot,
// claim) are read and written with bare syscalls, like readSmall: an
// *os.File costs five more system calls per open on Linux (non-blocking
// probe and poller registration, then undone for a regular file) besides a
// finalizer, and a drain opens several thousand of these files at once.

func openRaw(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := unix.Open(path, flags|unix.O_CLOEXEC, mode)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return fd, nil
	}
}

// openFile is os.OpenFile without the poller: os.OpenFile tries to
// register every descriptor with the netpoller (two fcntl to set
// O_NONBLOCK, an epoll_ctl that fails for a regular file or a directory,
// two fcntl to clear it again), and a leadership move opens several
// segment and index files per partition, a thousand partitions at a time.
// os.NewFile on a blocking descriptor skips all of that.
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	fd, err := openRaw(path, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

func fstatSize(fd int, path string) (int64, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstat(fd, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, &os.PathError{Op: "fstat", Path: path, Err: err}
		}
		return st.Size, nil
	}
}

func preadFull(fd int, b []byte, off int64, path string) (int, error) {
	n := 0
	for n < len(b) {
		m, err := unix.Pread(fd, b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// readFileRaw reads a whole file: open, fstat, pread, close.
func readFileRaw(path string) ([]byte, error) {
	fd, err := openRaw(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	size, err := fstatSize(fd, path)
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	n, err := preadFull(fd, b, 0, path)
	return b[:n], err
}

// readTailRaw reads the last n bytes of a file (fewer if it is shorter)
// and returns them with the file's size.
func readTailRaw(path string, n int) ([]byte, int64, error) {
	fd, err := openRaw(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, 0, err
	}
	defer unix.Close(fd)
	size, err := fstatSize(fd, path)
	if err != nil {
		return nil, 0, err
	}
	n = int(min(int64(n), size))
	b := make([]byte, n)
	m, err := preadFull(fd, b, size-int64(n), path)
	return b[:m], size, err
}

// overwriteRaw writes data at offset 0 of path (creating it if missing)
// and cuts whatever a longer old content leaves past it.
func overwriteRaw(path string, data []byte, mode os.FileMode) error {
	fd, err := openRaw(path, unix.O_WRONLY|unix.O_CREAT, uint32(mode.Perm()))
	if err != nil {
		return err
	}
	for n := 0; n < len(data); {
		m, err := unix.Pwrite(fd, data[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			_ = unix.Close(fd)
			return &os.PathError{Op: "write", Path: path, Err: err}
		}
		n += m
	}
	size, err := fstatSize(fd, path)
	if err == nil && size > int64(len(data)) {
		if terr := unix.Ftruncate(fd, int64(len(data))); terr != nil {
			err = &os.PathError{Op: "truncate", Path: path, Err: terr}
		}
	}
	if cerr := unix.Close(fd); err == nil && cerr != nil {
		err = &os.PathError{Op: "close", Path: path, Err: cerr}
	}
	return err
}

// openFileLimit is the process's soft open-file limit (RLIMIT_NOFILE; Go
// raises it to the hard limit at start), or 1024 if it cannot be read.
func openFileLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return rl.Cur
}
