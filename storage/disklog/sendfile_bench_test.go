//go:build linux

package disklog

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kaas-project/kaas/storage/sendfile"
	"github.com/kaas-project/kaas/storage/sendfile/sendfiletest"
)

// BenchmarkSendfileLoopback is the floor under the consume path's CPU: the
// disk log's sendfile of 1 MiB ranges of a page-cached file to a loopback
// TCP socket, read and discarded by another process (cat). It reports this
// process's CPU (user and system, the Go runtime's own threads included, as
// they are in a broker) per GB as cpu-s/GB; that includes the part of the
// receiver's TCP processing the kernel runs in the sender's context on
// loopback.
//
//	go test ./storage/disklog -run '^$' -bench BenchmarkSendfileLoopback -benchtime 1000x
func BenchmarkSendfileLoopback(b *testing.B) {
	const size, chunk = 64 << 20, 1 << 20
	path := filepath.Join(b.TempDir(), "segment")
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.Discard, f); err != nil { // into the page cache
		b.Fatal(err)
	}
	tc := sendfiletest.Sink(b)
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.SetBytes(chunk)
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		if _, err, _ := sendfile.Range(tc, f, off, chunk); err != nil {
			b.Fatal(err)
		}
		off = (off + chunk) % size
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := float64(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / 1e9
	b.ReportMetric(cpu/(float64(b.N)*chunk/1e9), "cpu-s/GB")
}
