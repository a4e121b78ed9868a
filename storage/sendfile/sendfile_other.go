//go:build !linux

package sendfile

import (
	"net"
	"os"
)

// Range does nothing off Linux: handled is false and the caller copies.
func Range(c *net.TCPConn, f *os.File, off, n int64) (int64, error, bool) { return 0, nil, false }
