package disklog

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
)

// BenchmarkCompaction cleans a log of KAAS_COMPACTION_BENCH_MB MiB (default
// 16, so `go tool task bench` stays short) whose records (about 100 bytes each) overwrite one key in 8 of a set
// as many as a MiB holds ten thousand of (1 GiB: about a million keys),
// with an unthrottled cleaner and a 128 MiB key map. It reports the
// cleaning rate, the same bytes copied (read, written, fdatasync'ed: the
// I/O floor, measured in the same run) and the ratio of the two, and the
// process's peak RSS. `go tool task bench-compaction` runs it at 1 GiB.
func BenchmarkCompaction(b *testing.B) {
	mb, _ := strconv.Atoi(os.Getenv("KAAS_COMPACTION_BENCH_MB"))
	if mb <= 0 {
		mb = 16
	}
	keys := mb * 1000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		o := testOpener(b, dir)
		l := openLogT(b, o, storage.LogConfig{SegmentBytes: 64 << 20})
		now := time.Now()
		total := int64(0)
		val := make([]byte, 60)
		for r := 0; total < int64(mb)<<20; r++ {
			s := batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: now.UnixMilli()}
			for j := 0; j < 100; j++ {
				s.Keys = append(s.Keys, []byte(fmt.Sprintf("key-%09d", (r*100+j)*7919%keys)))
				s.Values = append(s.Values, val)
			}
			bb := batch.Build(s)
			appendBatch(b, l, bb)
			total += int64(len(bb))
		}
		// Roll so everything is sealed, and make it durable.
		if err := l.AssignEpoch(1, l.NextOffset()); err != nil {
			b.Fatal(err)
		}
		if _, err := l.Sync(); err != nil {
			b.Fatal(err)
		}
		base := copyFloor(b, dir)
		b.StartTimer()
		start := time.Now()
		res, err := l.Compact(storage.CompactRequest{Now: now, Config: compaction.Config{DeleteRetention: 1000}, MapBytes: 128 << 20})
		took := time.Since(start)
		b.StopTimer()
		if err != nil || !res.Cleaned {
			b.Fatalf("compact: %+v %v", res, err)
		}
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		rate := float64(total) / took.Seconds() / (1 << 20)
		b.ReportMetric(rate, "MiB/s")
		b.ReportMetric(float64(total)/base.Seconds()/(1<<20), "copy-MiB/s")
		b.ReportMetric(took.Seconds()/base.Seconds(), "x-copy")
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MiB")
		b.ReportMetric(float64(res.BytesWritten)/float64(total), "kept-ratio")
		_ = l.Close()
	}
}

// copyFloor copies every segment of dir's partition to a new file and
// fdatasyncs it: the I/O a pass cannot avoid, as a baseline.
func copyFloor(b *testing.B, dir string) time.Duration {
	b.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*", "*"+logSuffix))
	start := time.Now()
	for _, p := range segs {
		in, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		out, err := os.Create(p + ".copy")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			b.Fatal(err)
		}
		_ = fdatasync(out)
		_ = in.Close()
		_ = out.Close()
		_ = os.Remove(p + ".copy")
	}
	return time.Since(start)
}
