//go:build linux

package sendfile

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// maxChunk bounds one sendfile call (Linux caps it near 2 GiB).
const maxChunk = 1 << 30

// Range copies n bytes of f from off to c with sendfile(2), waiting on the
// runtime poller when the socket buffer is full (so write deadlines apply).
// It never moves f's file position, so concurrent readers may share f.
// handled is false when nothing was attempted (fall back to a copy).
func Range(c *net.TCPConn, f *os.File, off, n int64) (written int64, err error, handled bool) {
	crc, err := c.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	frc, err := f.SyscallConn()
	if err != nil {
		return 0, nil, false
	}
	var serr error
	cerr := frc.Control(func(infd uintptr) {
		werr := crc.Write(func(outfd uintptr) bool {
			for n > 0 {
				m, e := syscall.Sendfile(int(outfd), int(infd), &off, int(min(n, maxChunk)))
				if m > 0 {
					written += int64(m)
					n -= int64(m)
				}
				switch {
				case errors.Is(e, syscall.EINTR):
					continue
				case errors.Is(e, syscall.EAGAIN):
					return false // wait until writable
				case e != nil:
					serr = e
					return true
				case m == 0:
					serr = io.ErrUnexpectedEOF // the file is shorter than the range
					return true
				}
			}
			return true
		})
		if serr == nil {
			serr = werr
		}
	})
	if cerr != nil && serr == nil {
		serr = cerr
	}
	if serr != nil {
		serr = &net.OpError{Op: "sendfile", Net: "tcp", Err: serr}
	}
	return written, serr, true
}
