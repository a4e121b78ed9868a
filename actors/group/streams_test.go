package group

import (
	"testing"
	"time"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/messages"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsJoin is a join of member id to a streams group whose one
// subtopology reads topic t.
func streamsJoin(id string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", id, 30000
	req.ProcessID = strp("process-" + id)
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID, sub.SourceTopics = "0", []string{"t"}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
	req.Topology = &top
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

// streamsBeat heartbeats member id at epoch reporting owned active tasks
// of subtopology "0".
func streamsBeat(id string, epoch int32, owned ...int32) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = "g", id, epoch
	ti := kmsg.NewTaskIDs()
	ti.SubtopologyID, ti.Partitions = "0", owned
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{ti}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

// streamsMemberUntilTasks heartbeats a lone member (reporting what it was
// given) until it holds n active tasks and returns its epoch.
func streamsMemberUntilTasks(t *testing.T, g *Group, now time.Time, id string, n int) (time.Time, int32) {
	t.Helper()
	r := g.StreamsHeartbeat(now, client, streamsJoin(id), topics)
	var owned []int32
	for range 50 {
		if r.Response.ErrorCode != 0 {
			t.Fatalf("%s: %s %v", id, code(r.Response.ErrorCode), r.Response.ErrorMessage)
		}
		if r.Response.ActiveTasks != nil {
			owned = nil
			for _, ti := range r.Response.ActiveTasks {
				owned = append(owned, ti.Partitions...)
			}
		}
		if len(owned) == n {
			return now, r.Response.MemberEpoch
		}
		now = now.Add(time.Second)
		r = g.StreamsHeartbeat(now, client, streamsBeat(id, r.Response.MemberEpoch, owned...), topics)
	}
	t.Fatalf("%s never held %d tasks (holds %v)", id, n, owned)
	return now, 0
}

// TestStreamsGroupKinds: which groups a streams heartbeat may take (a new
// one, a classic one without members, keeping its offsets) and which
// answer GROUP_ID_NOT_FOUND; what the other protocols get from a streams
// group; and that an empty streams group turns classic for a JoinGroup.
func TestStreamsGroupKinds(t *testing.T) {
	g := New("g", testConfig())
	if r := g.StreamsHeartbeat(t0, client, streamsBeat("a", 3), topics); r.Response.ErrorCode != kerr.GroupIDNotFound.Code ||
		*r.Response.ErrorMessage != "Streams group g not found." {
		t.Fatalf("heartbeat to no group: %s %v", code(r.Response.ErrorCode), r.Response.ErrorMessage)
	}

	// A consumer group's offsets and members keep it a consumer group.
	c := New("g", testConfig())
	cr := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cr.Group, cr.MemberID, cr.RebalanceTimeoutMillis, cr.SubscribedTopicNames = "g", "c", 30000, []string{"t"}
	cr.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := c.ConsumerHeartbeat(t0, client, cr, topics); r.ErrorCode != 0 {
		t.Fatalf("consumer join: %s", code(r.ErrorCode))
	}
	if r := c.StreamsHeartbeat(t0, client, streamsJoin("a"), topics); r.Response.ErrorCode != kerr.GroupIDNotFound.Code ||
		*r.Response.ErrorMessage != "Group g is not a streams group." {
		t.Fatalf("streams join of a consumer group: %s %v", code(r.Response.ErrorCode), r.Response.ErrorMessage)
	}

	// A classic group that only stores offsets becomes a streams group
	// and keeps them.
	if c := commitCode(g, t0, 8, -1, ""); c != 0 {
		t.Fatalf("simple commit: %s", code(c))
	}
	now, epoch := streamsMemberUntilTasks(t, g, t0, "a", 4)
	if g.Kind() != KindStreams || g.Summary().ProtocolType != "streams" || g.Kind().String() != "streams" {
		t.Fatalf("kind %v protocol type %q", g.Kind(), g.Summary().ProtocolType)
	}
	fetched := g.FetchOffsets(now, &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1}, topics)
	if len(fetched.Topics) != 1 || fetched.Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("offsets after becoming a streams group: %+v", fetched.Topics)
	}

	// The other protocols do not take a streams group with members.
	if r := g.ConsumerHeartbeat(now, client, cr, topics); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat to a streams group: %s", code(r.ErrorCode))
	}
	sr := kmsg.NewPtrShareGroupHeartbeatRequest()
	sr.GroupID, sr.MemberID, sr.SubscribedTopicNames = "g", "s", []string{"t"}
	if r := g.ShareHeartbeat(now, client, sr, topics); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("share heartbeat to a streams group: %s", code(r.ErrorCode))
	}
	if b := join(g, now, joinReq("", "x")); b.join(t).ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup to a streams group with members: %s", code(b.join(t).ErrorCode))
	}
	if d := g.DescribeGroup(now, 6); d.ErrorCode != kerr.GroupIDNotFound.Code || d.State != "Dead" {
		t.Fatalf("DescribeGroups of a streams group: %+v", d)
	}
	if c := g.Delete(now); c != kerr.NonEmptyGroup.Code {
		t.Fatalf("DeleteGroups of a streams group with members: %s", code(c))
	}

	// Commits: a member at its epoch from v9, not before; admins only
	// while the group is empty.
	if c := commitCode(g, now, 9, epoch, "a"); c != 0 {
		t.Fatalf("member commit v9: %s", code(c))
	}
	if c := commitCode(g, now, 8, epoch, "a"); c != kerr.UnsupportedVersion.Code {
		t.Fatalf("member commit v8: %s", code(c))
	}
	if c := commitCode(g, now, 9, -1, ""); c == 0 {
		t.Fatalf("admin commit to a streams group with members accepted")
	}
	if c := txnCommitCode(g, now, -1, ""); c != 0 {
		t.Fatalf("transactional commit naming no member: %s", code(c))
	}

	// The member leaves; a classic member may then take the group over,
	// offsets kept.
	leave := streamsBeat("a", -1)
	leave.ActiveTasks, leave.StandbyTasks, leave.WarmupTasks = nil, nil, nil
	if r := g.StreamsHeartbeat(now, client, leave, topics); r.Response.ErrorCode != 0 || r.Response.MemberEpoch != -1 {
		t.Fatalf("leave: %s epoch %d", code(r.Response.ErrorCode), r.Response.MemberEpoch)
	}
	if g.State() != Empty || g.HasMembers() {
		t.Fatalf("after the leave: state %v", g.State())
	}
	if b := join(g, now, joinReq("", "x")); b.join(t).ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("JoinGroup to an empty streams group: %s", code(b.join(t).ErrorCode))
	}
	if g.Kind() != KindClassic || g.streams != nil {
		t.Fatalf("after a classic join: kind %v", g.Kind())
	}
	fetched = g.FetchOffsets(now, &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1}, topics)
	if len(fetched.Topics) != 1 || fetched.Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("offsets after turning classic: %+v", fetched.Topics)
	}
}

// TestStreamsMembershipSurvivesMove: a streams group restored on a new
// coordinator goes on at its epochs with its tasks; the group's configs
// reach it (streams.heartbeat.interval.ms).
func TestStreamsMembershipSurvivesMove(t *testing.T) {
	g := New("g", testConfig())
	now, epoch := streamsMemberUntilTasks(t, g, t0, "a", 4)
	if g.State() != Stable {
		t.Fatalf("state %v", g.State())
	}
	later := now.Add(time.Hour)
	n := moved(t, g, later)
	if n.Kind() != KindStreams || n.State() != Stable {
		t.Fatalf("restored: kind %v state %v", n.Kind(), n.State())
	}
	n.SetGroupConfigs(map[string]string{"streams.heartbeat.interval.ms": "7000"})
	r := n.StreamsHeartbeat(later, client, streamsBeat("a", epoch, 0, 1, 2, 3), topics)
	if r.Response.ErrorCode != 0 || r.Response.MemberEpoch != epoch || r.Response.ActiveTasks != nil ||
		r.Response.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("a after the move: %s epoch %d (was %d), tasks %v, interval %d", code(r.Response.ErrorCode),
			r.Response.MemberEpoch, epoch, r.Response.ActiveTasks, r.Response.HeartbeatIntervalMillis)
	}
	d := n.DescribeStreamsGroup(later, topics)
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].ProcessID != "process-a" {
		t.Fatalf("describe after the move: %+v", d)
	}
	// The session starts afresh at the restore: 45 s later the member is
	// gone and the group empty.
	n.Tick(later.Add(46 * time.Second))
	if n.HasMembers() || n.State() != Empty {
		t.Fatalf("after the session: state %v", n.State())
	}
}

// TestCreationFailuresKeptTwoIntervals: a failed creation of an internal
// topic is named (with its error) for two heartbeat intervals, a later
// success or TOPIC_ALREADY_EXISTS forgets it.
func TestCreationFailuresKeptTwoIntervals(t *testing.T) {
	clk := clock.NewFake(t0)
	f := topicCreations{clock: clk}
	f.record([]messages.TopicResult{
		{Name: "app-a-changelog", ErrorCode: kerr.InvalidConfig.Code},
		{Name: "app-b-changelog", ErrorCode: kerr.PolicyViolation.Code},
		{Name: "app-c-changelog"},
	})
	names := []string{"app-a-changelog", "app-b-changelog", "app-c-changelog"}
	if got := f.recent(names, 10*time.Second); got != "app-a-changelog (INVALID_CONFIG), app-b-changelog (POLICY_VIOLATION)" {
		t.Fatalf("recent failures %q", got)
	}
	f.record([]messages.TopicResult{{Name: "app-b-changelog", ErrorCode: kerr.TopicAlreadyExists.Code}})
	clk.Advance(10 * time.Second)
	if got := f.recent(names, 10*time.Second); got != "app-a-changelog (INVALID_CONFIG)" {
		t.Fatalf("after b exists: %q", got)
	}
	clk.Advance(time.Millisecond)
	if got := f.recent(names, 10*time.Second); got != "" || len(f.failed) != 0 {
		t.Fatalf("after two intervals: %q (%d kept)", got, len(f.failed))
	}
}

// TestStreamsGroupOffsetsRetention: while a streams group has members the
// offsets of its topology's topics are kept past the retention; another
// topic's expire; once the group is empty the retention counts from then.
func TestStreamsGroupOffsetsRetention(t *testing.T) {
	g := New("g", testConfig()) // one hour's retention
	now, epoch := streamsMemberUntilTasks(t, g, t0, "a", 4)
	commit(g, now, commitReq(9, epoch, "a", map[string]map[int32]int64{"t": {0: 5}, "u": {0: 7}}))
	start := now
	for now.Before(start.Add(61 * time.Minute)) {
		now = now.Add(30 * time.Second)
		if r := g.StreamsHeartbeat(now, client, streamsBeat("a", epoch, 0, 1, 2, 3), topics); r.Response.ErrorCode != 0 {
			t.Fatalf("heartbeat: %s", code(r.Response.ErrorCode))
		}
	}
	recs := g.Expire(now)
	if len(recs) != 1 || recs[0].TP.Topic != "u" {
		t.Fatalf("expired %+v, want u's offset only", recs)
	}
	leave := streamsBeat("a", -1)
	leave.ActiveTasks, leave.StandbyTasks, leave.WarmupTasks = nil, nil, nil
	g.StreamsHeartbeat(now, client, leave, topics)
	if recs := g.Expire(now.Add(59 * time.Minute)); len(recs) != 0 {
		t.Fatalf("expired %+v within the hour after the group emptied", recs)
	}
	if recs := g.Expire(now.Add(61 * time.Minute)); len(recs) != 1 || recs[0].TP.Topic != "t" {
		t.Fatalf("expired %+v an hour after the group emptied, want t's offset", recs)
	}
}

// TestCreationsInFlightNotAskedAgain: a topic being created is not asked
// for again until its creation ends or two heartbeat intervals pass.
func TestCreationsInFlightNotAskedAgain(t *testing.T) {
	clk := clock.NewFake(t0)
	f := topicCreations{clock: clk}
	specs := []messages.TopicSpec{{Name: "a"}, {Name: "b"}}
	if got := f.start(specs, 10*time.Second); len(got) != 2 {
		t.Fatalf("first ask: %+v", got)
	}
	clk.Advance(5 * time.Second)
	if got := f.start(specs, 10*time.Second); len(got) != 0 {
		t.Fatalf("asked again while in flight: %+v", got)
	}
	f.record([]messages.TopicResult{{Name: "a", ErrorCode: kerr.InvalidConfig.Code}})
	if got := f.start(specs, 10*time.Second); len(got) != 1 || got[0].Name != "a" {
		t.Fatalf("after a's creation ended: %+v, want a", got)
	}
	clk.Advance(5*time.Second + time.Millisecond) // b asked for 10 s ago, a 5 s ago
	if got := f.start(specs, 10*time.Second); len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("two intervals after b was asked for, its reply unseen: %+v, want b", got)
	}
}
