package memlog

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// processCPU is the process's user+system CPU time.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAppendFresh stores b.N batches of 16 KiB into memory never used
// before and keeps them all, as a log growing toward its retention does:
// "heap-copy" (the baseline) copies each into its own heap allocation,
// "arena" appends through a Log of a fresh Opener. cpu-s/GB is the
// process's CPU per GB stored, which on a virtualized machine is mostly the
// cost of fresh pages.
//
//	go test ./storage/memlog -run '^$' -bench AppendFresh -benchtime 65536x
func BenchmarkAppendFresh(b *testing.B) {
	value := make([]byte, 16<<10-100)
	one := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: 1, Values: [][]byte{value}})
	report := func(b *testing.B, start time.Duration) {
		cpu := processCPU(b) - start
		b.ReportMetric(cpu.Seconds()/(float64(b.N)*float64(len(one))/1e9), "cpu-s/GB")
	}
	b.Run("heap-copy", func(b *testing.B) {
		kept := make([][]byte, 0, b.N)
		b.SetBytes(int64(len(one)))
		start := processCPU(b)
		for i := 0; i < b.N; i++ {
			kept = append(kept, append([]byte(nil), one...))
		}
		report(b, start)
		runtime.KeepAlive(kept)
	})
	b.Run("arena", func(b *testing.B) {
		o := NewOpener()
		l, err := o.Open(storage.PartitionID{Topic: "bench"}, storage.LogConfig{})
		if err != nil {
			b.Fatal(err)
		}
		defer o.Remove(storage.PartitionID{Topic: "bench"})
		h, err := batch.Validate(one)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(one)))
		start := processCPU(b)
		for i := 0; i < b.N; i++ {
			h.BaseOffset = int64(i)
			batch.SetBaseOffset(one, h.BaseOffset)
			if err := l.Append(one, h); err != nil {
				b.Fatal(err)
			}
		}
		report(b, start)
	})
}
