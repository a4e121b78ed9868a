//go:build linux

package memlog

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/storage/sendfile"
)

// BenchmarkSendfileLoopback is the kernel's floor under an in-memory
// consume against the disk path's: the same sendfile(2) of 1 MiB ranges to
// a loopback TCP socket read by another process (cat), from a page-cached
// file in the test's temporary directory ("file", the disk path's source,
// the baseline) and from the arena's in-memory file ("memfd"). Only the
// source differs, so the ratio is the kernel's cost of reading shared
// memory pages into a socket against page-cache pages. cpu-s/GB is this
// process's CPU (user and system, the Go runtime's threads included) per
// GB sent. Run each in a process of its own, in ABBA order:
//
//	go test -c -o /tmp/memlog.test ./storage/memlog && cd storage/memlog
//	for s in file memfd memfd file; do
//	  /tmp/memlog.test -test.run '^$' -test.bench "SendfileLoopback/$s\$" -test.benchtime 1000x
//	done
func BenchmarkSendfileLoopback(b *testing.B) {
	const size, chunk = 64 << 20, 1 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.Run("file", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "segment"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(data, 0); err != nil { // into the page cache
			b.Fatal(err)
		}
		sendLoopback(b, f, size, chunk)
	})
	b.Run("memfd", func(b *testing.B) {
		ar := newArena()
		if ar == nil {
			b.Skip("no in-memory file on this platform")
		}
		defer ar.f.Close()
		if _, err := ar.io.WriteAt(data, 0); err != nil {
			b.Fatal(err)
		}
		sendLoopback(b, ar.f, size, chunk)
	})
}

// sendLoopback sends b.N ranges of chunk bytes of f's first size bytes to
// a loopback socket that a cat process drains, and reports the process's
// CPU per GB.
func sendLoopback(b *testing.B, f *os.File, size, chunk int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	sink := exec.Command("bash", "-c", "exec 3<>/dev/tcp/"+strings.Replace(ln.Addr().String(), ":", "/", 1)+"; exec cat <&3 >/dev/null")
	if err := sink.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sink.Wait() }()
	c, err := ln.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tc := c.(*net.TCPConn)
	b.SetBytes(chunk)
	start := processCPU(b)
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		if _, err, _ := sendfile.Range(tc, f, off, chunk); err != nil {
			b.Fatal(err)
		}
		off = (off + chunk) % size
	}
	b.StopTimer()
	cpu := processCPU(b) - start
	b.ReportMetric(cpu.Seconds()/(float64(b.N)*float64(chunk)/1e9), "cpu-s/GB")
	_ = c.Close() // the sink ends at end of stream
}
