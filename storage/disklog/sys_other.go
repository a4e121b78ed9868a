//go:build !linux

package disklog

import (
	"errors"
	"net"
	"os"
	"time"
)

// readSmall reads a small file (the leader claim, the start offset).
func readSmall(path string, buf []byte) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil && len(b) > len(buf) {
		return nil, errors.New("read " + path + ": file too large")
	}
	return b, err
}

// lockFile is Linux only (open-file-description locks): elsewhere claims
// are written without it.
func lockFile(*os.File, time.Duration) (bool, error) { return false, nil }

// syncfs is Linux only: the Opener falls back to SyncFiles.
func syncfs(*os.File) error { return errors.ErrUnsupported }

func fdatasync(f *os.File) error {
	fsyncs.Add(1)
	return f.Sync()
}

func sendfile(c *net.TCPConn, f *os.File, off, n int64) (int64, error, bool) { return 0, nil, false }

// localFilesystem: elsewhere the claim is always read by path.
func localFilesystem(string) bool { return false }

type heldFile struct{}

func openHeld(string) (*heldFile, error)     { return nil, errors.ErrUnsupported }
func (*heldFile) read([]byte) ([]byte, bool) { return nil, false }
func (*heldFile) close()                     {}
