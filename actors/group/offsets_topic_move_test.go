package group

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// fakeOffsetsPartition is one partition of __consumer_offsets in memory,
// served as a partition actor serves it: Produce appends (or is refused
// while refuse is set), ListOffsets answers the end (OFFSET_NOT_AVAILABLE
// while notReady counts down, as a new leader answers before its first
// fsync), Fetch reads.
type fakeOffsetsPartition struct {
	mu       sync.Mutex
	batches  [][]byte
	next     int64
	refuse   bool
	notReady int
}

func (p *fakeOffsetsPartition) Receive(ctx actor.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch m := ctx.Message().(type) {
	case *messages.Produce:
		h, err := batch.Validate(m.Batch)
		if p.refuse || err != nil {
			m.Reply(messages.ProduceResult{ErrorCode: kerr.NotLeaderForPartition.Code})
			return
		}
		b := slices.Clone(m.Batch)
		batch.SetBaseOffset(b, p.next)
		p.batches = append(p.batches, b)
		m.Reply(messages.ProduceResult{BaseOffset: p.next})
		p.next += int64(h.LastOffsetDelta) + 1
	case *messages.ListOffsets:
		if p.notReady > 0 {
			p.notReady--
			m.Reply(messages.ListOffsetsResult{ErrorCode: kerr.OffsetNotAvailable.Code, Offset: -1, Timestamp: -1})
			return
		}
		m.Reply(messages.ListOffsetsResult{Offset: p.next, Timestamp: -1})
	case *messages.Fetch:
		var out []byte
		for _, b := range p.batches {
			if h, _ := batch.ParseHeader(b); h.NextOffset() > m.Offset {
				out = append(out, b...)
			}
		}
		m.Reply(messages.FetchResult{HighWatermark: p.next, Records: storage.BytesRecords(out)})
	case offsetsDrain:
		close(m)
	}
}

// offsetsDrain is closed by the fake partition once it has handled every
// message sent to it before.
type offsetsDrain chan struct{}

// drain waits until p has handled what was sent to it so far: a produce a
// stopped coordinator sent is answered before the test changes how p
// answers.
func (p *fakeOffsetsPartition) drain(t *testing.T, ref actorsys.Ref) {
	t.Helper()
	done := make(offsetsDrain)
	ref.Send(done)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the offsets partition did not drain its mailbox")
	}
}

// records returns the partition's records from offset from on, decoded as
// "group/topic/partition=offset", "group/topic/partition=tombstone",
// "group=metadata" or "group=metadata tombstone".
func (p *fakeOffsetsPartition) records(t *testing.T, from int) []string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, b := range p.batches {
		h, _ := batch.ParseHeader(b)
		recs, err := compaction.Records(b, h)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			var k kmsg.OffsetCommitKey
			if err := k.ReadFrom(r.Key); err != nil {
				t.Fatal(err)
			}
			if k.Version == 2 {
				var gk kmsg.GroupMetadataKey
				_ = gk.ReadFrom(r.Key)
				out = append(out, gk.Group+"=metadata"+map[bool]string{true: " tombstone"}[r.Tombstone])
				continue
			}
			s := fmt.Sprintf("%s/%s/%d=", k.Group, k.Topic, k.Partition)
			if r.Tombstone {
				s += "tombstone"
			} else {
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil {
					t.Fatal(err)
				}
				s += fmt.Sprint(v.Offset)
			}
			out = append(out, s)
		}
	}
	return out[min(from, len(out)):]
}

// live is what compaction keeps of records: the last value per key,
// none for a tombstone.
func live(recs []string) []string {
	last := map[string]string{}
	var keys []string
	for _, r := range recs {
		i := len(r) - 1
		for r[i] != '=' {
			i--
		}
		k, v := r[:i], r[i+1:]
		if _, ok := last[k]; !ok {
			keys = append(keys, k)
		}
		last[k] = v
	}
	var out []string
	for _, k := range keys {
		if v := last[k]; v != "tombstone" && v != "metadata tombstone" {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return out
}

// groupsOfOneSlot returns n group names of the same coordinator slot, and
// the slot.
func groupsOfOneSlot(n int) ([]string, int) {
	var out []string
	slot := assignment.SlotFor("move-0", assignment.GroupSlotCount)
	for i := 0; len(out) < n; i++ {
		if g := fmt.Sprintf("move-%d", i); assignment.SlotFor(g, assignment.GroupSlotCount) == slot {
			out = append(out, g)
		}
	}
	return out, slot
}

// newOffsetsPartition is a partition of __consumer_offsets in memory
// (its actor) and a group store for the coordinators that write to it.
func newOffsetsPartition(t *testing.T) (*fakeOffsetsPartition, actorsys.Ref, groupstore.Store) {
	t.Helper()
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	fake := &fakeOffsetsPartition{}
	p, err := sys.Spawn("offsets", func() actor.Actor { return fake })
	if err != nil {
		t.Fatal(err)
	}
	return fake, p, groupstore.NewMemory()
}

// offsetsTopicMove runs a coordinator over store whose groups' slot has
// partition p of __consumer_offsets open here.
func offsetsTopicMove(t *testing.T, store groupstore.Store, p actorsys.Ref, slot int) (*Coordinator, *testClock) {
	t.Helper()
	v := view(nil)
	v.Local = map[routing.TP]actorsys.Ref{{Topic: assignment.OffsetsTopic, Partition: int32(slot)}: p}
	views := &routing.Store{}
	views.Publish(v)
	return startCoordinator(t, store, views)
}

func commitGroup(t *testing.T, c *Coordinator, group string, offs map[int32]int64) {
	t.Helper()
	req := commitReq(8, -1, "", map[string]map[int32]int64{"t": offs})
	req.Group = group
	r := await(t, callGroup(c, group, req)).(*kmsg.OffsetCommitResponse)
	for _, p := range r.Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("commit of %s: %s", group, code(p.ErrorCode))
		}
	}
}

// settle waits until every group's actor has handled what it was sent
// before (a describe answered by each), then until the partition has
// appended what they sent it: what the coordinator writes of its own
// accord is in the partition.
func settle(t *testing.T, c *Coordinator, p actorsys.Ref, groups []string) {
	t.Helper()
	for _, g := range groups {
		await(t, callGroup(c, g, &messages.GroupDescribe{Version: 5}))
	}
	done := make(chan struct{})
	p.Send(&messages.ListOffsets{Timestamp: -1, Reply: func(messages.ListOffsetsResult) { close(done) }})
	<-done
}

// TestOffsetsTopicMoveWritesWhatChanged: a coordinator that takes over N
// groups whose records __consumer_offsets already holds writes none of
// them again (it rewrote all N x 4 before it read the partition first).
func TestOffsetsTopicMoveWritesWhatChanged(t *testing.T) {
	const n, parts = 20, 4
	groups, slot := groupsOfOneSlot(n)
	fake, p, store := newOffsetsPartition(t)

	first, _ := offsetsTopicMove(t, store, p, slot)
	var want []string
	for _, g := range groups {
		commitGroup(t, first, g, map[int32]int64{0: 10, 1: 11, 2: 12, 3: 13})
		for part := range int32(parts) {
			want = append(want, fmt.Sprintf("%s/t/%d=%d", g, part, 10+part))
		}
	}
	slices.Sort(want)
	eventually(t, "every commit in the topic", func() bool { return slices.Equal(live(fake.records(t, 0)), want) })
	first.Stop(5 * time.Second)
	before := len(fake.records(t, 0))

	// The move: a new coordinator loads the same store.
	second, _ := offsetsTopicMove(t, store, p, slot)
	commitGroup(t, second, groups[0], map[int32]int64{0: 20}) // the one change
	eventually(t, "the new commit in the topic", func() bool {
		return slices.Contains(fake.records(t, before), groups[0]+"/t/0=20")
	})
	settle(t, second, p, groups)
	written := fake.records(t, before)
	t.Logf("a move of %d groups of %d offsets each wrote %d records to __consumer_offsets", n, parts, len(written))
	if !slices.Equal(written, []string{groups[0] + "/t/0=20"}) {
		t.Fatalf("the move wrote %d records, want only the new commit: %v", len(written), written)
	}
}

// TestOffsetsTopicTombstonesAfterMove: a group deleted and an offset
// deleted while the coordinator could not write __consumer_offsets (the
// partition refused its writes until it stopped) are tombstoned there by
// the next coordinator: the deleted group's keys by the manager (no actor
// loads a deleted group), the offset by its group's actor. The new leader
// of the partition is not ready at first: the read is tried again at the
// manager's view polls.
func TestOffsetsTopicTombstonesAfterMove(t *testing.T) {
	groups, slot := groupsOfOneSlot(3)
	gone, kept, untouched := groups[0], groups[1], groups[2]
	fake, p, store := newOffsetsPartition(t)

	first, _ := offsetsTopicMove(t, store, p, slot)
	for _, g := range groups {
		commitGroup(t, first, g, map[int32]int64{0: 5, 1: 6})
	}
	eventually(t, "every commit in the topic", func() bool { return len(live(fake.records(t, 0))) == 6 })
	fake.mu.Lock()
	fake.refuse = true
	fake.mu.Unlock()
	if r := await(t, callGroup(first, gone, &messages.GroupDelete{})).(kmsg.DeleteGroupsResponseGroup); r.ErrorCode != 0 {
		t.Fatalf("delete %s: %s", gone, code(r.ErrorCode))
	}
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = kept
	dt := kmsg.NewOffsetDeleteRequestTopic()
	dt.Topic = "t"
	dp := kmsg.NewOffsetDeleteRequestTopicPartition()
	dp.Partition = 1
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	if r := await(t, callGroup(first, kept, del)).(*kmsg.OffsetDeleteResponse); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("offset delete: %+v", r)
	}
	first.Stop(5 * time.Second)
	fake.drain(t, p)
	before := len(fake.records(t, 0))
	fake.mu.Lock()
	fake.refuse, fake.notReady = false, 3
	fake.mu.Unlock()

	second, clk := offsetsTopicMove(t, store, p, slot)
	want := []string{kept + "/t/0=5", untouched + "/t/0=5", untouched + "/t/1=6"}
	slices.Sort(want)
	eventually(t, "the deletions tombstoned in the topic", func() bool {
		clk.Advance(testViewPoll) // the next view poll
		return slices.Equal(live(fake.records(t, 0)), want)
	})
	fake.mu.Lock()
	if fake.notReady != 0 {
		t.Errorf("the partition was asked its end %d times fewer than it answered not ready", fake.notReady)
	}
	fake.mu.Unlock()
	settle(t, second, p, []string{kept, untouched})
	written := fake.records(t, before)
	slices.Sort(written)
	wantWritten := []string{gone + "/t/0=tombstone", gone + "/t/1=tombstone", kept + "/t/1=tombstone"}
	slices.Sort(wantWritten)
	if !slices.Equal(written, wantWritten) {
		t.Fatalf("the new coordinator wrote %v, want %v", written, wantWritten)
	}
}
