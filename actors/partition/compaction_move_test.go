package partition

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/disklog"
)

// passOutcome is what one cleaning pass of a reportingLog returned.
type passOutcome struct {
	res storage.CompactResult
	err error
}

// reportingOpener opens disk logs that report each cleaning pass; when
// hold is raised, the pass that returns next waits for ack after
// reporting on held (the test then looks at the files before anything
// else can clean).
type reportingOpener struct {
	*disklog.Opener
	passes chan passOutcome
	hold   *atomic.Bool
	held   chan passOutcome
	ack    chan struct{}
}

func (o reportingOpener) Open(id storage.PartitionID, cfg storage.LogConfig) (storage.Log, error) {
	l, err := o.Opener.Open(id, cfg)
	if err != nil {
		return nil, err
	}
	return &reportingLog{Log: l.(*disklog.Log), o: o}, nil
}

type reportingLog struct {
	*disklog.Log
	o reportingOpener
}

func (l *reportingLog) Compact(req storage.CompactRequest) (storage.CompactResult, error) {
	res, err := l.Log.Compact(req)
	if l.o.hold != nil && l.o.hold.CompareAndSwap(true, false) {
		l.o.held <- passOutcome{res, err}
		<-l.o.ack
	}
	select {
	case l.o.passes <- passOutcome{res, err}:
	default:
	}
	return res, err
}

// keyedProduce appends one batch of key/value records (acks=all: durable
// once answered) and fails the test unless it is accepted.
func keyedProduce(t *testing.T, ref actorsys.Ref, ts int64, kvs ...[2]string) {
	t.Helper()
	s := batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: ts}
	for _, kv := range kvs {
		s.Keys = append(s.Keys, []byte(kv[0]))
		s.Values = append(s.Values, []byte(kv[1]))
	}
	out := make(chan messages.ProduceResult, 1)
	ref.Send(&messages.Produce{Batch: batch.Build(s), Acks: -1, Reply: func(r messages.ProduceResult) { out <- r }})
	if r := within(t, out, 10*time.Second, "produce"); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
}

// fetchTable reads the partition from offset 0 to its high watermark
// through ref at epoch and folds it into a key table; it checks offsets
// only go up and returns how many records it read.
func fetchTable(t *testing.T, ref actorsys.Ref, epoch int32) (map[string]string, int) {
	t.Helper()
	table := map[string]string{}
	n, off, last := 0, int64(0), int64(-1)
	for {
		ch := make(chan messages.FetchResult, 1)
		ref.Send(&messages.Fetch{Offset: off, MaxBytes: 1 << 20, CurrentLeaderEpoch: epoch, LastFetchedEpoch: -1,
			Reply: func(r messages.FetchResult) { ch <- r }})
		f := within(t, ch, 10*time.Second, "fetch")
		if f.ErrorCode != 0 {
			t.Fatalf("fetch at %d: %+v", off, f)
		}
		if off >= f.HighWatermark {
			return table, n
		}
		b, err := f.Records.AppendTo(nil)
		f.Records.Close()
		if err != nil {
			t.Fatal(err)
		}
		bs, _, err := batch.Split(b)
		if err != nil || len(bs) == 0 {
			t.Fatalf("fetch at %d: %d batches, %v", off, len(bs), err)
		}
		for _, bb := range bs {
			h, err := batch.Validate(bb)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := compaction.Records(bb, h)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				if r.Offset <= last {
					t.Fatalf("offset %d after %d", r.Offset, last)
				}
				last = r.Offset
				n++
				if r.Tombstone {
					delete(table, string(r.Key))
				} else {
					table[string(r.Key)] = string(r.Value)
				}
			}
			off = h.NextOffset()
		}
	}
}

// fileID is what identifies a file's content for the test: its inode,
// size and modification time.
type fileID struct {
	ino   uint64
	size  int64
	mtime int64
}

// segmentFiles lists the segment files under root with their identity.
func segmentFiles(t *testing.T, root string) map[string]fileID {
	t.Helper()
	out := map[string]fileID{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if strings.HasSuffix(p, ".log") || strings.Contains(p, ".cleaned") {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			st := fi.Sys().(*syscall.Stat_t)
			out[p] = fileID{st.Ino, fi.Size(), fi.ModTime().UnixNano()}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCleaningDuringLeadershipMove: two brokers (two partition actors on
// two disk openers over one volume). The first leader's cleaner is held
// mid-pass (in its I/O throttle) when the second takes the partition at a
// higher epoch, as when the first is cut off and has not been told, and
// produces more; released, the first leader's pass swaps nothing (fenced:
// ErrSuperseded, every segment file as it was). The successor then cleans
// the log itself and reads every key's latest value, in fewer records than
// were produced.
func TestCleaningDuringLeadershipMove(t *testing.T) {
	root := t.TempDir()
	newOpener := func() *disklog.Opener {
		o, err := disklog.NewOpener(root, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Close() })
		return o
	}
	hold := &atomic.Bool{}
	oa := reportingOpener{Opener: newOpener(), passes: make(chan passOutcome, 100), hold: hold,
		held: make(chan passOutcome), ack: make(chan struct{})}
	ob := reportingOpener{Opener: newOpener(), passes: make(chan passOutcome, 100)}

	// The first leader's throttle: its first sleep (the pass's second read)
	// holds the pass until released.
	entered, release := make(chan struct{}), make(chan struct{})
	var slept atomic.Bool
	fixed := time.Now()
	th := compaction.NewThrottle(1, func() time.Time { return fixed }, func(time.Duration) {
		if slept.CompareAndSwap(false, true) {
			hold.Store(true)
			close(entered)
			<-release
		}
	})
	topicCfg := map[string]string{"cleanup.policy": "compact", "segment.bytes": "1024",
		"min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0"}
	id := storage.PartitionID{Topic: "t", TopicID: "00000000-0000-4000-8000-00000000000c", Partition: 0}
	spawnBroker := func(name string, o storage.Opener, th *compaction.Throttle, epoch int32) (actorsys.Ref, *actorsys.System) {
		sys := actorsys.NewSystem()
		t.Cleanup(sys.Shutdown)
		ref, err := sys.Spawn(name, New(id, Config{Opener: o, Log: zerolog.Nop(),
			Cleaner: CleanerConfig{Interval: func() time.Duration { return 20 * time.Millisecond }, Throttle: th}}))
		if err != nil {
			t.Fatal(err)
		}
		ref.Send(&messages.TakeLeadership{TopicID: id.TopicID, LeaderEpoch: epoch, Config: topicCfg})
		return ref, sys
	}

	a, _ := spawnBroker("a", oa, th, 1)
	want := map[string]string{}
	produced := 0
	now := time.Now().UnixMilli()
	for i := 0; i < 120; i++ {
		k, v := fmt.Sprintf("k%02d", i%10), fmt.Sprintf("a-%03d", i)
		keyedProduce(t, a, now, [2]string{k, v})
		want[k] = v
		produced++
	}
	within(t, entered, 30*time.Second, "the first leader's pass reaching its throttle")

	b, _ := spawnBroker("b", ob, nil, 2)
	for i := 0; i < 40; i++ {
		k, v := fmt.Sprintf("k%02d", i%13), fmt.Sprintf("b-%03d", i)
		keyedProduce(t, b, now, [2]string{k, v})
		want[k] = v
		produced++
	}
	before := segmentFiles(t, root)
	close(release)
	first := within(t, oa.held, 30*time.Second, "the first leader's pass")
	if !errors.Is(first.err, disklog.ErrSuperseded) {
		t.Fatalf("deposed leader's pass: %+v %v, want ErrSuperseded", first.res, first.err)
	}
	if after := segmentFiles(t, root); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("the deposed leader changed the files:\nbefore %v\nafter  %v", before, after)
	}
	close(oa.ack)
	// Told of the move, the first broker gives the partition up.
	done := make(chan error, 1)
	a.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
	if err := within(t, done, 10*time.Second, "relinquish"); err != nil {
		t.Fatal(err)
	}

	if got, _ := fetchTable(t, b, 2); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("successor reads %v, want %v", got, want)
	}
	deadline := time.After(60 * time.Second)
	for cleaned := false; !cleaned; {
		select {
		case p := <-ob.passes:
			if p.err != nil {
				t.Fatalf("successor's pass: %v", p.err)
			}
			cleaned = p.res.Cleaned && p.res.Segments > 0
		case <-deadline:
			t.Fatal("the successor did not clean")
		}
	}
	got, n := fetchTable(t, b, 2)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("successor reads %v after cleaning, want %v", got, want)
	}
	if n >= produced {
		t.Fatalf("successor reads %d records after cleaning, %d were produced", n, produced)
	}
}
