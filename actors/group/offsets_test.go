package group

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/groupstore"
)

var topics = fakeTopics{"t": 4, "u": 2}

func commitReq(version int16, gen int32, member string, offs map[string]map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation, r.MemberID = version, "g", gen, member
	for topic, ps := range offs {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, topicID(topic)
		for p, o := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, o
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// commit commits and applies (as if persisted) and returns the response.
func commit(g *Group, now time.Time, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	pc := g.OffsetCommit(now, req, topics)
	g.Apply(pc)
	return pc.Response
}

func commitCode(g *Group, now time.Time, version int16, gen int32, member string) int16 {
	r := commit(g, now, commitReq(version, gen, member, map[string]map[int32]int64{"t": {0: 5}}))
	return r.Topics[0].Partitions[0].ErrorCode
}

// txnCommitCode is commitCode for a TxnOffsetCommit (its OffsetCommit v7 form).
func txnCommitCode(g *Group, now time.Time, gen int32, member string) int16 {
	pc := g.TxnOffsetCommit(now, commitReq(7, gen, member, map[string]map[int32]int64{"t": {0: 5}}), topics)
	return pc.Response.Topics[0].Partitions[0].ErrorCode
}

func fetch(g *Group, now time.Time, topicsReq []messages.GroupTopic) kmsg.OffsetFetchResponseGroup {
	return g.FetchOffsets(now, &messages.GroupFetchOffsets{Version: 8, Topics: topicsReq, MemberEpoch: -1}, topics)
}

func offsetOf(r kmsg.OffsetFetchResponseGroup, topic string, p int32) (int64, int16) {
	for _, t := range r.Topics {
		if t.Topic == topic {
			for _, rp := range t.Partitions {
				if rp.Partition == p {
					return rp.Offset, rp.ErrorCode
				}
			}
		}
	}
	return -99, -99
}

func TestSimpleCommitAndFetch(t *testing.T) {
	g := New("g", testConfig())
	// OffsetFetch of a group that does not exist: -1, no error.
	r := fetch(g, t0, []messages.GroupTopic{{Topic: "t", Partitions: []int32{0, 1}}})
	if o, c := offsetOf(r, "t", 1); r.ErrorCode != 0 || o != -1 || c != 0 {
		t.Fatalf("unknown group fetch: group %s offset %d code %s", code(r.ErrorCode), o, code(c))
	}
	if g.Exists() {
		t.Fatal("a fetch created the group")
	}
	// Generation >= 0 to a group that does not exist.
	if c := commitCode(g, t0, 8, 3, "m"); c != kerr.IllegalGeneration.Code {
		t.Fatalf("v8 commit to unknown group: %s", code(c))
	}
	if c := commitCode(g, t0, 9, 3, "m"); c != kerr.GroupIDNotFound.Code {
		t.Fatalf("v9 commit to unknown group: %s", code(c))
	}
	// A non-member commit (generation -1) creates a simple group.
	resp := commit(g, t0, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 10, 3: 30, 9: 90}, "nope": {0: 1}}))
	got := map[string]map[int32]int16{}
	for _, rt := range resp.Topics {
		got[rt.Topic] = map[int32]int16{}
		for _, rp := range rt.Partitions {
			got[rt.Topic][rp.Partition] = rp.ErrorCode
		}
	}
	if got["t"][0] != 0 || got["t"][3] != 0 || got["t"][9] != kerr.UnknownTopicOrPartition.Code || got["nope"][0] != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("commit codes %v", got)
	}
	if g.Kind() != KindClassic || g.State() != Empty || !g.Exists() {
		t.Fatalf("kind %v state %v", g.Kind(), g.State())
	}
	r = fetch(g, t0, nil)
	if o, _ := offsetOf(r, "t", 3); o != 30 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 2 {
		t.Fatalf("fetch all: %+v", r.Topics)
	}
	if o, _ := offsetOf(fetch(g, t0, []messages.GroupTopic{{Topic: "t", Partitions: []int32{1}}}), "t", 1); o != -1 {
		t.Fatalf("uncommitted partition: %d", o)
	}
	// v10: by topic id.
	f := g.FetchOffsets(t0, &messages.GroupFetchOffsets{Version: 10, MemberEpoch: -1, Topics: []messages.GroupTopic{
		{TopicID: topicID("t"), Partitions: []int32{0}}, {TopicID: topicID("zz"), Partitions: []int32{0}}}}, topics)
	if f.Topics[0].Partitions[0].Offset != 10 || f.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("v10 fetch %+v", f.Topics)
	}
	// Metadata too large.
	big := commitReq(8, -1, "", map[string]map[int32]int64{"t": {1: 1}})
	meta := string(make([]byte, 5000))
	big.Topics[0].Partitions[0].Metadata = &meta
	if c := commit(g, t0, big).Topics[0].Partitions[0].ErrorCode; c != kerr.OffsetMetadataTooLarge.Code {
		t.Fatalf("large metadata: %s", code(c))
	}
}

func TestRequireStableSeesInflightCommits(t *testing.T) {
	g := New("g", testConfig())
	pc := g.OffsetCommit(t0, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 10}}), topics)
	f := g.FetchOffsets(t0, &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1, RequireStable: true,
		Topics: []messages.GroupTopic{{Topic: "t", Partitions: []int32{0}}}}, topics)
	if _, c := offsetOf(f, "t", 0); c != kerr.UnstableOffsetCommit.Code {
		t.Fatalf("require_stable during a pending commit: %s", code(c))
	}
	g.Apply(pc)
	f = g.FetchOffsets(t0, &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1, RequireStable: true,
		Topics: []messages.GroupTopic{{Topic: "t", Partitions: []int32{0}}}}, topics)
	if o, c := offsetOf(f, "t", 0); c != 0 || o != 10 {
		t.Fatalf("after commit: %d %s", o, code(c))
	}
	// A failed write leaves nothing behind.
	pc = g.OffsetCommit(t0, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 11}}), topics)
	g.Fail(pc, kerr.CoordinatorNotAvailable.Code)
	if pc.Response.Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorNotAvailable.Code || g.HasOffsets() && g.offsets[groupstore.TP{Topic: "t"}].Offset != 10 {
		t.Fatal("failed commit applied")
	}
}

func TestDeleteGroupsAndOffsetDelete(t *testing.T) {
	g, ids, now := stableGroup(t, 1)
	commit(g, now, commitReq(8, 1, ids[0], map[string]map[int32]int64{"t": {0: 1}, "u": {0: 2}}))
	if c := g.Delete(now); c != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a live group: %s", code(c))
	}
	// OffsetDelete on a live classic consumer group: subscribed topics are
	// protected. Members subscribe through ConsumerMemberMetadata.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	for _, tn := range []string{"t", "u"} {
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = tn
		rt.Partitions = []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}
		od.Topics = append(od.Topics, rt)
	}
	g.subscribed = map[string]bool{"t": true}
	resp, recs := g.OffsetDelete(now, od, topics)
	if resp.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code || resp.Topics[1].Partitions[0].ErrorCode != 0 || len(recs) != 1 {
		t.Fatalf("offset delete: %+v", resp.Topics)
	}
	g.ApplyDelete(recs)
	if o, _ := offsetOf(fetch(g, now, []messages.GroupTopic{{Topic: "u", Partitions: []int32{0}}}), "u", 0); o != -1 {
		t.Fatalf("deleted offset still fetched: %d", o)
	}
	// Leave, then delete.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version, lr.Group = 5, "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}}
	g.LeaveGroup(now, lr)
	if g.State() != Empty {
		t.Fatalf("state %v", g.State())
	}
	if c := g.Delete(now); c != 0 || g.State() != Dead {
		t.Fatalf("delete of an empty group: %s (state %v)", code(c), g.State())
	}
	if c := join(g, now, joinReq("", "m")).join(t).ErrorCode; c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("join while the group is being deleted: %s", code(c))
	}
	g.Deleted()
	if g.Exists() {
		t.Fatal("deleted group still exists")
	}
	if c := g.Delete(now); c != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete of a missing group: %s", code(c))
	}
	if d := g.DescribeGroup(now, 5); d.State != "Dead" || d.ErrorCode != 0 {
		t.Fatalf("describe v5 of a missing group: %+v", d)
	}
	if d := g.DescribeGroup(now, 6); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe v6 of a missing group: %+v", d)
	}
}

func TestOffsetRetention(t *testing.T) {
	hour := time.Hour
	t.Run("simple group expires by commit time", func(t *testing.T) {
		g := New("g", testConfig())
		commit(g, t0, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 1}}))
		commit(g, t0.Add(30*time.Minute), commitReq(8, -1, "", map[string]map[int32]int64{"t": {1: 1}}))
		if recs := g.Expire(t0.Add(hour - time.Second)); len(recs) != 0 {
			t.Fatalf("expired early: %v", recs)
		}
		recs := g.Expire(t0.Add(hour))
		if len(recs) != 1 || recs[0].TP.Partition != 0 || !recs[0].Delete {
			t.Fatalf("expired %v", recs)
		}
		g.Expire(t0.Add(2 * hour))
		if g.HasOffsets() || !g.Idle() {
			t.Fatal("offsets left")
		}
	})
	t.Run("consumer group keeps offsets while it has members", func(t *testing.T) {
		g, ids, now := stableGroup(t, 1)
		commit(g, now, commitReq(8, 1, ids[0], map[string]map[int32]int64{"t": {0: 1}}))
		if recs := g.Expire(now.Add(10 * hour)); len(recs) != 0 {
			t.Fatalf("expired offsets of a group with members (metadata does not parse as a subscription): %v", recs)
		}
	})
	t.Run("empty group expires retention after it emptied", func(t *testing.T) {
		g, ids, now := stableGroup(t, 1)
		commit(g, now, commitReq(8, 1, ids[0], map[string]map[int32]int64{"t": {0: 1}}))
		left := now.Add(5 * hour)
		lr := kmsg.NewPtrLeaveGroupRequest()
		lr.Version, lr.Group, lr.Members = 5, "g", []kmsg.LeaveGroupRequestMember{{MemberID: ids[0]}}
		g.LeaveGroup(left, lr)
		g.Tick(left)
		if g.State() != Empty {
			t.Fatalf("state %v", g.State())
		}
		if recs := g.Expire(left.Add(hour - time.Second)); len(recs) != 0 {
			t.Fatal("expired before the group was empty for the retention period")
		}
		if recs := g.Expire(left.Add(hour)); len(recs) != 1 {
			t.Fatalf("expired %v", recs)
		}
	})
	t.Run("v2-v4 explicit retention", func(t *testing.T) {
		g := New("g", testConfig())
		r := commitReq(2, -1, "", map[string]map[int32]int64{"t": {0: 1}})
		r.RetentionTimeMillis = 1000
		commit(g, t0, r)
		if recs := g.Expire(t0.Add(time.Second)); len(recs) != 1 {
			t.Fatalf("explicit retention: %v", recs)
		}
	})
	t.Run("reloaded group with members at the crash restarts the clock", func(t *testing.T) {
		g := New("g", testConfig())
		g.Load(t0, groupstore.State{
			Offsets: map[groupstore.TP]groupstore.Commit{{Topic: "t"}: {Offset: 1, CommitTime: t0.Add(-10 * hour).UnixMilli(), ExpireTime: -1}},
			Meta:    &groupstore.Meta{Kind: "classic", ProtocolType: "consumer"},
		})
		if recs := g.Expire(t0.Add(hour - time.Second)); len(recs) != 0 {
			t.Fatal("expired offsets of a group that had members when its coordinator stopped")
		}
		if recs := g.Expire(t0.Add(hour)); len(recs) != 1 {
			t.Fatal("did not expire")
		}
	})
}

func fetchAs(member string, epoch int32) *messages.GroupFetchOffsets {
	return &messages.GroupFetchOffsets{Version: 9, MemberID: &member, MemberEpoch: epoch}
}

// recreatedTopics is topics after "t" was deleted and created again (a new
// id under the same name) and "u" deleted; complete says whether the view
// can tell.
type recreatedTopics struct {
	fakeTopics
	complete bool
}

func (r recreatedTopics) ByName(name string) (TopicInfo, bool) {
	ti, ok := r.fakeTopics.ByName(name)
	if name == "t" {
		ti.ID = topicID("t, again")
	}
	return ti, ok
}

func (r recreatedTopics) Complete() bool { return r.complete }

// TestOffsetsOfDeletedTopics: as in Kafka, a deleted topic's committed
// offsets are gone: OffsetFetch answers -1 for them at once (also for a
// topic created again under the same name, which must not resume at the old
// topic's offsets), and the cleanup removes them with tombstones. A commit
// stored before commits carried topic ids is kept while its topic exists,
// and a view that cannot tell (no assignment yet) judges nothing.
func TestOffsetsOfDeletedTopics(t *testing.T) {
	g := New("g", testConfig())
	commit(g, t0, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 10, 1: 11}, "u": {0: 5}}))
	// A commit from before topic ids (zero id) to "t" partition 2.
	g.offsets[groupstore.TP{Topic: "t", Partition: 2}] = groupstore.Commit{Offset: 12, LeaderEpoch: -1, ExpireTime: -1}
	after := recreatedTopics{fakeTopics{"t": 4}, true}
	fetchAfter := func(topics Topics, req []messages.GroupTopic) kmsg.OffsetFetchResponseGroup {
		return g.FetchOffsets(t0, &messages.GroupFetchOffsets{Version: 8, Topics: req, MemberEpoch: -1}, topics)
	}
	r := fetchAfter(after, []messages.GroupTopic{{Topic: "t", Partitions: []int32{0, 2}}, {Topic: "u", Partitions: []int32{0}}})
	if o, _ := offsetOf(r, "t", 0); o != -1 {
		t.Fatalf("offset of the old topic t served to the new one: %d", o)
	}
	if o, _ := offsetOf(r, "u", 0); o != -1 {
		t.Fatalf("offset of deleted topic u: %d", o)
	}
	if o, _ := offsetOf(r, "t", 2); o != 12 {
		t.Fatalf("an id-less commit of an existing topic: %d, want 12", o)
	}
	if all := fetchAfter(after, nil); len(all.Topics) != 1 || len(all.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch of all offsets lists deleted topics: %+v", all.Topics)
	}
	// A view that cannot tell hides and removes nothing.
	blind := recreatedTopics{fakeTopics{}, false}
	if o, _ := offsetOf(fetchAfter(blind, []messages.GroupTopic{{Topic: "u", Partitions: []int32{0}}}), "u", 0); o != 5 {
		t.Fatalf("offset hidden by a view without an assignment: %d", o)
	}
	if recs := g.DropDeletedTopics(blind); len(recs) != 0 {
		t.Fatalf("a view without an assignment removed %v", recs)
	}
	recs := g.DropDeletedTopics(after)
	var got []string
	for _, rec := range recs {
		if !rec.Delete {
			t.Fatalf("not a tombstone: %+v", rec)
		}
		got = append(got, fmt.Sprintf("%s-%d", rec.TP.Topic, rec.TP.Partition))
	}
	if strings.Join(got, ",") != "t-0,t-1,u-0" {
		t.Fatalf("tombstones %v, want t-0,t-1,u-0", got)
	}
	if len(g.offsets) != 1 {
		t.Fatalf("offsets left: %v", g.offsets)
	}
	// A commit to the new topic is its own.
	pc := g.OffsetCommit(t0, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 3}}), after)
	g.Apply(pc)
	if o, _ := offsetOf(fetchAfter(after, []messages.GroupTopic{{Topic: "t", Partitions: []int32{0}}}), "t", 0); o != 3 {
		t.Fatalf("commit to the new topic: %d, want 3", o)
	}
}

// TestStampTopicIDs: a commit stored without a topic id (by an older kaas)
// gets the id of its topic as it is now, once, and from then on a deletion
// and re-creation of the topic hides it like any other commit.
func TestStampTopicIDs(t *testing.T) {
	g := New("g", testConfig())
	commit(g, t0, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 10}}))
	old := groupstore.Commit{Offset: 12, LeaderEpoch: -1, ExpireTime: -1}
	g.offsets[groupstore.TP{Topic: "t", Partition: 2}] = old
	g.offsets[groupstore.TP{Topic: "u", Partition: 0}] = old // u is gone
	now := recreatedTopics{fakeTopics{"t": 4}, true}
	now.complete = false
	if recs := g.StampTopicIDs(now); len(recs) != 0 {
		t.Fatalf("a view that cannot tell stamped %v", recs)
	}
	before := fakeTopics{"t": 4}
	recs := g.StampTopicIDs(before)
	if len(recs) != 1 || recs[0].TP != (groupstore.TP{Topic: "t", Partition: 2}) || recs[0].Commit == nil ||
		recs[0].Commit.TopicID != topicID("t") || recs[0].Commit.Offset != 12 {
		t.Fatalf("stamped %+v, want t-2 at offset 12 with t's id", recs)
	}
	if again := g.StampTopicIDs(before); len(again) != 0 {
		t.Fatalf("stamped twice: %+v", again)
	}
	// t deleted and created again: the stamped commit is the old topic's.
	r := g.FetchOffsets(t0, &messages.GroupFetchOffsets{Version: 8, Topics: []messages.GroupTopic{{Topic: "t", Partitions: []int32{2}}}, MemberEpoch: -1},
		recreatedTopics{fakeTopics{"t": 4}, true})
	if o, _ := offsetOf(r, "t", 2); o != -1 {
		t.Fatalf("the old topic's commit served to the new one: %d", o)
	}
	// A commit in flight is left to its own write.
	g.offsets[groupstore.TP{Topic: "t", Partition: 3}] = old
	g.inflight[groupstore.TP{Topic: "t", Partition: 3}] = 1
	if recs := g.StampTopicIDs(before); len(recs) != 0 {
		t.Fatalf("stamped a commit in flight: %+v", recs)
	}
}
