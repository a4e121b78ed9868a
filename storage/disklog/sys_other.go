//go:build !linux

package disklog

import (
	"errors"
	"io"
	"os"
)

// readSmall reads a small file (the leader claim, the start offset).
func readSmall(path string, buf []byte) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) > len(buf) {
		return nil, errors.New("read " + path + ": file too large")
	}
	return b, err
}

// syncfs is Linux only: the Opener falls back to SyncFiles.
func syncfs(*os.File) error { return errors.ErrUnsupported }

func fdatasync(f *os.File) error {
	fsyncs.Add(1)
	return f.Sync()
}

// localFilesystem: elsewhere the claim is always read by path.
func localFilesystem(string) bool { return false }

type keptFile struct{}

func openKept(string) (*keptFile, error)     { return nil, errors.ErrUnsupported }
func (*keptFile) read([]byte) ([]byte, bool) { return nil, false }
func (*keptFile) close()                     {}

func readFileRaw(path string) ([]byte, error) { return os.ReadFile(path) }

func readTailRaw(path string, n int) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	n = int(min(int64(n), st.Size()))
	b := make([]byte, n)
	m, err := f.ReadAt(b, st.Size()-int64(n))
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return b[:m], st.Size(), err
}

func overwriteRaw(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, mode)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && fi.Size() > int64(len(data)) {
			err = f.Truncate(int64(len(data)))
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openFile is os.OpenFile (the Linux version skips the poller).
func openFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

// openFileLimit: elsewhere claims are not held open (openKept is Linux
// only), so the budget does not matter.
func openFileLimit() uint64 { return 1024 }
