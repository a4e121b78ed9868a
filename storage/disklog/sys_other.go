//go:build !linux

package disklog

import (
	"errors"
	"net"
	"os"
)

// syncfs is Linux only: the Opener falls back to SyncFiles.
func syncfs(*os.File) error { return errors.ErrUnsupported }

func fdatasync(f *os.File) error {
	fsyncs.Add(1)
	return f.Sync()
}

func sendfile(c *net.TCPConn, f *os.File, off, n int64) (int64, error, bool) { return 0, nil, false }
