package partition

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/memlog"
)

// slowLog is a memlog whose Sync blocks until released: an NFS stall.
type slowLog struct {
	*memlog.Log
	release  chan struct{}
	started  chan int64 // when set, told the end each Sync covers as it begins
	returned chan int64 // when set, told the end each Sync covers as it returns
	// held, when set, holds each Sync after it made its data durable (and
	// told durable) and before it returns: a disk log's Sync after its
	// fdatasync, before the caller reads the claim.
	held        chan struct{}
	madeDurable chan int64
	mu          sync.Mutex
	durable     int64
	superseded  atomic.Bool
}

func (l *slowLog) Superseded(int32) bool { return l.superseded.Load() }

func (l *slowLog) Sync() (int64, error) {
	n := l.NextOffset()
	select {
	case l.started <- n:
	default:
	}
	<-l.release
	l.mu.Lock()
	l.durable = max(l.durable, n)
	l.mu.Unlock()
	if l.held != nil {
		l.madeDurable <- n
		<-l.held
	}
	select {
	case l.returned <- n:
	default:
	}
	return n, nil
}

func (l *slowLog) Durable() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.durable
}

type slowOpener struct{ log *slowLog }

func (o slowOpener) Open(storage.PartitionID, storage.LogConfig) (storage.Log, error) {
	return o.log, nil
}
func (o slowOpener) Remove(storage.PartitionID) error { return nil }
func (o slowOpener) Persistent() bool                 { return true }

func spawn(t *testing.T, opener storage.Opener, syncTimeout time.Duration) actorsys.Ref {
	t.Helper()
	return spawnWith(t, Config{Opener: opener, SyncTimeout: syncTimeout})
}

// spawnWith spawns a partition actor with cfg and makes it leader at epoch 3.
func spawnWith(t *testing.T, cfg Config) actorsys.Ref {
	t.Helper()
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	cfg.Log = zerolog.Nop()
	ref, err := sys.Spawn(t.Name(), New(storage.PartitionID{Topic: "t", TopicID: "id", Partition: 0}, cfg))
	if err != nil {
		t.Fatal(err)
	}
	ref.Send(&messages.TakeLeadership{TopicID: "id", LeaderEpoch: 3, Config: map[string]string{}})
	return ref
}

// inline runs opens and closes on the actor's goroutine (Config.RunHandoff):
// their answers are then in the mailbox before the next barrier's.
func inline(f func()) { f() }

// barrier returns once ref has handled every message sent to it before.
func barrier(t *testing.T, ref actorsys.Ref) {
	t.Helper()
	st := make(chan messages.PartitionStatusResult, 1)
	ref.Send(&messages.PartitionStatus{Reply: func(s messages.PartitionStatusResult) { st <- s }})
	within(t, st, 5*time.Second, "barrier")
}

func fakeClock() *clock.Fake { return clock.NewFake(time.Now()) }

func produce(ref actorsys.Ref, acks int16, vals ...string) chan messages.ProduceResult {
	bs := make([][]byte, len(vals))
	for i, v := range vals {
		bs[i] = []byte(v)
	}
	out := make(chan messages.ProduceResult, 1)
	ref.Send(&messages.Produce{Batch: batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: bs}), Acks: acks,
		Reply: func(r messages.ProduceResult) { out <- r }})
	return out
}

func within[T any](t *testing.T, ch chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: no answer within %v", what, d)
		panic("unreachable")
	}
}

func TestAcksAllWaitsForSyncAndWatchdogFailsHungSync(t *testing.T) {
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{})}
	clk := fakeClock()
	ref := spawnWith(t, Config{Opener: slowOpener{sl}, SyncTimeout: 300 * time.Millisecond, Clock: clk})

	// acks=1 answers at once even while the fsync hangs.
	r := within(t, produce(ref, 1, "a"), time.Second, "acks=1")
	if r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("acks=1: %+v", r)
	}
	// acks=all waits; the watchdog fails it with a retriable error.
	all := produce(ref, -1, "b")
	barrier(t, ref)
	clk.Advance(299 * time.Millisecond)
	select {
	case r := <-all:
		t.Fatalf("acks=all answered before fsync: %+v", r)
	default:
	}
	clk.Advance(time.Millisecond)
	r = within(t, all, 2*time.Second, "watchdog")
	if r.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("hung fsync: %+v", r)
	}
	// The mailbox is still served: status answers while fsync hangs.
	st := make(chan messages.PartitionStatusResult, 1)
	ref.Send(&messages.PartitionStatus{Reply: func(s messages.PartitionStatusResult) { st <- s }})
	s := within(t, st, time.Second, "status during hung fsync")
	if !s.Leading || s.HighWatermark != 0 || s.LogEndOffset != 2 || s.LeaderEpoch != 3 {
		t.Fatalf("status: %+v", s)
	}
	// Fetch sees nothing beyond the durable high watermark.
	fr := make(chan messages.FetchResult, 1)
	ref.Send(&messages.Fetch{Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, Reply: func(r messages.FetchResult) { fr <- r }})
	if f := within(t, fr, time.Second, "fetch"); f.Records.Len() != 0 || f.HighWatermark != 0 {
		t.Fatalf("fetch beyond hw: %+v", f)
	}
	close(sl.release)
	// Once fsync returns the high watermark covers both records.
	deadline := time.Now().Add(2 * time.Second)
	for {
		ref.Send(&messages.PartitionStatus{Reply: func(s messages.PartitionStatusResult) { st <- s }})
		if s := within(t, st, time.Second, "status"); s.HighWatermark == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("high watermark did not advance after fsync")
		}
		time.Sleep(10 * time.Millisecond)
	}
	r = within(t, produce(ref, -1, "c"), time.Second, "acks=all after recovery")
	if r.ErrorCode != 0 || r.BaseOffset != 2 {
		t.Fatalf("acks=all after recovery: %+v", r)
	}
}

func TestLeaderEpochChecksAndRelinquish(t *testing.T) {
	ref := spawn(t, memlog.NewOpener(), time.Second)
	within(t, produce(ref, -1, "x", "y"), time.Second, "produce")
	fetch := func(epoch int32) messages.FetchResult {
		ch := make(chan messages.FetchResult, 1)
		ref.Send(&messages.Fetch{Offset: 0, MaxBytes: 1 << 20, CurrentLeaderEpoch: epoch, LastFetchedEpoch: -1, Reply: func(r messages.FetchResult) { ch <- r }})
		return within(t, ch, time.Second, "fetch")
	}
	if f := fetch(2); f.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("older epoch: %+v", f)
	}
	if f := fetch(4); f.ErrorCode != kerr.UnknownLeaderEpoch.Code {
		t.Fatalf("newer epoch: %+v", f)
	}
	if f := fetch(3); f.ErrorCode != 0 || f.Records.Len() == 0 || f.HighWatermark != 2 {
		t.Fatalf("current epoch: %+v", f)
	}
	done := make(chan error, 1)
	ref.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
	if err := within(t, done, time.Second, "relinquish"); err != nil {
		t.Fatal(err)
	}
	if r := within(t, produce(ref, 1, "z"), time.Second, "produce after relinquish"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce after relinquish: %+v", r)
	}
	// Taking it back at a higher epoch recovers the same log.
	ref.Send(&messages.TakeLeadership{TopicID: "id", LeaderEpoch: 4, Config: map[string]string{}})
	r := within(t, produce(ref, -1, "z"), time.Second, "produce after retake")
	if r.ErrorCode != 0 || r.BaseOffset != 2 {
		t.Fatalf("produce after retake: %+v", r)
	}
	ch := make(chan messages.OffsetForLeaderEpochResult, 1)
	ref.Send(&messages.OffsetForLeaderEpoch{CurrentLeaderEpoch: 4, LeaderEpoch: 3, Reply: func(r messages.OffsetForLeaderEpochResult) { ch <- r }})
	if e := within(t, ch, time.Second, "epoch"); e.LeaderEpoch != 3 || e.EndOffset != 2 {
		t.Fatalf("end of epoch 3: %+v", e)
	}
}

var _ actor.Actor = (*Actor)(nil)

// gatedOpener blocks Open until released and records Close of what it opened.
type gatedOpener struct {
	release chan struct{}
	closed  chan struct{}
}

type closeNotifyLog struct {
	*memlog.Log
	closed chan struct{}
}

func (l closeNotifyLog) Close() error {
	close(l.closed)
	return l.Log.Close()
}

func (o gatedOpener) Open(storage.PartitionID, storage.LogConfig) (storage.Log, error) {
	<-o.release
	return closeNotifyLog{Log: memlog.New(storage.LogConfig{}), closed: o.closed}, nil
}
func (o gatedOpener) Remove(storage.PartitionID) error { return nil }
func (o gatedOpener) Persistent() bool                 { return false }

// A relinquish that arrives while the log is still opening reports the
// release only after that open finished and its log was closed again: the
// late open must never touch the files after the next leader has them.
func TestRelinquishWhileOpeningWaitsForTheOpen(t *testing.T) {
	o := gatedOpener{release: make(chan struct{}), closed: make(chan struct{})}
	ref := spawn(t, o, time.Second)
	done := make(chan error, 1)
	ref.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
	barrier(t, ref)
	select {
	case <-done:
		t.Fatal("release reported while the open was still running")
	default:
	}
	if r := within(t, produce(ref, -1, "x"), time.Second, "produce while closing"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce while closing: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
	close(o.release)
	if err := within(t, done, time.Second, "release after the open"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-o.closed:
	default:
		t.Fatal("release reported before the opened log was closed")
	}
}

// A request that reaches a partition actor after it stopped (routed just
// before the release) is answered with a retriable error, not dropped: a
// lost reply would stall every response behind it on the connection.
func TestRequestToAStoppedActorIsAnswered(t *testing.T) {
	// Syncs return at once: an actor stopped after its open completed
	// syncs its log on the way out (a never-released slowLog hung the stop
	// whenever the open won the race with the poison).
	release := make(chan struct{})
	close(release)
	ref := spawn(t, slowOpener{log: &slowLog{Log: memlog.New(storage.LogConfig{}), release: release}}, time.Second)
	if err := ref.PoisonWait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if r := within(t, produce(ref, -1, "x"), time.Second, "produce to a stopped actor"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
	fetched := make(chan messages.FetchResult, 1)
	ref.Send(&messages.Fetch{Offset: 0, MaxBytes: 1, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, Reply: func(r messages.FetchResult) { fetched <- r }})
	if r := within(t, fetched, time.Second, "fetch from a stopped actor"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fetch error %d", r.ErrorCode)
	}
}

// failingOpener fails every Open and counts the attempts.
type failingOpener struct{ opens *atomic.Int32 }

func (o failingOpener) Open(storage.PartitionID, storage.LogConfig) (storage.Log, error) {
	o.opens.Add(1)
	return nil, errors.New("disk on fire")
}
func (o failingOpener) Remove(storage.PartitionID) error { return nil }
func (o failingOpener) Persistent() bool                 { return true }

// A failed open is retried while the broker still leads the partition,
// and never after it was relinquished (a late retry would make a second
// writer beside the next leader).
func TestFailedOpenRetriesUntilRelinquished(t *testing.T) {
	o := failingOpener{opens: &atomic.Int32{}}
	clk := fakeClock()
	ref := spawnWith(t, Config{Opener: o, Clock: clk, RunHandoff: inline})
	barrier(t, ref) // the open ran
	barrier(t, ref) // its failure was handled: the retry is armed
	clk.Advance(openRetryDelay)
	barrier(t, ref)
	if o.opens.Load() < 2 {
		t.Fatalf("open tried %d times after the retry delay, want a retry", o.opens.Load())
	}
	done := make(chan error, 1)
	ref.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
	within(t, done, time.Second, "release")
	n := o.opens.Load()
	clk.Advance(2500 * time.Millisecond)
	barrier(t, ref)
	barrier(t, ref)
	if got := o.opens.Load(); got != n {
		t.Fatalf("open retried %d more times after the release", got-n)
	}
}

// Revoked (raised by the supervisor when it applies the file that moves the
// partition away) refuses produces still queued ahead of the Relinquish.
func TestRevokedRefusesWrites(t *testing.T) {
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	revoked := &atomic.Bool{}
	ref, err := sys.Spawn(t.Name(), New(storage.PartitionID{Topic: "t", TopicID: "id", Partition: 0},
		Config{Opener: memlog.NewOpener(), Log: zerolog.Nop(), Revoked: revoked}))
	if err != nil {
		t.Fatal(err)
	}
	ref.Send(&messages.TakeLeadership{TopicID: "id", LeaderEpoch: 3, Config: map[string]string{}})
	if r := within(t, produce(ref, -1, "a"), time.Second, "produce"); r.ErrorCode != 0 {
		t.Fatalf("produce before revoke: %d", r.ErrorCode)
	}
	revoked.Store(true)
	if r := within(t, produce(ref, -1, "b"), time.Second, "produce"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce after revoke: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
}

// A leader that finds, after its Sync, that a newer leader claimed the
// partition (it stalled past dead-after) acknowledges nothing of that Sync
// and writes nothing more.
func TestSupersededLeaderDoesNotAcknowledge(t *testing.T) {
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{}), started: make(chan int64, 1)}
	ref := spawn(t, slowOpener{log: sl}, 10*time.Second)
	pending := produce(ref, -1, "a")
	within(t, sl.started, time.Second, "the Sync")
	sl.superseded.Store(true)
	close(sl.release)
	if r := within(t, pending, time.Second, "produce"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce synced after the claim: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
	if r := within(t, produce(ref, -1, "b"), time.Second, "produce"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce after the claim: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
}

// A produce appended while a Sync has made its data durable but not yet
// read the claim (which here names a newer leader) sees the log's Durable
// cover the earlier batch: it is still not acknowledged, since that leader's
// recovery may not have read it.
func TestSupersededLeaderAcknowledgesNothingBeforeTheClaimCheck(t *testing.T) {
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{}), started: make(chan int64, 1),
		held: make(chan struct{}), madeDurable: make(chan int64, 1)}
	ref := spawn(t, slowOpener{log: sl}, 10*time.Second)
	first := produce(ref, -1, "a")
	within(t, sl.started, time.Second, "the Sync")
	sl.superseded.Store(true)
	close(sl.release) // the Sync makes "a" durable, then waits on held
	within(t, sl.madeDurable, time.Second, "the Sync's fdatasync")
	second := produce(ref, -1, "b")
	barrier(t, ref)
	select {
	case r := <-first:
		t.Fatalf("first produce answered (error %d) before its Sync read the claim", r.ErrorCode)
	default:
	}
	close(sl.held)
	for i, ch := range []chan messages.ProduceResult{first, second} {
		if r := within(t, ch, time.Second, "produce"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("produce %d: error %d, want NOT_LEADER_OR_FOLLOWER", i, r.ErrorCode)
		}
	}
}

// releaseGateLog is a slowLog whose Release blocks until released: a close
// that takes long on a loaded broker.
type releaseGateLog struct {
	*slowLog
	releaseGate chan struct{}
}

func (l releaseGateLog) Release() error {
	<-l.releaseGate
	return l.slowLog.Release()
}

type releaseGateOpener struct{ log releaseGateLog }

func (o releaseGateOpener) Open(storage.PartitionID, storage.LogConfig) (storage.Log, error) {
	return o.log, nil
}
func (o releaseGateOpener) Remove(storage.PartitionID) error { return nil }
func (o releaseGateOpener) Persistent() bool                 { return true }

// A relinquished partition answers its acks=all waiters without waiting for
// its close: the group commit in flight acknowledges what it covers, and
// the batches after it (which Release leaves to the next leader's first
// Sync) get NOT_LEADER_OR_FOLLOWER at once, so their producers retry at the
// next leader while this one is still closing.
func TestRelinquishAnswersWaitersBeforeTheClose(t *testing.T) {
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{}), started: make(chan int64, 1)}
	l := releaseGateLog{slowLog: sl, releaseGate: make(chan struct{})}
	ref := spawn(t, releaseGateOpener{log: l}, 10*time.Second)
	covered := produce(ref, -1, "a") // its Sync is in flight, blocked
	within(t, sl.started, time.Second, "the Sync")
	after := produce(ref, -1, "b") // appended after that Sync began
	done := make(chan error, 1)
	ref.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
	barrier(t, ref)
	close(sl.release) // the Sync in flight completes; Release stays blocked
	if r := within(t, covered, time.Second, "batch covered by the Sync in flight"); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("batch covered by the last Sync: error %d offset %d, want acknowledged at 0", r.ErrorCode, r.BaseOffset)
	}
	if r := within(t, after, time.Second, "batch after the last Sync"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("batch after the last Sync: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
	select {
	case <-done:
		t.Fatal("release reported before the log was released")
	default:
	}
	close(l.releaseGate)
	if err := within(t, done, time.Second, "release"); err != nil {
		t.Fatal(err)
	}
}

// A leader that opens a log whose tail the previous leader released
// unsynced (Durable below NextOffset) syncs it at once: a producer's retry
// of a batch in that tail is a duplicate, appends nothing, and must still
// be acknowledged.
func TestOpenSyncsAnInheritedTail(t *testing.T) {
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{})}
	close(sl.release)
	spec := batch.Spec{ProducerID: 9, ProducerEpoch: 0, BaseSequence: 0, Values: [][]byte{[]byte("x"), []byte("y")}}
	b := batch.Build(spec)
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := sl.Append(b, h); err != nil {
		t.Fatal(err)
	}
	if sl.Durable() != 0 || sl.NextOffset() != 2 {
		t.Fatalf("fixture: durable %d next %d, want 0 and 2", sl.Durable(), sl.NextOffset())
	}
	ref := spawn(t, slowOpener{log: sl}, 10*time.Second)
	out := make(chan messages.ProduceResult, 1)
	ref.Send(&messages.Produce{Batch: batch.Build(spec), Acks: -1, Reply: func(r messages.ProduceResult) { out <- r }})
	if r := within(t, out, 2*time.Second, "retry of an inherited batch"); r.ErrorCode != 0 || r.BaseOffset != 0 {
		t.Fatalf("retry of an inherited batch: error %d offset %d, want acknowledged at 0", r.ErrorCode, r.BaseOffset)
	}
	if sl.NextOffset() != 2 {
		t.Fatalf("the retry was appended again: log end %d", sl.NextOffset())
	}
}

// A producer snapshot that outlived the tail it describes (a crash after a
// handoff lost the tail, then the log grew past the snapshot's offset with
// other batches) is not trusted: the state is rebuilt from the log.
func TestStaleProducerSnapshotIsRebuilt(t *testing.T) {
	mk := func(pid int64, seq int32, base int64) ([]byte, batch.Header) {
		b := batch.Build(batch.Spec{BaseOffset: base, ProducerID: pid, BaseSequence: seq, Values: [][]byte{[]byte("1"), []byte("2")}})
		h, err := batch.ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		return b, h
	}
	a, ha := mk(9, 0, 0)
	_, hb := mk(9, 2, 2) // appended, then lost with the tail
	c, hc := mk(7, 0, 2) // another producer's batch, at the same offsets
	_, h5 := mk(5, 0, 0) // known only from the snapshot (its batch left the log)
	old := NewProducers()
	old.Record(h5)
	old.Record(ha)
	old.Record(hb)
	snap, err := old.Snapshot(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tail  [][]byte
		stale bool
	}{{"tail kept", nil, false}, {"tail lost and replaced", [][]byte{c}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			l := memlog.New(storage.LogConfig{})
			bs := [][]byte{a}
			if tc.stale {
				bs = append(bs, tc.tail...)
			} else {
				b, _ := mk(9, 2, 2)
				bs = append(bs, b)
			}
			for _, b := range bs {
				h, _ := batch.ParseHeader(b)
				if err := l.Append(b, h); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.WriteSnapshot("producers", snap); err != nil {
				t.Fatal(err)
			}
			p, _, _, err := recoverProducers(l, true)
			if err != nil {
				t.Fatal(err)
			}
			dupB := p.Check(hb).Duplicate != nil
			dupC := p.Check(hc).Duplicate != nil
			if tc.stale && (dupB || !dupC) {
				t.Fatalf("stale snapshot trusted: lost batch duplicate=%v, batch in the log duplicate=%v", dupB, dupC)
			}
			if !tc.stale && (!dupB || p.Check(h5).Duplicate == nil) {
				t.Fatal("a snapshot that fits the log was not used")
			}
		})
	}
}

// An actor relinquished while its group commit was in flight, then given
// the partition again (within its retirement delay), group-commits again:
// the old Sync's answer belongs to a generation that is gone.
type freshSlowOpener struct {
	release           chan struct{}
	started, returned chan int64
}

func (o freshSlowOpener) Open(storage.PartitionID, storage.LogConfig) (storage.Log, error) {
	return &slowLog{Log: memlog.New(storage.LogConfig{}), release: o.release, started: o.started, returned: o.returned}, nil
}
func (o freshSlowOpener) Remove(storage.PartitionID) error { return nil }
func (o freshSlowOpener) Persistent() bool                 { return true }

func TestRetakeAfterRelinquishDuringSync(t *testing.T) {
	sl := freshSlowOpener{release: make(chan struct{}), started: make(chan int64, 1), returned: make(chan int64, 1)}
	ref := spawn(t, sl, 10*time.Second)
	first := produce(ref, -1, "a") // its Sync blocks
	within(t, sl.started, time.Second, "the first Sync")
	done := make(chan error, 1)
	ref.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
	if err := within(t, done, time.Second, "release"); err != nil {
		t.Fatal(err)
	}
	if r := within(t, first, time.Second, "produce during the release"); r.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("produce during the release: error %d, want NOT_LEADER_OR_FOLLOWER", r.ErrorCode)
	}
	close(sl.release) // the old Sync returns now, after the release
	within(t, sl.returned, time.Second, "the old Sync's return")
	// Its answer, sent as it returns, precedes this barrier in practice: a
	// stale answer handled leaves nothing to observe.
	barrier(t, ref)
	ref.Send(&messages.TakeLeadership{TopicID: "id", LeaderEpoch: 4, Config: map[string]string{}})
	if r := within(t, produce(ref, -1, "b"), 2*time.Second, "produce after the retake"); r.ErrorCode != 0 {
		t.Fatalf("produce after the retake: error %d", r.ErrorCode)
	}
}

// TestListOffsetsWaitsForTheInheritedTail: until the first Sync covers the
// tail a new leader inherited (hidden below its high watermark), ListOffsets
// answers OFFSET_NOT_AVAILABLE rather than an end offset below records a
// previous leader acknowledged; after it, the whole log.
func TestListOffsetsWaitsForTheInheritedTail(t *testing.T) {
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{})}
	b := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("x"), []byte("y")}})
	h, err := batch.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := sl.Append(b, h); err != nil {
		t.Fatal(err)
	}
	ref := spawn(t, slowOpener{log: sl}, 10*time.Second)
	out := make(chan messages.ListOffsetsResult, 1)
	list := func(ts int64) messages.ListOffsetsResult {
		ref.Send(&messages.ListOffsets{Timestamp: ts, CurrentLeaderEpoch: -1, Reply: func(r messages.ListOffsetsResult) { out <- r }})
		return within(t, out, 2*time.Second, "list offsets")
	}
	for _, ts := range []int64{-1, -2} {
		if r := list(ts); r.ErrorCode != kerr.OffsetNotAvailable.Code {
			t.Fatalf("timestamp %d before the first sync: error %d offset %d, want OFFSET_NOT_AVAILABLE", ts, r.ErrorCode, r.Offset)
		}
	}
	close(sl.release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := list(-1)
		if r.ErrorCode == 0 {
			if r.Offset != 2 {
				t.Fatalf("latest after the sync: %d, want 2", r.Offset)
			}
			break
		}
		if r.ErrorCode != kerr.OffsetNotAvailable.Code || time.Now().After(deadline) {
			t.Fatalf("latest after the sync: error %d", r.ErrorCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFirstOpenCreatesTheProducerSnapshot: a persistent log opened without
// a producer snapshot gets one at once, so that a later release overwrites
// a file instead of creating one on the handoff's path; one that has a
// snapshot keeps it until the release.
func TestFirstOpenCreatesTheProducerSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing []byte
	}{{"none yet", nil}, {"kept", []byte("not rewritten at open")}} {
		t.Run(tc.name, func(t *testing.T) {
			sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{})}
			close(sl.release)
			if tc.existing != nil {
				if err := sl.WriteSnapshot("producers", tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			ref := spawn(t, slowOpener{log: sl}, 10*time.Second)
			if r := within(t, produce(ref, 1, "a"), 2*time.Second, "produce"); r.ErrorCode != 0 {
				t.Fatalf("produce: error %d", r.ErrorCode)
			}
			snap, err := sl.ReadSnapshot("producers")
			if err != nil || snap == nil {
				t.Fatalf("no producer snapshot after the open: %v", err)
			}
			if tc.existing != nil && !bytes.Equal(snap, tc.existing) {
				t.Fatalf("the open rewrote the existing snapshot: %q", snap)
			}
			if tc.existing == nil {
				if _, off, err := LoadSnapshot(snap); err != nil || off != 0 {
					t.Fatalf("snapshot written at open: offset %d, %v; want the log end at the open, 0", off, err)
				}
			}
		})
	}
}

// A group commit that returns in time stops its watchdog: under load every
// partition commits several times a second, and a timer left to fire for
// each would wake a goroutine and the actor for nothing.
func TestReturnedSyncStopsItsWatchdog(t *testing.T) {
	const timeout = 100 * time.Millisecond
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{})}
	close(sl.release) // every fsync returns at once
	clk := fakeClock()
	ref := spawnWith(t, Config{Opener: slowOpener{sl}, SyncTimeout: timeout, Clock: clk})
	before := watchdogsFired.Load()
	for i := range 20 {
		if r := within(t, produce(ref, -1, fmt.Sprint(i)), time.Second, "acks=all"); r.ErrorCode != 0 {
			t.Fatalf("produce %d: %+v", i, r)
		}
	}
	clk.Advance(3 * timeout)
	if n := watchdogsFired.Load() - before; n != 0 {
		t.Fatalf("%d watchdogs went off after 20 group commits that all returned", n)
	}
}

// seqOpener opens its logs in turn, one per Take.
type seqOpener struct {
	logs []*slowLog
	next *atomic.Int32
}

func (o seqOpener) Open(storage.PartitionID, storage.LogConfig) (storage.Log, error) {
	return o.logs[o.next.Add(1)-1], nil
}
func (o seqOpener) Remove(storage.PartitionID) error { return nil }
func (o seqOpener) Persistent() bool                 { return true }

// The late answer of a closed log's group commit does not stop the
// watchdog of the commit in flight on the log taken after it: a hung fsync
// there still fails its waiters.
func TestStaleSyncAnswerKeepsTheWatchdog(t *testing.T) {
	old := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{}), started: make(chan int64, 1)}
	hung := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{}), started: make(chan int64, 1)}
	t.Cleanup(func() { close(hung.release) })
	ref := spawn(t, seqOpener{logs: []*slowLog{old, hung}, next: &atomic.Int32{}}, 300*time.Millisecond)
	first := produce(ref, -1, "a") // its Sync blocks until old is released
	within(t, old.started, time.Second, "the first Sync")
	done := make(chan error, 1)
	ref.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
	if err := within(t, done, time.Second, "release"); err != nil {
		t.Fatal(err)
	}
	within(t, first, time.Second, "produce during the release")
	ref.Send(&messages.TakeLeadership{TopicID: "id", LeaderEpoch: 4, Config: map[string]string{}})
	second := produce(ref, -1, "b") // its Sync, on the new log, hangs
	within(t, hung.started, time.Second, "the new log's Sync")
	close(old.release) // the closed log's Sync answers now
	if r := within(t, second, 2*time.Second, "watchdog of the hung commit"); r.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("hung fsync after a retake: error %d, want REQUEST_TIMED_OUT", r.ErrorCode)
	}
}

// A Take's Opened is called once its open has finished, not before, and
// once only: also when the open fails (it is retried, silently), and when
// the partition was relinquished while it opened.
func TestTakeReportsItsOpen(t *testing.T) {
	open := func(t *testing.T, cfg Config) (actorsys.Ref, chan error) {
		sys := actorsys.NewSystem()
		t.Cleanup(sys.Shutdown)
		cfg.Log = zerolog.Nop()
		ref, err := sys.Spawn("p", New(storage.PartitionID{Topic: "t", Partition: 0}, cfg))
		if err != nil {
			t.Fatal(err)
		}
		opened := make(chan error, 4)
		ref.Send(&messages.TakeLeadership{TopicID: "id", LeaderEpoch: 3, Config: map[string]string{}, Opened: func(err error) { opened <- err }})
		return ref, opened
	}
	t.Run("success", func(t *testing.T) {
		o := gatedOpener{release: make(chan struct{}), closed: make(chan struct{})}
		ref, opened := open(t, Config{Opener: o})
		barrier(t, ref)
		select {
		case err := <-opened:
			t.Fatalf("reported (%v) while the open was still running", err)
		default:
		}
		close(o.release)
		if err := within(t, opened, time.Second, "the report"); err != nil {
			t.Fatalf("open reported %v", err)
		}
	})
	t.Run("failure", func(t *testing.T) {
		o := failingOpener{opens: &atomic.Int32{}}
		clk := fakeClock()
		ref, opened := open(t, Config{Opener: o, Clock: clk, RunHandoff: inline})
		if err := within(t, opened, time.Second, "the report"); err == nil {
			t.Fatal("a failed open reported success")
		}
		barrier(t, ref) // the retry is armed
		clk.Advance(openRetryDelay)
		barrier(t, ref) // the retry ran
		barrier(t, ref) // and its failure was handled
		if o.opens.Load() < 2 {
			t.Fatal("no retry after the retry delay")
		}
		select {
		case err := <-opened:
			t.Fatalf("the retry reported again (%v)", err)
		default:
		}
	})
	t.Run("relinquished while opening", func(t *testing.T) {
		o := gatedOpener{release: make(chan struct{}), closed: make(chan struct{})}
		ref, opened := open(t, Config{Opener: o})
		done := make(chan error, 1)
		ref.Send(&messages.RelinquishLeadership{Done: func(err error) { done <- err }})
		barrier(t, ref)
		close(o.release)
		within(t, opened, time.Second, "the report")
		within(t, done, time.Second, "the release")
	})
}

// TestProducerExpirationIsReadAtEachMaintenance: an idempotent producer is
// forgotten at the first maintenance after its last batch is older than
// producer.id.expiration.ms, whose value is read at each maintenance (a
// dynamic broker config), in virtual time.
func TestProducerExpirationIsReadAtEachMaintenance(t *testing.T) {
	clk := fakeClock()
	var expiration atomic.Int64
	expiration.Store(int64(time.Hour))
	ref := spawnWith(t, Config{Opener: memlog.NewOpener(), Clock: clk, RunHandoff: inline, MaintenanceInterval: time.Minute,
		ProducerExpiration: func() time.Duration { return time.Duration(expiration.Load()) }})
	out := make(chan messages.ProduceResult, 1)
	ref.Send(&messages.Produce{Batch: batch.Build(batch.Spec{ProducerID: 7, BaseSequence: 0, Timestamp: clk.Now().UnixMilli(),
		Values: [][]byte{[]byte("x")}}), Acks: 1, Reply: func(r messages.ProduceResult) { out <- r }})
	if r := within(t, out, time.Second, "produce"); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	producers := func() int {
		t.Helper()
		barrier(t, ref)
		res := make(chan messages.DescribeProducersResult, 1)
		ref.Send(&messages.DescribeProducers{Reply: func(r messages.DescribeProducersResult) { res <- r }})
		return len(within(t, res, time.Second, "describe producers").Producers)
	}
	if n := producers(); n != 1 {
		t.Fatalf("%d producers remembered after its batch, want 1", n)
	}
	for range 3 { // three maintenances, three minutes: within the hour
		clk.Advance(time.Minute)
	}
	if n := producers(); n != 1 {
		t.Fatalf("%d producers after 3 minutes under an hour's expiration, want 1", n)
	}
	expiration.Store(int64(2 * time.Minute)) // lowered at runtime
	clk.Advance(time.Minute)
	if n := producers(); n != 0 {
		t.Fatalf("%d producers after 4 minutes under 2 minutes' expiration, want 0", n)
	}
}

// TestMaintenanceSnapshotsProducersOnceDurable: at a maintenance tick after
// the log grew, the producer table is snapshotted as of the log end, as
// Kafka snapshots it at each segment roll, and written only once a group
// commit made the log durable that far (a snapshot naming a batch a crash
// lost would be set aside); a tick with nothing appended since writes
// nothing. In virtual time.
func TestMaintenanceSnapshotsProducersOnceDurable(t *testing.T) {
	sl := &slowLog{Log: memlog.New(storage.LogConfig{}), release: make(chan struct{})}
	clk := fakeClock()
	ref := spawnWith(t, Config{Opener: slowOpener{sl}, Clock: clk, RunHandoff: inline, MaintenanceInterval: time.Minute,
		SyncTimeout: time.Hour})
	snapshotAt := func() int64 {
		t.Helper()
		barrier(t, ref)
		b, err := sl.ReadSnapshot("producers")
		if err != nil {
			t.Fatal(err)
		}
		_, off, err := LoadSnapshot(b)
		if err != nil {
			t.Fatalf("snapshot %q: %v", b, err)
		}
		return off
	}
	out := make(chan messages.ProduceResult, 1)
	ref.Send(&messages.Produce{Batch: batch.Build(batch.Spec{ProducerID: 7, BaseSequence: 0, Timestamp: clk.Now().UnixMilli(),
		Values: [][]byte{[]byte("x"), []byte("y")}}), Acks: 1, Reply: func(r messages.ProduceResult) { out <- r }})
	if r := within(t, out, time.Second, "produce"); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	clk.Advance(time.Minute) // the group commit is held: the log is not durable past 0
	if off := snapshotAt(); off != 0 {
		t.Fatalf("snapshot at %d before the log is durable, want the one of the open, at 0", off)
	}
	close(sl.release)
	deadline := time.Now().Add(5 * time.Second)
	for snapshotAt() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("snapshot at %d after the group commit, want 2", snapshotAt())
		}
		time.Sleep(time.Millisecond)
	}
	b, _ := sl.ReadSnapshot("producers")
	if p, _, err := LoadSnapshot(b); err != nil || len(p.Entries()) != 1 || p.Entries()[0].ID != 7 {
		t.Fatalf("snapshot's producers: %v", err)
	}
	if err := sl.WriteSnapshot("producers", []byte("left alone")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // nothing appended since
	barrier(t, ref)
	if b, _ := sl.ReadSnapshot("producers"); string(b) != "left alone" {
		t.Fatalf("a tick with nothing appended rewrote the snapshot: %q", b)
	}
}
