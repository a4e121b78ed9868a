//go:build linux

package memlog

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/kaas-project/kaas/storage/sendfile"
	"github.com/kaas-project/kaas/storage/sendfile/sendfiletest"
	"golang.org/x/sys/unix"
)

// BenchmarkSendfileLoopback is the kernel's floor under an in-memory
// consume against the disk path's: 1 MiB ranges sent to a loopback TCP
// socket read by another process (cat). Each run writes b.N/2 MiB of fresh
// pages and sends them twice, as a topic produced and then consumed twice:
//   - "file": sendfile(2) from a page-cached file in the test's temporary
//     directory (the disk path's source; the baseline);
//   - "memfd": the same sendfile from the arena's in-memory file;
//   - "memfd-mlock": from the arena's file with its pages locked in memory
//     through a mapping (unevictable pages skip the LRU activation a read
//     of shared memory otherwise makes for every 4 KiB page);
//   - "memfd-write": write(2) from a mapping of the arena's file (a copy
//     into the socket; the mapping is populated before the timing).
//
// cpu-s/GB is this process's CPU (user and system, the Go runtime's
// threads included) per GB sent. Run each in a process of its own, in ABBA
// order:
//
//	go test -c -o /tmp/memlog.test ./storage/memlog && cd storage/memlog
//	for s in file memfd memfd-write memfd-mlock memfd-mlock memfd-write memfd file; do
//	  /tmp/memlog.test -test.run '^$' -test.bench "SendfileLoopback/$s\$" -test.benchtime 1000x
//	done
func BenchmarkSendfileLoopback(b *testing.B) {
	const chunk = 1 << 20
	block := make([]byte, 4<<20)
	for i := range block {
		block[i] = byte(i * 7)
	}
	size := func(b *testing.B) int64 { return max(int64(b.N/2), 4) * chunk / int64(len(block)) * int64(len(block)) }
	fill := func(b *testing.B, w interface {
		WriteAt([]byte, int64) (int, error)
	}, n int64) {
		for off := int64(0); off < n; off += int64(len(block)) {
			if _, err := w.WriteAt(block, off); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("file", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "segment"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		n := size(b)
		fill(b, f, n) // into the page cache
		sendLoopback(b, f, n, chunk)
	})
	b.Run("memfd", func(b *testing.B) {
		ar := newArena()
		if ar == nil {
			b.Skip("no in-memory file on this platform")
		}
		defer ar.f.Close()
		n := size(b)
		fill(b, ar.io, n)
		sendLoopback(b, ar.f, n, chunk)
	})
	b.Run("memfd-write", func(b *testing.B) {
		ar := newArena()
		if ar == nil {
			b.Skip("no in-memory file on this platform")
		}
		defer ar.f.Close()
		n := size(b)
		fill(b, ar.io, n)
		m, err := unix.Mmap(int(ar.f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(m)
		sendLoopbackWith(b, n, chunk, func(tc *net.TCPConn, off int64) error {
			_, err := tc.Write(m[off : off+chunk])
			return err
		})
	})
	b.Run("memfd-mlock", func(b *testing.B) {
		ar := newArena()
		if ar == nil {
			b.Skip("no in-memory file on this platform")
		}
		defer ar.f.Close()
		n := size(b)
		if err := ar.f.Truncate(n); err != nil {
			b.Fatal(err)
		}
		m, err := unix.Mmap(int(ar.f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
		if err != nil {
			b.Fatal(err)
		}
		defer unix.Munmap(m)
		if err := unix.Mlock(m); err != nil {
			b.Skipf("mlock %d bytes (RLIMIT_MEMLOCK or CAP_IPC_LOCK): %v", n, err)
		}
		fill(b, ar.io, n)
		sendLoopback(b, ar.f, n, chunk)
	})
}

// sendLoopback sends b.N ranges of chunk bytes of f's first size bytes,
// in order and round again, with sendfile to a loopback socket that a cat
// process drains, and reports the process's CPU per GB.
func sendLoopback(b *testing.B, f *os.File, size, chunk int64) {
	sendLoopbackWith(b, size, chunk, func(tc *net.TCPConn, off int64) error {
		_, err, _ := sendfile.Range(tc, f, off, chunk)
		return err
	})
}

// sendLoopbackWith is sendLoopback with send writing the range at off.
func sendLoopbackWith(b *testing.B, size, chunk int64, send func(tc *net.TCPConn, off int64) error) {
	tc := sendfiletest.Sink(b)
	b.SetBytes(chunk)
	start := processCPU(b)
	b.ResetTimer()
	off := int64(0)
	for i := 0; i < b.N; i++ {
		if err := send(tc, off); err != nil {
			b.Fatal(err)
		}
		off = (off + chunk) % size
	}
	b.StopTimer()
	cpu := processCPU(b) - start
	b.ReportMetric(cpu.Seconds()/(float64(b.N)*float64(chunk)/1e9), "cpu-s/GB")
}
