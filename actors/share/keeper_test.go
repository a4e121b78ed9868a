package share

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/groupstore"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// testKeeper is a keeper over a view with topic "t" (2 partitions, both
// led here) and topic "away" (led elsewhere), driven in virtual time.
func testKeeper() (*keeper, *routing.View, *clock.Fake) {
	clk := clock.NewFake(time.Unix(0, 0))
	opts := &Options{Clock: clk, Partition: Config{LockDuration: 10 * time.Second}, MaxSessions: 2000}
	opts.Partition.Defaults()
	t := &routing.Topic{Name: "t", ID: [16]byte{1}, Partitions: make([]routing.Partition, 2)}
	away := &routing.Topic{Name: "away", ID: [16]byte{2}, Partitions: make([]routing.Partition, 1)}
	v := &routing.View{
		Topics:   map[string]*routing.Topic{"t": t, "away": away},
		TopicIDs: map[[16]byte]*routing.Topic{t.ID: t, away.ID: away},
		Local:    map[routing.TP]actorsys.Ref{{Topic: "t", Partition: 0}: {}, {Topic: "t", Partition: 1}: {}},
	}
	return newKeeper(opts, &SessionStats{}), v, clk
}

var (
	t0   = TP{TopicID: [16]byte{1}, Partition: 0}
	t1   = TP{TopicID: [16]byte{1}, Partition: 1}
	away = TP{TopicID: [16]byte{2}, Partition: 0}
	gone = TP{TopicID: [16]byte{9}, Partition: 0}
)

func TestKeeperSessions(t *testing.T) {
	k, v, _ := testKeeper()
	step := func(op int, member string, epoch int32, parts ...PartReq) beginResult {
		return k.begin(&begin{op: op, group: "g", member: member, epoch: epoch, parts: parts, view: v})
	}
	acks := []AckBatch{{First: 0, Last: 0, Types: []AckType{AckAccept}}}
	cases := []struct {
		name string
		res  beginResult
		want int16
	}{
		{"acknowledge without a session", step(opAck, "m", 1), kerr.ShareSessionNotFound.Code},
		{"acknowledge at epoch 0", step(opAck, "m", 0), kerr.InvalidShareSessionEpoch.Code},
		{"fetch continuing no session", step(opFetch, "m", 1), kerr.ShareSessionNotFound.Code},
		{"open with acknowledgements", step(opFetch, "m", 0, PartReq{TP: t0, Acks: acks}), kerr.InvalidRequest.Code},
		{"open", step(opFetch, "m", 0, PartReq{TP: t0}), 0},
		{"stale epoch", step(opFetch, "m", 0+3), kerr.InvalidShareSessionEpoch.Code},
		{"next epoch", step(opFetch, "m", 1, PartReq{TP: t1}), 0},
		{"acknowledge at the next epoch", step(opAck, "m", 2), 0},
		{"the same epoch again", step(opFetch, "m", 2), kerr.InvalidShareSessionEpoch.Code},
		{"close", step(opAck, "m", -1), 0},
		{"after close", step(opFetch, "m", 3), kerr.ShareSessionNotFound.Code},
	}
	for _, c := range cases {
		if c.res.code != c.want {
			t.Errorf("%s: code %d, want %d", c.name, c.res.code, c.want)
		}
	}
}

func TestKeeperPartitionsReadAndErrors(t *testing.T) {
	k, v, _ := testKeeper()
	res := k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v,
		parts: []PartReq{{TP: t0}, {TP: away}, {TP: gone}}})
	got := map[TP]PartResult{}
	for _, p := range res.parts {
		got[p.TP] = p
	}
	if p := got[t0]; p.Code != 0 || !p.Read || p.Offset != -1 {
		t.Fatalf("led partition: %+v, want a read of an uninitialized share-partition", p)
	}
	if p := got[away]; p.Code != kerr.NotLeaderForPartition.Code || p.Read {
		t.Fatalf("partition led elsewhere: %+v", p)
	}
	if p := got[gone]; p.Code != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic: %+v", p)
	}
}

// TestKeeperAcquireAcknowledgeRelease walks one share-partition through a
// fetch, an acknowledgement in the session, and the session's close.
func TestKeeperAcquireAcknowledgeRelease(t *testing.T) {
	k, v, clk := testKeeper()
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	// The first read reports the log's bounds: the share-partition starts.
	res := k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, LogStart: 0, HighWatermark: 10, First: 0, Last: -1}}})
	if !res.again {
		t.Fatal("initializing read did not ask for another")
	}
	res = k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}}})
	if rg := res.ranges[t0]; len(rg) != 1 || rg[0] != (Range{First: 0, Last: 9, DeliveryCount: 1}) {
		t.Fatalf("acquired %+v", res.ranges)
	}
	ack := k.begin(&begin{op: opAck, group: "g", member: "m", epoch: 1, view: v,
		parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: 0, Last: 4, Types: []AckType{AckAccept}}}}}})
	if ack.code != 0 || len(ack.parts) != 1 || ack.parts[0].AckCode != 0 {
		t.Fatalf("acknowledge: %+v", ack)
	}
	other := k.begin(&begin{op: opFetch, group: "g", member: "o", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	if p := other.parts[0]; !p.Read || p.Offset != 10 {
		t.Fatalf("another member reads from %+v, want 10 (5-9 are held)", p)
	}
	k.begin(&begin{op: opAck, group: "g", member: "m", epoch: -1, view: v})
	clk.Advance(time.Second)
	w := k.where(&where{group: "g", parts: []PartResult{{TP: t0, Topic: "t"}}})
	if len(w) != 1 || w[0].Offset != 5 {
		t.Fatalf("after the session closed, read from %+v, want 5", w)
	}
}

// TestKeeperGroupConfigOnFirstUse: the group's configs read with a
// share-partition's initializing read set where it starts (earliest over
// the broker's latest) and the lock its acquisitions report.
func TestKeeperGroupConfigOnFirstUse(t *testing.T) {
	k, v, _ := testKeeper()
	k.opts.Partition.ResetLatest = true // the broker's setting: latest
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	cfg := WithGroupConfigs(k.opts.Partition, map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, LogStart: 2, HighWatermark: 10, First: 0, Last: -1, Config: &cfg}}})
	res := k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", LogStart: 2, HighWatermark: 10, First: 2, Last: 9}}})
	if rg := res.ranges[t0]; len(rg) != 1 || rg[0].First != 2 {
		t.Fatalf("acquired %+v, want from the log start 2", res.ranges)
	}
	if res.lock != 15*time.Second {
		t.Fatalf("lock %s, want the group's 15s", res.lock)
	}
}

// TestKeeperAdminChanges: an admin's new start replaces the share-partition
// held in memory (without a store, the keeper keeps it for the next
// initialization); a leader holding a share-partition whose admin mark on
// the volume changed drops it, once, and loads the new state.
func TestKeeperAdminChanges(t *testing.T) {
	k, v, _ := testKeeper()
	tp := routing.TP{Topic: "t", Partition: 0}
	initialize := func(stored *sharestate.Snapshot, mark uint64) {
		t.Helper()
		k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
		k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code,
			LogStart: 0, HighWatermark: 10, First: 0, Last: -1, Stored: stored, Mark: mark}}})
	}
	initialize(nil, 0)
	if s := k.starts(&starts{group: "g"})[tp]; s.start != 0 {
		t.Fatalf("start %d, want 0 (earliest)", s)
	}
	wait := k.adminSet(&adminSet{group: "g", tps: []routing.TP{tp}, snaps: []*sharestate.Snapshot{{Start: 4}}})
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if s := k.starts(&starts{group: "g"})[tp]; s.start != 4 {
		t.Fatalf("start after the admin's change %d, want 4", s)
	}
	initialize(nil, 0)
	if p := k.parts[pkey{"g", tp}]; !p.Initialized() || p.Start() != 4 {
		t.Fatalf("share-partition after initializing: start %d, want 4", p.Start())
	}

	// Another broker's admin change: the mark on the volume moved.
	if d := k.recheck(&recheck{group: "g", marks: map[routing.TP]uint64{tp: 0}}); len(d) != 0 {
		t.Fatalf("same mark dropped %v", d)
	}
	if d := k.recheck(&recheck{group: "g", marks: map[routing.TP]uint64{tp: 9}}); !d[tp] {
		t.Fatal("a changed mark did not drop the share-partition")
	}
	initialize(&sharestate.Snapshot{Start: 7}, 9)
	if p := k.parts[pkey{"g", tp}]; p.Start() != 7 {
		t.Fatalf("share-partition reloaded at %d, want 7", p.Start())
	}
	if d := k.recheck(&recheck{group: "g", marks: map[routing.TP]uint64{tp: 9}}); len(d) != 0 {
		t.Fatalf("the loaded mark dropped %v again", d)
	}
	// Removed: the next use starts at the reset position.
	_ = k.adminSet(&adminSet{group: "g", tps: []routing.TP{tp}, snaps: []*sharestate.Snapshot{nil}})()
	if _, ok := k.starts(&starts{group: "g"})[tp]; ok {
		t.Fatal("state left after the admin removed it")
	}
}

// recreated is v with topic "t" deleted and created again (a new id), in a
// view that knows which topics exist.
func recreated(v *routing.View) (*routing.View, TP) {
	t := &routing.Topic{Name: "t", ID: [16]byte{3}, Partitions: make([]routing.Partition, 2)}
	nv := *v
	nv.Role = "local"
	nv.Topics = map[string]*routing.Topic{"t": t, "away": v.Topics["away"]}
	nv.TopicIDs = map[[16]byte]*routing.Topic{t.ID: t, v.Topics["away"].ID: v.Topics["away"]}
	return &nv, TP{TopicID: t.ID, Partition: 0}
}

// TestKeeperTopicRecreated: a share-partition's state belongs to its
// topic's id; the topic created again under the same name starts afresh
// (at the reset position, every delivery count 1), and its old state is
// not reported.
func TestKeeperTopicRecreated(t *testing.T) {
	k, v, _ := testKeeper()
	k.opts.Partition.ResetLatest = true
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, LogStart: 0, HighWatermark: 0, First: 0, Last: -1}}})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}}})
	// Released twice: the next delivery would be the third.
	for epoch := int32(1); epoch <= 2; epoch++ {
		k.begin(&begin{op: opAck, group: "g", member: "m", epoch: epoch, view: v,
			parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: 0, Last: 9, Types: []AckType{AckRelease}}}}}})
		k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}}})
	}

	nv, n0 := recreated(v)
	res := k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: nv, parts: []PartReq{{TP: n0}}})
	if p := res.parts[0]; p.Code != 0 || !p.Read || p.Offset != -1 {
		t.Fatalf("new topic's share-partition: %+v, want a read of an uninitialized one", p)
	}
	// A read of the old topic answered after the new one began is not
	// the new one's.
	if got := k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}}}); len(got.ranges) != 0 {
		t.Fatalf("old topic's read acquired %+v", got.ranges)
	}
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: n0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, LogStart: 0, HighWatermark: 4, First: 0, Last: -1}}})
	got := k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: n0, Topic: "t", HighWatermark: 6, First: 0, Last: 5}}})
	if rg := got.ranges[n0]; len(rg) != 1 || rg[0] != (Range{First: 4, Last: 5, DeliveryCount: 1}) {
		t.Fatalf("new topic acquired %+v, want 4-5 (latest) delivered once", got.ranges)
	}
}

// TestKeeperDropsDeletedTopics: once the published view has no topic of a
// share-partition's name (or one with another id), its state leaves
// memory and DescribeShareGroupOffsets' answer.
func TestKeeperDropsDeletedTopics(t *testing.T) {
	k, v, _ := testKeeper()
	views := &routing.Store{}
	k.opts.Views = views
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, LogStart: 0, HighWatermark: 5, First: 0, Last: -1}}})
	tp := routing.TP{Topic: "t", Partition: 0}
	nv, _ := recreated(v)
	views.Publish(nv)
	if s, ok := k.starts(&starts{group: "g"})[tp]; ok {
		t.Fatalf("the deleted topic's start %d reported for the new topic", s)
	}
	k.dropDeleted()
	if _, ok := k.parts[pkey{"g", tp}]; ok {
		t.Fatal("the deleted topic's share-partition is still held")
	}
}

// TestLoadStoredOfAnotherTopic: a snapshot on the volume written for an
// earlier topic of the same name is removed, not loaded; one without a
// topic id is loaded as the current topic's.
func TestLoadStoredOfAnotherTopic(t *testing.T) {
	st, err := sharestate.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, v, _ := testKeeper()
	k := &Keeper{opts: &Options{Store: st}}
	cur := PartResult{TP: TP{TopicID: [16]byte{3}, Partition: 0}, Topic: "t"}
	if err := st.Save("g", "t", 0, sharestate.Snapshot{TopicID: [16]byte{1}, Start: 8, States: []uint8{1}, Counts: []int16{3}}); err != nil {
		t.Fatal(err)
	}
	if snap, _, _, _ := k.loadStored("g", cur, v); snap != nil {
		t.Fatalf("loaded %+v of another topic", snap)
	}
	if _, ok, _ := st.Load("g", "t", 0); ok {
		t.Fatal("the other topic's snapshot is left on the volume")
	}
	if err := st.Save("g", "t", 0, sharestate.Snapshot{TopicID: [16]byte{3}, Start: 8}); err != nil {
		t.Fatal(err)
	}
	if snap, _, _, _ := k.loadStored("g", cur, v); snap == nil || snap.Start != 8 {
		t.Fatalf("own snapshot: %+v", snap)
	}
}

// loadStored reads the admin mark with the snapshot (each new share
// session compares it with the volume's), answers a read the volume fails
// KAFKA_STORAGE_ERROR instead of starting afresh, and starts afresh from a
// corrupt snapshot.
func TestLoadStoredMarkAndErrors(t *testing.T) {
	dir := t.TempDir()
	st, err := sharestate.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, v, _ := testKeeper()
	k := &Keeper{opts: &Options{Store: st}}
	cur := PartResult{TP: TP{TopicID: [16]byte{3}, Partition: 0}, Topic: "t"}
	if err := st.Save("g", "t", 0, sharestate.Snapshot{TopicID: [16]byte{3}, Start: 8}); err != nil {
		t.Fatal(err)
	}
	if err := st.SaveMark("g", "t", 0, 5); err != nil {
		t.Fatal(err)
	}
	if snap, mark, _, code := k.loadStored("g", cur, v); snap == nil || snap.Start != 8 || mark != 5 || code != 0 {
		t.Fatalf("loadStored = %+v, mark %d, code %d; want start 8, the admin's mark 5", snap, mark, code)
	}
	// The volume fails the read (the snapshot's name is a directory).
	path := filepath.Join(dir, "__share", groupstore.DirName("g"), "t-0.state")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if snap, _, _, code := k.loadStored("g", cur, v); snap != nil || code != kerr.KafkaStorageError.Code {
		t.Fatalf("unreadable volume: %+v, code %v; want KAFKA_STORAGE_ERROR", snap, kerr.ErrorForCode(code))
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("not a snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	if snap, mark, _, code := k.loadStored("g", cur, v); snap != nil || code != 0 || mark != 5 {
		t.Fatalf("corrupt snapshot: %+v, mark %d, code %d; want a fresh start", snap, mark, code)
	}
}

// TestDropDeletedRemovesSnapshots: the keeper removes from the volume the
// snapshots of the topics the view no longer has, at start every one of
// them, then only the incarnations it saw deleted.
func TestDropDeletedRemovesSnapshots(t *testing.T) {
	st, err := sharestate.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k, v, _ := testKeeper()
	views := &routing.Store{}
	k.opts.Views, k.opts.Store = views, st
	k.writer = startWriter(st, k.opts.Log, nil)
	defer k.writer.stop()
	save := func(topic string, id [16]byte) {
		t.Helper()
		if err := st.Save("g", topic, 0, sharestate.Snapshot{TopicID: id}); err != nil {
			t.Fatal(err)
		}
	}
	has := func(topic string) bool {
		_, ok, _ := st.Load("g", topic, 0)
		return ok
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			if cond() {
				return
			}
		}
		t.Fatal(what)
	}
	save("t", [16]byte{1})
	save("dead", [16]byte{4})
	lv := *v
	lv.Role = "local"
	views.Publish(&lv)
	k.dropDeleted()
	eventually("a deleted topic's snapshot was left at start", func() bool { return !has("dead") })
	if !has("t") {
		t.Fatal("a live topic's snapshot was removed")
	}
	nv, _ := recreated(v)
	views.Publish(nv)
	k.dropDeleted()
	eventually("the recreated topic's old snapshot was left", func() bool { return !has("t") })
}

// TestHasStateOfTopicsThatExist: whether a group has share-partition state
// (DeleteShareGroupOffsets' test of the group) counts the snapshots of the
// topics the view has, not one left from an earlier topic of the same name.
func TestHasStateOfTopicsThatExist(t *testing.T) {
	st, err := sharestate.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, v, _ := testKeeper()
	nv, _ := recreated(v) // "t" now has id {3}
	k := &Keeper{opts: &Options{Store: st}}
	if k.HasState(context.Background(), nv, "g") {
		t.Fatal("state reported with no snapshot")
	}
	if err := st.Save("g", "t", 0, sharestate.Snapshot{TopicID: [16]byte{1}, Start: 8}); err != nil {
		t.Fatal(err)
	}
	if k.HasState(context.Background(), nv, "g") {
		t.Fatal("a snapshot of an earlier topic t counts as the group's state")
	}
	if err := st.Save("g", "t", 1, sharestate.Snapshot{TopicID: [16]byte{3}, Start: 2}); err != nil {
		t.Fatal(err)
	}
	if !k.HasState(context.Background(), nv, "g") {
		t.Fatal("a snapshot of the current topic t is not counted")
	}
}

// TestKeeperSessionLimit: at MaxSessions a new member's session is
// refused with SHARE_SESSION_LIMIT_REACHED (retriable); a member opening
// its session again replaces its own, and a closed session frees a place.
func TestKeeperSessionLimit(t *testing.T) {
	k, v, _ := testKeeper()
	k.opts.MaxSessions = 2
	open := func(member string, conn int64) int16 {
		return k.begin(&begin{op: opFetch, group: "g", member: member, epoch: 0, view: v, conn: conn, parts: []PartReq{{TP: t0}}}).code
	}
	if c := open("a", 1); c != 0 {
		t.Fatalf("a: %d", c)
	}
	if c := open("b", 2); c != 0 {
		t.Fatalf("b: %d", c)
	}
	if c := open("c", 3); c != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("c over the limit: %d, want SHARE_SESSION_LIMIT_REACHED", c)
	}
	if c := open("a", 4); c != 0 {
		t.Fatalf("a opening its session again: %d", c)
	}
	if open := k.stats.Open.Load(); open != 2 {
		t.Fatalf("%d sessions counted, want 2", open)
	}
	if c := k.begin(&begin{op: opAck, group: "g", member: "b", epoch: -1, view: v}).code; c != 0 {
		t.Fatalf("b closing: %d", c)
	}
	if c := open("c", 3); c != 0 {
		t.Fatalf("c after b closed: %d", c)
	}
}

// TestKeeperConnectionClosed: the sessions a connection opened go when it
// closes, and what their members hold is available to the others at once;
// a session the member opened again on another connection stays.
func TestKeeperConnectionClosed(t *testing.T) {
	k, v, _ := testKeeper()
	k.opts.Views = &routing.Store{}
	k.opts.Views.Publish(v)
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, conn: 7, parts: []PartReq{{TP: t0}}})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, LogStart: 0, HighWatermark: 10, First: 0, Last: -1}}})
	if res := k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 10, First: 0, Last: 9}}}); len(res.ranges[t0]) != 1 {
		t.Fatalf("acquired %+v", res.ranges)
	}
	k.begin(&begin{op: opFetch, group: "g", member: "n", epoch: 0, view: v, conn: 8, parts: []PartReq{{TP: t1}}})
	k.begin(&begin{op: opFetch, group: "h", member: "m", epoch: 0, view: v, conn: 7, parts: []PartReq{{TP: t1}}})
	k.begin(&begin{op: opFetch, group: "h", member: "m", epoch: 0, view: v, conn: 9, parts: []PartReq{{TP: t1}}})

	k.connClosed(7)
	if _, ok := k.sessions[skey{"g", "m"}]; ok {
		t.Fatal("the session of the closed connection is still held")
	}
	if _, ok := k.sessions[skey{"h", "m"}]; !ok {
		t.Fatal("a session opened again on another connection went with the first")
	}
	if _, ok := k.sessions[skey{"g", "n"}]; !ok {
		t.Fatal("another connection's session went")
	}
	if open, evicted := k.stats.Open.Load(), k.stats.Evicted.Load(); open != 2 || evicted != 1 {
		t.Fatalf("counted %d open, %d evicted; want 2, 1", open, evicted)
	}
	if !k.dirty[pkey{"g", routing.TP{Topic: "t", Partition: 0}}] {
		t.Fatal("the released share-partition is not saved")
	}
	w := k.where(&where{group: "g", parts: []PartResult{{TP: t0, Topic: "t"}}})
	if len(w) != 1 || w[0].Offset != 0 {
		t.Fatalf("after the connection closed, read from %+v, want 0 (released)", w)
	}
	if res := k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 1, view: v}); res.code != kerr.ShareSessionNotFound.Code {
		t.Fatalf("the member continuing its dropped session: %d, want SHARE_SESSION_NOT_FOUND", res.code)
	}
	k.connClosed(7) // nothing left: a no-op
	if len(k.byConn) != 2 {
		t.Fatalf("connections indexed: %v", k.byConn)
	}
}

// TestKeeperDeadLetterOnExpiry: a record whose lock runs out at the
// delivery limit, with no other change to its share-partition, is handed
// to the dead-letter writes by the next read that finds it (without a
// writer it is archived at once, and the start passes it).
func TestKeeperDeadLetterOnExpiry(t *testing.T) {
	k, v, clk := testKeeper()
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	cfg := WithGroupConfigs(k.opts.Partition, map[string]string{"share.delivery.count.limit": "2",
		"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq.t"})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 1, First: 0, Last: -1, Config: &cfg}}})
	for range 2 {
		res := k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 1, First: 0, Last: 0}}})
		if len(res.ranges[t0]) != 1 {
			t.Fatalf("acquired %+v", res.ranges)
		}
		k.sendDeadLetters()
		k.flushDirty()
		clk.Advance(11 * time.Second)
	}
	w := k.where(&where{group: "g", parts: []PartResult{{TP: t0, Topic: "t"}}})
	k.sendDeadLetters()
	if len(w) != 1 || w[0].Offset != 1 {
		t.Fatalf("read from %+v, want 1 (0 gone to the dead letters)", w)
	}
	if p := k.parts[pkey{"g", routing.TP{Topic: "t", Partition: 0}}]; p.Start() != 1 {
		t.Fatalf("start %d, want 1: the record expired at the limit holds it", p.Start())
	}
}

// TestKeeperGroupConfigChanges: a group's settings read after its
// share-partition started apply from its next acquisition on: the new lock
// and delivery count limit, and a dead-letter topic set later.
func TestKeeperGroupConfigChanges(t *testing.T) {
	k, v, _ := testKeeper()
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	first := WithGroupConfigs(k.opts.Partition, map[string]string{"share.auto.offset.reset": "earliest"})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 2, First: 0, Last: -1, Config: &first}}})
	res := k.acquire(&acquire{group: "g", member: "m", maxRecords: 1, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 2, First: 0, Last: 1, Config: &first}}})
	if res.lock != 10*time.Second {
		t.Fatalf("lock %s, want the broker's 10s", res.lock)
	}
	changed := WithGroupConfigs(k.opts.Partition, map[string]string{"share.auto.offset.reset": "earliest",
		"share.record.lock.duration.ms": "20000", "share.delivery.count.limit": "2", "errors.deadletterqueue.topic.name": "dlq.t"})
	res = k.acquire(&acquire{group: "g", member: "m", maxRecords: 1, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 2, First: 1, Last: 1, Config: &changed}}})
	if res.lock != 20*time.Second {
		t.Fatalf("lock %s, want the group's new 20s", res.lock)
	}
	p := k.parts[pkey{"g", routing.TP{Topic: "t", Partition: 0}}]
	k.begin(&begin{op: opAck, group: "g", member: "m", epoch: 1, view: v,
		parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: 0, Last: 1, Types: []AckType{AckReject}}}}}})
	if st, _ := p.At(0); st != Archiving {
		t.Fatalf("a record rejected after the group named a dead-letter topic is %s, want archiving", st)
	}
}

// TestKeeperGroupConfigCache: the request handlers read a group's configs
// at most every groupConfigTTL; without overrides the broker's apply.
func TestKeeperGroupConfigCache(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	store := groupconfig.NewMemory(nil)
	k := &Keeper{opts: &Options{Clock: clk, GroupConfigs: store, Partition: Config{LockDuration: 30 * time.Second}}}
	if cfg := k.groupConfig("g"); cfg == nil || cfg.LockDuration != 30*time.Second {
		t.Fatalf("without overrides: %+v, want the broker's", cfg)
	}
	if err := store.Update("g", false, func(map[string]string) (map[string]string, error) {
		return map[string]string{"share.record.lock.duration.ms": "20000"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(groupConfigTTL - time.Millisecond)
	if cfg := k.groupConfig("g"); cfg.LockDuration != 30*time.Second {
		t.Fatalf("within the TTL: lock %s, want the cached 30s", cfg.LockDuration)
	}
	clk.Advance(time.Millisecond)
	if cfg := k.groupConfig("g"); cfg.LockDuration != 20*time.Second {
		t.Fatalf("after the TTL: lock %s, want the new 20s", cfg.LockDuration)
	}
	// Groups no longer read leave the cache.
	clk.Advance(time.Hour)
	for i := range 256 {
		k.groupConfig("other-" + strconv.Itoa(i))
	}
	if _, ok := k.configs.Load("g"); ok {
		t.Fatal("a group not read for an hour is still cached")
	}
}

// TestKeeperRequestsAnswered: a request the keeper cannot handle (it
// panicked on it, or it is stopped) is answered: a share session's
// request with SHARE_SESSION_NOT_FOUND, a read round with nothing
// acquired, an admin change with an error.
func TestKeeperRequestsAnswered(t *testing.T) {
	var b beginResult
	(&begin{reply: func(r beginResult) { b = r }}).Undelivered()
	if b.code != kerr.ShareSessionNotFound.Code || b.durable == nil {
		t.Fatalf("begin answered %+v", b)
	}
	b.durable()
	var a acquireResult
	(&acquire{reply: func(r acquireResult) { a = r }}).Undelivered()
	if len(a.ranges) != 0 || a.durable == nil || a.again {
		t.Fatalf("acquire answered %+v", a)
	}
	var wait func() error
	(&adminSet{reply: func(w func() error) { wait = w }}).Undelivered()
	if wait == nil || wait() == nil {
		t.Fatal("an admin change the keeper could not make reports no error")
	}
	answered := 0
	(&where{reply: func([]PartResult) { answered++ }}).Undelivered()
	(&starts{reply: func(map[routing.TP]progress) { answered++ }}).Undelivered()
	(&recheck{reply: func(map[routing.TP]bool) { answered++ }}).Undelivered()
	if answered != 3 {
		t.Fatalf("%d of 3 reads answered", answered)
	}
}

// TestKeeperIgnoresAnotherIncarnationsDeadLetters: the end of a dead-letter
// write started by an earlier incarnation of the keeper (before a panic)
// changes nothing: this one loaded the records' state again and writes
// them itself.
func TestKeeperIgnoresAnotherIncarnationsDeadLetters(t *testing.T) {
	k, v, _ := testKeeper()
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	cfg := WithGroupConfigs(k.opts.Partition, map[string]string{"share.auto.offset.reset": "earliest", "errors.deadletterqueue.topic.name": "dlq.t"})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 1, First: 0, Last: -1, Config: &cfg}}})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 1, First: 0, Last: 0}}})
	k.begin(&begin{op: opAck, group: "g", member: "m", epoch: 1, view: v,
		parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: 0, Last: 0, Types: []AckType{AckReject}}}}}})
	key := pkey{"g", routing.TP{Topic: "t", Partition: 0}}
	p := k.parts[key]
	letters := p.DeadLetters()
	done := &deadLettered{key: key, id: k.ids[key], letters: letters, written: []int{1}}
	done.from = &keeper{}
	k.deadLettered(done)
	if st, _ := p.At(0); st != Archiving {
		t.Fatalf("another incarnation's write made the record %s, want still archiving", st)
	}
	done.from = k
	k.deadLettered(done)
	if p.Start() != 1 {
		t.Fatalf("start %d after its own write ended, want 1", p.Start())
	}
}

// TestKeeperMemoryStateOutlivesIncarnation: without a store, what one
// incarnation of the keeper flushed is the state the next one (after a
// panic) initializes the share-partition from.
func TestKeeperMemoryStateOutlivesIncarnation(t *testing.T) {
	k, v, _ := testKeeper()
	k.opts.Partition.ResetLatest = true
	k.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 10, First: 0, Last: -1}}})
	k.flushDirty()
	k.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", HighWatermark: 12, First: 10, Last: 11}}})
	k.flushDirty()
	k.begin(&begin{op: opAck, group: "g", member: "m", epoch: 1, view: v,
		parts: []PartReq{{TP: t0, Acks: []AckBatch{{First: 10, Last: 10, Types: []AckType{AckAccept}}}}}})
	k.flushDirty()

	next := newKeeper(k.opts, &SessionStats{})
	next.memStored = k.memStored
	next.begin(&begin{op: opFetch, group: "g", member: "m", epoch: 0, view: v, parts: []PartReq{{TP: t0}}})
	next.acquire(&acquire{group: "g", member: "m", maxRecords: 100, reads: []Read{{TP: t0, Topic: "t", Code: kerr.OffsetOutOfRange.Code, HighWatermark: 12, First: 0, Last: -1}}})
	p := next.parts[pkey{"g", routing.TP{Topic: "t", Partition: 0}}]
	if p.Start() != 11 {
		t.Fatalf("the next incarnation starts at %d, want 11 (10 accepted; the broker's latest would be 12)", p.Start())
	}
	if st, c := p.At(11); st != Available || c != 1 {
		t.Fatalf("offset 11 is %s at delivery count %d, want available at 1 (its lock went with the panic)", st, c)
	}
}

// TestDeleteGroupStates: deleting a share group removes its state of every
// topic, on the volume and held in memory (one share-partition the keeper
// holds has no snapshot yet), and leaves another group's.
func TestDeleteGroupStates(t *testing.T) {
	for _, onVolume := range []bool{true, false} {
		t.Run(map[bool]string{true: "volume", false: "memory"}[onVolume], func(t *testing.T) {
			k, v, _ := testKeeper()
			views := &routing.Store{}
			views.Publish(v)
			k.opts.Views = views
			gt0, gt1, gAway := pkey{"g", routing.TP{Topic: "t", Partition: 0}}, pkey{"g", routing.TP{Topic: "t", Partition: 1}}, pkey{"g", routing.TP{Topic: "away", Partition: 0}}
			other := pkey{"h", routing.TP{Topic: "t", Partition: 0}}
			var st *sharestate.Store
			stored := func(key pkey) bool {
				if st == nil {
					_, ok := k.memStored[key]
					return ok
				}
				_, ok, err := st.Load(key.group, key.tp.Topic, key.tp.Partition)
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			for _, key := range []pkey{gt0, gAway, other} {
				k.memStored[key] = sharestate.Snapshot{Start: 5}
			}
			if onVolume {
				var err error
				if st, err = sharestate.New(t.TempDir()); err != nil {
					t.Fatal(err)
				}
				k.opts.Store, k.memStored = st, map[pkey]sharestate.Snapshot{}
				for _, key := range []pkey{gt0, gAway, other} {
					if err := st.Save(key.group, key.tp.Topic, key.tp.Partition, sharestate.Snapshot{Start: 5}); err != nil {
						t.Fatal(err)
					}
				}
				k.writer = startWriter(st, k.opts.Log, nil)
				defer k.writer.stop()
			}
			k.partition("g", gt1.tp, [16]byte{1})
			k.partition("h", other.tp, [16]byte{1})

			m, err := (&Keeper{opts: k.opts}).groupDeletion("g")
			if err != nil {
				t.Fatal(err)
			}
			if err := k.adminSet(m)(); err != nil {
				t.Fatal(err)
			}
			for _, key := range []pkey{gt0, gt1, gAway} {
				if stored(key) {
					t.Errorf("%v: state left stored", key)
				}
				if _, held := k.parts[key]; held {
					t.Errorf("%v: state left in memory", key)
				}
			}
			if _, held := k.parts[other]; !stored(other) || !held {
				t.Errorf("another group's state removed (stored %v, held %v)", stored(other), held)
			}
		})
	}
}
