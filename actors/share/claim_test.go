package share

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// claimLeader is one broker's keeper of share-partitions over a store on
// a shared volume with claims (cluster mode), following view: its writer
// reports a refused save as the keeper's mailbox would get it.
type claimLeader struct {
	k          *keeper
	keeper     *Keeper
	view       *routing.View
	clk        *clock.Fake
	superseded chan *superseded
}

// stored is the share-partition g/t-0's snapshot on the volume.
func (l *claimLeader) stored(t *testing.T) sharestate.Snapshot {
	t.Helper()
	snap, ok, err := l.k.opts.Store.Load("g", "t", 0)
	if !ok || err != nil {
		t.Fatalf("no snapshot on the volume: %v", err)
	}
	return snap
}

func newClaimLeader(t *testing.T, dir string, at assignment.Position) *claimLeader {
	t.Helper()
	st, err := sharestate.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Claims = true
	k, v, clk := testKeeper()
	k.opts.Store = st
	v.Epoch, v.Version = at.Epoch, at.Version
	l := &claimLeader{k: k, keeper: &Keeper{opts: k.opts}, view: v, clk: clk, superseded: make(chan *superseded, 16)}
	k.writer = startWriter(st, k.opts.Log, l.report)
	t.Cleanup(k.writer.stop)
	return l
}

// report is the writer's report of a refused save, queued for the
// keeper's mailbox (drain).
func (l *claimLeader) report(key pkey, at assignment.Position, mark uint64) {
	l.superseded <- &superseded{from: l.k, key: key, at: at, mark: mark}
}

// hold gives the leader a writer that writes only when the test flushes
// it (the running one, idle from then on, stops at the test's end).
func (l *claimLeader) hold() *writer {
	l.k.writer = newWriter(l.k.opts.Store, l.k.opts.Log, l.report)
	return l.k.writer
}

// begin runs a ShareFetch's or ShareAcknowledge's session step as the
// keeper's Receive and the request's handler do: the step, the flush, then
// the wait for the writes, whose refusals the keeper handles first.
func (l *claimLeader) begin(m *begin) beginResult {
	m.group, m.view = "g", l.view
	res := l.k.begin(m)
	res.durable = l.k.flushDirty()
	res.awaitWritten("g")
	l.drain()
	return res
}

// acquire runs one read round's acquisition: reads that start a
// share-partition load its state as fetchRecords does (loadStored).
func (l *claimLeader) acquire(t *testing.T, member string, reads ...Read) (acquireResult, map[pkey]error) {
	t.Helper()
	for i, r := range reads {
		if r.Code != kerr.OffsetOutOfRange.Code {
			continue
		}
		var code int16
		reads[i].Stored, reads[i].Mark, reads[i].Claim, code = l.keeper.loadStored("g", PartResult{TP: r.TP, Topic: r.Topic}, l.view)
		if code != 0 {
			t.Fatalf("load: %v", kerr.ErrorForCode(code))
		}
	}
	res := l.k.acquire(&acquire{group: "g", member: member, maxRecords: 100, reads: reads})
	lost := l.k.flushDirty()()
	l.drain()
	return res, lost
}

func (l *claimLeader) drain() {
	for {
		select {
		case m := <-l.superseded:
			l.k.superseded(m)
		default:
			return
		}
	}
}

// TestKeeperClaim: a partition moved while its old leader (stalled past
// its fence, still believing it leads) holds its share-partition. The new
// leader, following a later assignment file, loads the share-partition
// while the old one still holds it; the old leader's next acknowledgement
// is answered NOT_LEADER_OR_FOLLOWER, nothing of it is written (the
// snapshot on the volume is the new leader's), and the old leader drops
// the share-partition and cannot load it again from its older file.
func TestKeeperClaim(t *testing.T) {
	dir := t.TempDir()
	old := newClaimLeader(t, dir, assignment.Position{Epoch: 1, Version: 5})
	tp := routing.TP{Topic: "t", Partition: 0}
	key := pkey{"g", tp}

	old.begin(&begin{op: opFetch, member: "m", epoch: 0, parts: []PartReq{{TP: t0}}})
	old.acquire(t, "m", Read{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1})
	if res, lost := old.acquire(t, "m", Read{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}); len(res.ranges[t0]) != 1 || len(lost) != 0 {
		t.Fatalf("old leader acquired %+v, lost %v", res.ranges, lost)
	}
	ack := func(first, last int64) []PartReq {
		return []PartReq{{TP: t0, Acks: []AckBatch{{First: first, Last: last, Types: []AckType{AckAccept}}}}}
	}
	if res := old.begin(&begin{op: opAck, member: "m", epoch: 1, parts: ack(0, 4)}); res.parts[0].AckCode != 0 {
		t.Fatalf("old leader's first acknowledgement: %v", kerr.ErrorForCode(res.parts[0].AckCode))
	}
	if s := old.stored(t); s.Start != 5 {
		t.Fatalf("volume's start %d after 0-4 were acknowledged, want 5", s.Start)
	}

	// The partition moves; the old leader does not know yet.
	next := newClaimLeader(t, dir, assignment.Position{Epoch: 1, Version: 7})
	next.begin(&begin{op: opFetch, member: "m2", epoch: 0, parts: []PartReq{{TP: t0}}})
	next.acquire(t, "m2", Read{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1})
	if res, _ := next.acquire(t, "m2", Read{TP: t0, Topic: "t", HighWatermark: 10, First: 5, Last: 9}); !reflect.DeepEqual(res.ranges[t0], []Range{{First: 5, Last: 9, DeliveryCount: 2}}) {
		t.Fatalf("new leader acquired %+v, want 5-9 delivered a second time", res.ranges)
	}
	start, states, counts := next.k.parts[key].Snapshot()
	want := sharestate.Snapshot{TopicID: t0.TopicID, Start: start, States: make([]uint8, len(states)), Counts: counts}
	for i, s := range states {
		want.States[i] = uint8(s)
	}

	res := old.begin(&begin{op: opAck, member: "m", epoch: 2, parts: ack(5, 9)})
	if p := res.parts[0]; p.AckCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("old leader's acknowledgement after the move answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(p.AckCode))
	}
	if got := old.stored(t); !reflect.DeepEqual(got, want) {
		t.Fatalf("volume holds %+v, want the new leader's %+v", got, want)
	}
	if _, ok := old.k.parts[key]; ok {
		t.Fatal("the old leader still holds the share-partition")
	}
	// Its next fetch loads again, from its older file: refused.
	fetch := old.begin(&begin{op: opFetch, member: "m", epoch: 3})
	if p := fetch.parts[0]; !p.Read || p.Offset != -1 {
		t.Fatalf("old leader's next fetch: %+v, want a load", p)
	}
	if _, _, claim, code := old.keeper.loadStored("g", fetch.parts[0], old.view); code != kerr.NotLeaderForPartition.Code || claim != nil {
		t.Fatalf("old leader's reload answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
	// The new leader goes on.
	if res := next.begin(&begin{op: opAck, member: "m2", epoch: 1, parts: ack(5, 9)}); res.parts[0].AckCode != 0 {
		t.Fatalf("new leader's acknowledgement: %v", kerr.ErrorForCode(res.parts[0].AckCode))
	}
	if s := old.stored(t); s.Start != 10 {
		t.Fatalf("volume's start %d after the new leader's acknowledgement, want 10", s.Start)
	}
}

// TestKeeperAlterFencesTheLeader: an AlterShareGroupOffsets, written by
// the group coordinator's broker, while the partition's leader on another
// broker holds the share-partition it loaded before. The member's session
// there outlives its membership (the leader does not check it), so the
// leader still changes the old state: an acknowledgement, or an
// acquisition once the member's locks ran out (virtual time). Its save is
// refused, the admin's snapshot stays on the volume, the request is
// answered NOT_LEADER_OR_FOLLOWER, and the leader drops the share-partition
// and loads the admin's state at its next use.
func TestKeeperAlterFencesTheLeader(t *testing.T) {
	const altered = 7
	for _, c := range []struct {
		name string
		// change makes the leader change and save the state it loaded
		// before the alter, at the member's session epoch 1, and
		// reports whether the save was refused as superseded (the
		// request's answer: NOT_LEADER_OR_FOLLOWER).
		change func(t *testing.T, l *claimLeader) (refused bool)
	}{
		{"acknowledgement", func(t *testing.T, l *claimLeader) bool {
			res := l.begin(&begin{op: opAck, member: "m", epoch: 1,
				parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: 0, Last: 4, Types: []AckType{AckAccept}}}}}})
			return res.parts[0].AckCode == kerr.NotLeaderForPartition.Code
		}},
		{"acquisition after a lock timeout", func(t *testing.T, l *claimLeader) bool {
			l.clk.Advance(11 * time.Second)
			res := l.begin(&begin{op: opFetch, member: "m", epoch: 1})
			if p := res.parts[0]; !p.Read || p.Offset != 0 {
				t.Fatalf("fetch after the locks ran out: %+v, want a read from 0", p)
			}
			_, lost := l.acquire(t, "m", Read{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9})
			return errors.Is(lost[pkey{"g", routing.TP{Topic: "t", Partition: 0}}], sharestate.ErrSuperseded)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			leader := newClaimLeader(t, dir, assignment.Position{Epoch: 1, Version: 5})
			key := pkey{"g", routing.TP{Topic: "t", Partition: 0}}

			leader.begin(&begin{op: opFetch, member: "m", epoch: 0, parts: []PartReq{{TP: t0}}})
			leader.acquire(t, "m", Read{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1})
			if res, lost := leader.acquire(t, "m", Read{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}); len(res.ranges[t0]) != 1 || len(lost) != 0 {
				t.Fatalf("leader acquired %+v, lost %v", res.ranges, lost)
			}
			if s := leader.stored(t); s.Start != 0 || len(s.States) != 10 {
				t.Fatalf("volume holds %+v, want 0-9 acquired", s)
			}

			// The group coordinator's broker alters the start; its
			// keeper is another one over the same volume.
			admin := newClaimLeader(t, dir, assignment.Position{Epoch: 1, Version: 5})
			admin.k.opts.Views = &routing.Store{}
			admin.k.opts.Views.Publish(admin.view)
			tp := routing.TP{Topic: "t", Partition: 0}
			if err := admin.k.adminSet(&adminSet{group: "g", tps: []routing.TP{tp}, snaps: []*sharestate.Snapshot{{Start: altered}}})(); err != nil {
				t.Fatal(err)
			}
			want := sharestate.Snapshot{TopicID: t0.TopicID, Start: altered, States: []uint8{}, Counts: []int16{}}
			if got := leader.stored(t); !reflect.DeepEqual(got, want) {
				t.Fatalf("volume after the alter holds %+v, want %+v", got, want)
			}

			if !c.change(t, leader) {
				t.Fatal("the leader's save of the state it loaded before the alter was not refused (NOT_LEADER_OR_FOLLOWER)")
			}
			if got := leader.stored(t); !reflect.DeepEqual(got, want) {
				t.Fatalf("volume holds %+v, want the admin's %+v", got, want)
			}
			if _, ok := leader.k.parts[key]; ok {
				t.Fatal("the leader still holds the share-partition it loaded before the alter")
			}

			// Its next use loads the admin's state, from the same
			// assignment file, and saves after it.
			fetch := leader.begin(&begin{op: opFetch, member: "m", epoch: 2})
			if p := fetch.parts[0]; !p.Read || p.Offset != -1 {
				t.Fatalf("leader's next fetch: %+v, want a load", p)
			}
			leader.acquire(t, "m", Read{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1})
			if p := leader.k.parts[key]; p == nil || !p.Initialized() || p.Start() != altered {
				t.Fatalf("the leader loaded the share-partition again at %v, want the admin's start %d", p, altered)
			}
			res, lost := leader.acquire(t, "m", Read{TP: t0, Topic: "t", HighWatermark: 10, First: altered, Last: 9})
			if !reflect.DeepEqual(res.ranges[t0], []Range{{First: altered, Last: 9, DeliveryCount: 1}}) || len(lost) != 0 {
				t.Fatalf("leader acquired %+v, lost %v; want %d-9 delivered once", res.ranges, lost, altered)
			}
			if s := leader.stored(t); s.Start != altered || len(s.States) != 10-altered {
				t.Fatalf("volume holds %+v, want the leader's acquisitions from %d", s, altered)
			}
			// A share session opened now finds the mark it loaded:
			// the acquisitions stay.
			mark, err := leader.k.opts.Store.LoadMark("g", "t", 0)
			if err != nil || mark == 0 {
				t.Fatalf("admin mark %d, %v", mark, err)
			}
			if d := leader.k.recheck(&recheck{group: "g", marks: map[routing.TP]uint64{tp: mark}}); len(d) != 0 {
				t.Fatalf("the mark loaded with the admin's state dropped %v", d)
			}
		})
	}
}

// TestKeeperStaleSaveAfterAReload: the leader queued a second save of the
// state it loaded before an AlterShareGroupOffsets before it handled the
// refusal of the first, and loads the share-partition again from the same
// assignment file, taking the same claim, before its writer reaches that
// save (the writer is held; the test flushes it). The admin mark refuses
// the stale save: the admin's snapshot stays on the volume, the request
// that made it is answered NOT_LEADER_OR_FOLLOWER, and the share-partition
// loaded again is neither dropped nor refused. In the second case the
// reloaded share-partition's first save is queued while the stale one is
// still pending: each is written or refused on its own.
func TestKeeperStaleSaveAfterAReload(t *testing.T) {
	// The admin moves the start back: the records from it are
	// delivered again, where the stale save would put back the
	// leader's start past them.
	const altered = 2
	for _, reloadedQueuedFirst := range []bool{false, true} {
		name := "the stale save written after the reload's claim"
		if reloadedQueuedFirst {
			name = "the stale save pending when the reload saves"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			at := assignment.Position{Epoch: 1, Version: 5}
			leader := newClaimLeader(t, dir, at)
			key := pkey{"g", routing.TP{Topic: "t", Partition: 0}}
			ack := func(epoch int32, first, last int64) beginResult {
				res := leader.k.begin(&begin{op: opAck, group: "g", member: "m", epoch: epoch, view: leader.view,
					parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: first, Last: last, Types: []AckType{AckAccept}}}}}})
				res.durable = leader.k.flushDirty()
				return res
			}

			// The leader loads with no mark on the volume (0) and
			// acquires 0-9.
			leader.begin(&begin{op: opFetch, member: "m", epoch: 0, parts: []PartReq{{TP: t0}}})
			leader.acquire(t, "m", Read{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1})
			if res, lost := leader.acquire(t, "m", Read{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}); len(res.ranges[t0]) != 1 || len(lost) != 0 {
				t.Fatalf("leader acquired %+v, lost %v", res.ranges, lost)
			}
			if m := leader.k.marks[key]; m != 0 {
				t.Fatalf("loaded mark %d with no mark file, want 0", m)
			}
			w := leader.hold()

			// Another broker's keeper alters the start.
			admin := newClaimLeader(t, dir, at)
			admin.k.opts.Views = &routing.Store{}
			admin.k.opts.Views.Publish(admin.view)
			tp := routing.TP{Topic: "t", Partition: 0}
			if err := admin.k.adminSet(&adminSet{group: "g", tps: []routing.TP{tp}, snaps: []*sharestate.Snapshot{{Start: altered}}})(); err != nil {
				t.Fatal(err)
			}
			want := sharestate.Snapshot{TopicID: t0.TopicID, Start: altered, States: []uint8{}, Counts: []int16{}}

			// The first save of the old state is refused (the claim
			// is gone); the keeper has not handled the refusal when
			// it queues the second.
			first := ack(1, 0, 4)
			w.flush()
			second := ack(2, 5, 6)
			first.awaitWritten("g")
			if c := first.parts[0].AckCode; c != kerr.NotLeaderForPartition.Code {
				t.Fatalf("the first acknowledgement after the alter answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(c))
			}
			leader.drain()
			if _, ok := leader.k.parts[key]; ok {
				t.Fatal("the leader still holds the share-partition it loaded before the alter")
			}

			// It loads the share-partition again from the same
			// file: the same claim, the admin's mark.
			fetch := leader.begin(&begin{op: opFetch, member: "m", epoch: 3})
			if p := fetch.parts[0]; !p.Read || p.Offset != -1 {
				t.Fatalf("leader's next fetch: %+v, want a load", p)
			}
			read := Read{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1}
			var code int16
			read.Stored, read.Mark, read.Claim, code = leader.keeper.loadStored("g", fetch.parts[0], leader.view)
			if code != 0 || read.Claim == nil || *read.Claim != at || read.Mark == 0 {
				t.Fatalf("reload: claim %v, mark %d, %v; want the claim %v again and the admin's mark", read.Claim, read.Mark, kerr.ErrorForCode(code), at)
			}
			var res acquireResult
			var reloaded durableWait
			if reloadedQueuedFirst {
				res = leader.k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{read}})
				reloaded = leader.k.flushDirty()
			}
			w.flush()
			if got := leader.stored(t); !reflect.DeepEqual(got, want) {
				t.Fatalf("volume holds %+v after the stale save, want the admin's %+v", got, want)
			}
			second.awaitWritten("g")
			if c := second.parts[0].AckCode; c != kerr.NotLeaderForPartition.Code {
				t.Fatalf("the acknowledgement of the state loaded before the alter answered %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(c))
			}
			if !reloadedQueuedFirst {
				res = leader.k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{read}})
				reloaded = leader.k.flushDirty()
				w.flush()
			}
			if lost := reloaded(); len(lost) != 0 {
				t.Fatalf("the reloaded share-partition's first save: %v", lost)
			}
			leader.drain()
			if p := leader.k.parts[key]; p == nil || !p.Initialized() || p.Start() != altered || !res.again {
				t.Fatalf("the leader holds %v after the stale save's refusal, want the admin's start %d loaded", p, altered)
			}

			// The reloaded share-partition delivers and saves.
			acq := leader.k.acquire(&acquire{group: "g", member: "m", maxRecords: 100,
				reads: []Read{{TP: t0, Topic: "t", HighWatermark: 10, First: altered, Last: 9}}})
			done := leader.k.flushDirty()
			w.flush()
			if lost := done(); len(lost) != 0 || !reflect.DeepEqual(acq.ranges[t0], []Range{{First: altered, Last: 9, DeliveryCount: 1}}) {
				t.Fatalf("leader acquired %+v, lost %v; want %d-9 delivered once", acq.ranges, lost, altered)
			}
			if s := leader.stored(t); s.Start != altered || len(s.States) != 10-altered {
				t.Fatalf("volume holds %+v, want the leader's acquisitions from %d", s, altered)
			}
		})
	}
}

// A read begun before its share-partition was dropped (here, by a later
// claim) does not start it again: only a read that loaded the state under
// a claim does.
func TestKeeperInitializesOnlyFromALoad(t *testing.T) {
	l := newClaimLeader(t, t.TempDir(), assignment.Position{Epoch: 1, Version: 1})
	l.begin(&begin{op: opFetch, member: "m", epoch: 0, parts: []PartReq{{TP: t0}}})
	res := l.k.acquire(&acquire{group: "g", member: "m", maxRecords: 100,
		reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1}}})
	if p := l.k.parts[pkey{"g", routing.TP{Topic: "t", Partition: 0}}]; p.Initialized() || !res.again {
		t.Fatalf("a read that loaded nothing started the share-partition (again: %v)", res.again)
	}
}

// TestAckNotWrittenIsAnsweredStorageError: an acknowledgement whose
// snapshot the volume fails to write is answered KAFKA_STORAGE_ERROR, not
// as stored; the share-partition keeps it in memory and the next snapshot
// written carries it.
func TestAckNotWrittenIsAnsweredStorageError(t *testing.T) {
	dir := t.TempDir()
	l := newClaimLeader(t, dir, assignment.Position{Epoch: 1, Version: 5})
	l.k.opts.Store.Claims = false // local mode: only the volume can refuse
	ack := func(epoch int32, first, last int64) int16 {
		t.Helper()
		res := l.begin(&begin{op: opAck, member: "m", epoch: epoch, parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: first, Last: last, Types: []AckType{AckAccept}}}}}})
		return res.parts[0].AckCode
	}
	l.begin(&begin{op: opFetch, member: "m", epoch: 0, parts: []PartReq{{TP: t0}}})
	l.acquire(t, "m", Read{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1})
	l.acquire(t, "m", Read{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9})

	// The group's directory becomes a file: every write under it fails.
	states, err := filepath.Glob(filepath.Join(dir, "__share", "*", "t-0.state"))
	if err != nil || len(states) != 1 {
		t.Fatalf("snapshot files %v (%v), want one", states, err)
	}
	groupDir := filepath.Dir(states[0])
	if err := os.RemoveAll(groupDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(groupDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := ack(1, 0, 4); code != kerr.KafkaStorageError.Code {
		t.Fatalf("acknowledgement not written answered %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	if err := os.Remove(groupDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(groupDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if code := ack(2, 5, 9); code != 0 {
		t.Fatalf("acknowledgement written answered %v", kerr.ErrorForCode(code))
	}
	if snap, ok, err := l.k.opts.Store.Load("g", "t", 0); !ok || err != nil || snap.Start != 10 {
		t.Fatalf("volume holds %+v (%v, %v), want start 10: both acknowledgements", snap, ok, err)
	}
}
