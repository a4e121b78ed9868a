//go:build linux

package disklog

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// BenchmarkProduceFloor is the per-byte work under the disk path's produce
// CPU, each part alone on 256 KiB batches of 1 KiB records: "pwrite", a raw
// pwrite of the batch into fresh pages of a file (the kernel's copy into
// the page cache, the baseline); "append", Log.Append of the same batch
// (that copy plus the log's bookkeeping; no Sync); "crc", the CRC-32C check
// every produced batch gets (batch.ValidateProduce). cpu-s/GB is the
// process's CPU (user and system) per GB. Run each in a process of its
// own, in ABBA order:
//
//	go test -c -o /tmp/disklog.test ./storage/disklog && cd storage/disklog
//	for s in pwrite append crc crc append pwrite; do
//	  /tmp/disklog.test -test.run '^$' -test.bench "ProduceFloor/$s\$" -test.benchtime 2048x
//	done
func BenchmarkProduceFloor(b *testing.B) {
	const records, payload = 256, 1024 - 10
	tmpl := mkBatch(0, records, 1, payload)
	b.Run("pwrite", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		measureCPU(b, len(tmpl), func(i int) {
			if _, err := f.WriteAt(tmpl, int64(i)*int64(len(tmpl))); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("append", func(b *testing.B) {
		o := testOpener(b, b.TempDir())
		l := openLogT(b, o, storage.LogConfig{SegmentBytes: 256 * mib})
		defer l.Close()
		measureCPU(b, len(tmpl), func(int) {
			batch.SetBaseOffset(tmpl, l.NextOffset())
			h, err := batch.ParseHeader(tmpl)
			if err != nil {
				b.Fatal(err)
			}
			if err := l.Append(tmpl, h); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("crc", func(b *testing.B) {
		measureCPU(b, len(tmpl), func(int) {
			if _, _, err := batch.ValidateProduce(tmpl, false); err != nil {
				b.Fatal(err)
			}
		})
	})
}

// measureCPU runs step b.N times and reports the process's CPU per GB of
// n bytes a step.
func measureCPU(b *testing.B, n int, step func(i int)) {
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.SetBytes(int64(n))
	start := cpu()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	b.StopTimer()
	b.ReportMetric((cpu()-start).Seconds()/(float64(b.N)*float64(n)/1e9), "cpu-s/GB")
}
