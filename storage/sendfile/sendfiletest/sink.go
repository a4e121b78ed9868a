// Package sendfiletest gives the sendfile benchmarks of the log engines one
// receiver: a loopback TCP connection drained by another process.
package sendfiletest

import (
	"net"
	"os/exec"
	"strings"
	"testing"
)

// Sink returns the sending end of a loopback TCP connection whose other end
// a separate process (cat, under bash's /dev/tcp) reads and discards, so
// the receiver's CPU is not the caller's. Closing the connection ends the
// process; cleanup waits for it.
func Sink(tb testing.TB) *net.TCPConn {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	sink := exec.Command("bash", "-c", "exec 3<>/dev/tcp/"+strings.Replace(ln.Addr().String(), ":", "/", 1)+"; exec cat <&3 >/dev/null")
	if err := sink.Start(); err != nil {
		tb.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		_ = sink.Process.Kill()
		_ = sink.Wait()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = c.Close()
		_ = sink.Wait()
	})
	return c.(*net.TCPConn)
}
