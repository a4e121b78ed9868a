//go:build linux

package disklog

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
)

// Storage benchmarks. The disk's raw fdatasync'ed sequential write
// bandwidth (BenchmarkRawFdatasync) is the ceiling for durable appends:
//
//	go test ./storage/disklog -run '^$' -bench . -benchtime 64x

const mib = 1 << 20

// BenchmarkRawFdatasync writes 1 MiB chunks to a file with an fdatasync
// after every syncEvery MiB: the disk's durable sequential bandwidth at
// group-commit granularity.
func BenchmarkRawFdatasync(b *testing.B) {
	for _, every := range []int{1, 4} {
		b.Run(sizeName(every), func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			chunk := make([]byte, mib)
			for i := range chunk {
				chunk[i] = byte(i)
			}
			b.SetBytes(mib)
			b.ResetTimer()
			var off int64
			for i := 0; i < b.N; i++ {
				if _, err := f.WriteAt(chunk, off); err != nil {
					b.Fatal(err)
				}
				off += mib
				if (i+1)%every == 0 || i == b.N-1 {
					if err := fdatasync(f); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkAppendSync appends 16 KiB batches and calls Sync after every
// syncEvery MiB, as the partition actor's group commit does.
func BenchmarkAppendSync(b *testing.B) {
	for _, every := range []int{1, 4} {
		b.Run(sizeName(every), func(b *testing.B) {
			o := testOpener(b, b.TempDir())
			l := openLogT(b, o, storage.LogConfig{SegmentBytes: 256 * mib})
			defer l.Close()
			const batchSize = 16 << 10
			tmpl := mkBatch(0, 16, 1, batchSize/16-20)
			b.SetBytes(mib)
			b.ResetTimer()
			var acc int
			for i := 0; i < b.N; i++ {
				for acc < mib {
					batch.SetBaseOffset(tmpl, l.NextOffset())
					h, _ := batch.ParseHeader(tmpl)
					if err := l.Append(tmpl, h); err != nil {
						b.Fatal(err)
					}
					acc += len(tmpl)
				}
				acc -= mib
				if (i+1)%every == 0 || i == b.N-1 {
					if _, err := l.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkFetch reads a 64 MiB log in 1 MiB fetches and sends them over
// loopback TCP with sendfile, from the page cache (warm) and after the
// segment files were evicted from it (cold, posix_fadvise DONTNEED).
func BenchmarkFetch(b *testing.B) {
	o := testOpener(b, b.TempDir())
	l := openLogT(b, o, storage.LogConfig{SegmentBytes: 16 * mib})
	defer l.Close()
	bs := appendN(b, l, 64*mib/(16<<10), 16, (16<<10)/16-20, 1)
	batchLen := len(bs[0])
	if _, err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	size := l.segmentsBytes()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				if cold {
					b.StopTimer()
					l.evictPageCache()
					b.StartTimer()
				}
				for off := l.StartOffset(); off < l.NextOffset(); {
					r, err := l.Read(off, mib, l.NextOffset())
					if err != nil {
						b.Fatal(err)
					}
					if _, err := r.WriteTo(c.(*net.TCPConn)); err != nil {
						b.Fatal(err)
					}
					off += int64(r.Len()/batchLen) * 16
					r.Close()
				}
			}
		})
	}
}

// BenchmarkRecovery measures Open of a crashed 256 MiB tail (every batch
// CRC-checked), reported per GiB, with the tail in the page cache (kill -9)
// and evicted from it (power loss).
func BenchmarkRecovery(b *testing.B) {
	root := b.TempDir()
	o := testOpener(b, root)
	l := openLogT(b, o, storage.LogConfig{})
	appendN(b, l, 256*mib/(16<<10), 16, (16<<10)/16-20, 1)
	if _, err := l.Sync(); err != nil {
		b.Fatal(err)
	}
	size := l.segmentsBytes()
	dir := l.Dir()
	l.crash()
	for _, cold := range []bool{false, true} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(size)
			var total time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for _, p := range segFiles(b, dir, "index") {
					os.Remove(p)
				}
				if cold {
					fadviseDontNeed(filepath.Join(dir, segName(0, 0)+logSuffix))
				}
				b.StartTimer()
				start := time.Now()
				l2 := openLogT(b, o, storage.LogConfig{})
				total += time.Since(start)
				b.StopTimer()
				if l2.NextOffset() != 256*mib/(16<<10)*16 {
					b.Fatalf("recovered to %d", l2.NextOffset())
				}
				l2.crash()
				b.StartTimer()
			}
			b.ReportMetric(total.Seconds()/float64(b.N)/(float64(size)/(1<<30)), "s/GiB")
		})
	}
}

// BenchmarkOpenSegments is the Open of a cleanly released partition (what
// a leadership move costs the next leader) by how many sealed segments it
// has. "unread" takes the segments an earlier open found clean without
// reading their index trailers; the baseline "read-all" is the same open
// with the checkpoint's sealed line removed, which reads every trailer.
//
//	go test ./storage/disklog -run '^$' -bench BenchmarkOpenSegments -benchtime 300x
func BenchmarkOpenSegments(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		dir := b.TempDir()
		o := testOpener(b, dir, SpareDelay(-1))
		cfg := storage.LogConfig{SegmentBytes: 1000}
		l := openLogT(b, o, cfg)
		for len(segFiles(b, l.Dir(), logSuffix)) <= n { // ~5 batches per segment
			appendN(b, l, 1, 1, 100, 1)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		l = openLogT(b, o, cfg)
		if err := l.AssignEpoch(1, l.NextOffset()); err != nil {
			b.Fatal(err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		eps, sealed, _, err := readEpochs(l.Dir())
		if err != nil || sealed == 0 {
			b.Fatalf("checkpoint: sealed %d, %v", sealed, err)
		}
		for _, unread := range []bool{true, false} {
			name := fmt.Sprintf("segments=%d/read-all", n)
			if unread {
				name = fmt.Sprintf("segments=%d/unread", n)
			}
			b.Run(name, func(b *testing.B) {
				keep := int64(0)
				if unread {
					keep = sealed
				}
				for range b.N {
					b.StopTimer()
					if err := writeEpochs(l.Dir(), eps, keep, 0o644); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					l := openLogT(b, o, cfg)
					b.StopTimer()
					if err := l.Release(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
	}
}

func sizeName(mibs int) string {
	if mibs == 1 {
		return "sync-every-1MiB"
	}
	return "sync-every-4MiB"
}

// segmentsBytes is the total valid size of the log's segments.
func (l *Log) segmentsBytes() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.segments {
		l.loadSealed(s)
		s.mu.RLock()
		n += s.size
		s.mu.RUnlock()
	}
	return n
}

func (l *Log) evictPageCache() {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.segments {
		fadviseDontNeed(s.path())
	}
}

func fadviseDontNeed(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	_ = fdatasync(f)
	// POSIX_FADV_DONTNEED = 4 on Linux
	_, _, _ = syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, 4, 0, 0)
}

// BenchmarkGroupCommitManyLogs is a broker leading 1,000 partitions: every
// round, each log appends one 1 KiB batch and syncs, all at once, as the
// partition actors' group commits do under load. One op is one round;
// "file" (an fdatasync per log) is the baseline for "syncfs" (one shared
// syncfs per round).
func BenchmarkGroupCommitManyLogs(b *testing.B) {
	const logs = 1000
	for _, mode := range []struct {
		name string
		sync SyncMode
	}{{"file", SyncFiles}, {"syncfs", SyncFilesystem}} {
		b.Run(mode.name, func(b *testing.B) {
			o := testOpener(b, b.TempDir(), Sync(mode.sync))
			ls := make([]*Log, logs)
			for i := range ls {
				id := testID
				id.Partition = int32(i)
				sl, err := o.Open(id, storage.LogConfig{SegmentBytes: 64 * mib})
				if err != nil {
					b.Fatal(err)
				}
				ls[i] = sl.(*Log)
				defer ls[i].Close()
			}
			tmpl := mkBatch(0, 1, 1, 1000)
			b.SetBytes(logs * int64(len(tmpl)))
			b.ResetTimer()
			for range b.N {
				var wg sync.WaitGroup
				for _, l := range ls {
					wg.Add(1)
					go func() {
						defer wg.Done()
						bt := append([]byte(nil), tmpl...)
						batch.SetBaseOffset(bt, l.NextOffset())
						h, _ := batch.ParseHeader(bt)
						if err := l.Append(bt, h); err != nil {
							b.Error(err)
							return
						}
						if _, err := l.Sync(); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
			}
		})
	}
}

// BenchmarkLeadershipMove moves 50 logs at once between two brokers'
// openers on one volume, as a drain does: per log, the old leader's
// producer snapshot and close, the new leader's claimed open, snapshot
// read, epoch stamp, first append and Sync. One op moves all 50. "idle"
// reports the CPU a move costs (nothing else runs); "loaded" moves them
// while 200 other logs append and group-commit as fast as they can, and
// reports the slowest move of an op (p99 over the run). Each log has one
// batch appended but not yet synced when its move starts, as a loaded
// leader has. "release" is the broker's handoff: Release leaves that batch
// to the new leader's first Sync, and the log's spare set is taken by
// rename (the wait for the janitor's new sets is outside the timer, but
// their CPU is in cpu-ms/move). Baselines: "close" syncs the batch before
// closing; "close-created" also creates the new segment and its indexes
// (no spares).
//
//	go test ./storage/disklog -run '^$' -bench BenchmarkLeadershipMove -benchtime 20x
func BenchmarkLeadershipMove(b *testing.B) {
	for _, v := range []struct {
		name            string
		spares, release bool
	}{{"release", true, true}, {"close", true, false}, {"close-created", false, false}} {
		b.Run("idle/"+v.name, func(b *testing.B) { benchmarkMoves(b, 0, v.spares, v.release) })
		b.Run("loaded/"+v.name, func(b *testing.B) { benchmarkMoves(b, 200, v.spares, v.release) })
	}
}

func benchmarkMoves(b *testing.B, background int, spares, release bool) {
	const moving = 50
	dir := b.TempDir()
	delay := time.Duration(-1)
	if spares {
		delay = 0
	}
	brokers := []*Opener{testOpener(b, dir, SpareDelay(delay), SpareRate(0)), testOpener(b, dir, SpareDelay(delay), SpareRate(0))}
	// waitSpares waits for every moving log's janitor to make its spare set.
	waitSpares := func(logs []*Log) {
		for _, l := range logs {
			for {
				if _, err := os.Stat(filepath.Join(l.Dir(), spareLog)); err == nil {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	tmpl := mkBatch(0, 4, 1, 250)
	appendSync := func(l *Log) error {
		bt := append([]byte(nil), tmpl...)
		batch.SetBaseOffset(bt, l.NextOffset())
		h, _ := batch.ParseHeader(bt)
		if err := l.Append(bt, h); err != nil {
			return err
		}
		_, err := l.Sync()
		return err
	}
	stop := make(chan struct{})
	var load sync.WaitGroup
	bgOpener := testOpener(b, dir)
	for i := range background {
		id := testID
		id.Topic = "background"
		id.Partition = int32(i)
		sl, err := bgOpener.Open(id, storage.LogConfig{SegmentBytes: 64 * mib})
		if err != nil {
			b.Fatal(err)
		}
		load.Add(1)
		go func() {
			defer load.Done()
			defer sl.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := appendSync(sl.(*Log)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	defer func() { close(stop); load.Wait() }()
	open := func(o *Opener, p int, epoch int32) *Log {
		id := testID
		id.Partition = int32(p)
		sl, err := o.Open(id, storage.LogConfig{SegmentBytes: 64 * mib, Claim: true, ClaimEpoch: epoch})
		if err != nil {
			b.Fatal(err)
		}
		l := sl.(*Log)
		if _, err := l.ReadSnapshot("producers"); err != nil {
			b.Fatal(err)
		}
		if err := l.AssignEpoch(epoch, l.NextOffset()); err != nil {
			b.Fatal(err)
		}
		return l
	}
	logs := make([]*Log, moving)
	for p := range logs {
		logs[p] = open(brokers[0], p, 1)
		for range 20 {
			if err := appendSync(logs[p]); err != nil {
				b.Fatal(err)
			}
		}
	}
	var worst []time.Duration
	if spares {
		waitSpares(logs)
	}
	b.ResetTimer()
	c0 := processCPU()
	for i := range b.N {
		to, epoch := brokers[(i+1)%2], int32(i+2)
		var wg sync.WaitGroup
		took := make([]time.Duration, moving)
		for p := range logs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The batch a loaded leader has appended but not yet group
				// committed when it is relinquished.
				bt := append([]byte(nil), tmpl...)
				batch.SetBaseOffset(bt, logs[p].NextOffset())
				h, _ := batch.ParseHeader(bt)
				if err := logs[p].Append(bt, h); err != nil {
					b.Error(err)
				}
				start := time.Now()
				if err := logs[p].WriteSnapshot("producers", make([]byte, 100)); err != nil {
					b.Error(err)
				}
				closeLog := logs[p].Close
				if release {
					closeLog = logs[p].Release
				}
				if err := closeLog(); err != nil {
					b.Error(err)
				}
				logs[p] = open(to, p, epoch)
				if err := appendSync(logs[p]); err != nil {
					b.Error(err)
				}
				took[p] = time.Since(start)
			}()
		}
		wg.Wait()
		worst = append(worst, slices.Max(took))
		if spares {
			b.StopTimer()
			waitSpares(logs)
			b.StartTimer()
		}
	}
	cpu := processCPU() - c0
	b.StopTimer()
	slices.Sort(worst)
	if background == 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*moving)/1000, "cpu-ms/move")
	}
	b.ReportMetric(float64(worst[len(worst)*99/100].Microseconds())/1000, "slowest-move-ms(p99)")
	for _, l := range logs {
		l.Close()
	}
}

// processCPU is the CPU time this process has used (user + system): the
// background load's share is in it too, so compare runs, not absolutes.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSuperseded is the leader-claim check every group commit of
// every partition makes before acknowledging: through the kept descriptor
// (local filesystems) against the path read NFS needs (the baseline).
//
//	go test ./storage/disklog -run '^$' -bench BenchmarkSuperseded
func BenchmarkSuperseded(b *testing.B) {
	l := openLogT(b, testOpener(b, b.TempDir()), storage.LogConfig{Claim: true, ClaimEpoch: 1})
	defer l.Close()
	b.Run("kept", func(b *testing.B) {
		for range b.N {
			if l.Superseded(1) {
				b.Fatal("superseded")
			}
		}
	})
	b.Run("path", func(b *testing.B) {
		for range b.N {
			if e, st := readClaimState(l.dir); st != numberValid || e != 1 {
				b.Fatal("claim unreadable")
			}
		}
	})
}

// BenchmarkSmallFiles is the small-file I/O a leadership move does a dozen
// times per partition (index files, checkpoint, snapshot, claim): the bare
// syscalls disklog uses against the same operation through *os.File (the
// baseline), which adds a non-blocking probe and a poller registration to
// every open.
//
//	go test ./storage/disklog -run '^$' -bench BenchmarkSmallFiles
func BenchmarkSmallFiles(b *testing.B) {
	path := filepath.Join(b.TempDir(), "f.index")
	data := make([]byte, 104)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("overwrite/raw", func(b *testing.B) {
		for b.Loop() {
			if err := overwriteRaw(path, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("overwrite/os", func(b *testing.B) {
		for b.Loop() {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.WriteAt(data, 0); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Stat(); err != nil {
				b.Fatal(err)
			}
			_ = f.Close()
		}
	})
	b.Run("read-tail/raw", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := readTailRaw(path, trailerSize); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read-tail/os", func(b *testing.B) {
		t := make([]byte, trailerSize)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			st, err := f.Stat()
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.ReadAt(t, st.Size()-trailerSize); err != nil {
				b.Fatal(err)
			}
			_ = f.Close()
		}
	})
}
