package conn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransientAcceptError(t *testing.T) {
	wrap := func(errno syscall.Errno) error {
		return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"out of descriptors (process)", wrap(syscall.EMFILE), true},
		{"out of descriptors (system)", wrap(syscall.ENFILE), true},
		{"connection aborted before accept", wrap(syscall.ECONNABORTED), true},
		{"no buffer space", wrap(syscall.ENOBUFS), true},
		{"timeout", timeoutErr{}, true},
		{"wrapped EMFILE", fmt.Errorf("listener: %w", wrap(syscall.EMFILE)), true},
		{"bad descriptor", wrap(syscall.EBADF), false},
		{"invalid", wrap(syscall.EINVAL), false},
		{"other", errors.New("tls: handshake setup failed"), false},
	} {
		if got := transientAcceptError(tc.err); got != tc.want {
			t.Errorf("%s: transientAcceptError(%v) = %t, want %t", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestAcceptBackoff(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for range 10 {
		d = acceptBackoff(d)
		got = append(got, d)
	}
	want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("backoffs %v, want %v ms", got, want)
		}
	}
}
