package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStreamsGroupTasksMoveBetweenMembers runs an application over the
// streams rebalance protocol (streamsApp): its first member's heartbeat
// makes the broker create the changelog topic, a second member takes half
// the tasks once the first has revoked them (never two owners of a task),
// the group is described, listed and kept from deletion while it has
// members, and when one member leaves the other gets every task. Every
// record is processed and committed exactly once.
func TestStreamsGroupTasksMoveBetweenMembers(t *testing.T) {
	_, addr := testBroker(t)
	const group, source = "wordcount", "words"
	createTopic(t, addr, source, 4, nil)
	produceKeys(t, addr, source, 0, 200)
	app := newStreamsApp(t, addr, group, source)
	a, b := app.member("a"), app.member("b")
	ctx := ctxT(t, 120*time.Second)

	// Kafka's internal topics are refused in a topology.
	bad := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	badTop := app.topology
	badTop.Subtopologies = slices.Clone(badTop.Subtopologies)
	badTop.Subtopologies[0].SourceTopics = []string{source, "__consumer_offsets"}
	bad.Group, bad.MemberID, bad.RebalanceTimeoutMillis, bad.Topology = group, "bad", 30000, &badTop
	bad.ActiveTasks, bad.StandbyTasks, bad.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	if r, err := streamsHeartbeat(ctx, a.hb, bad); err != nil || r.ErrorCode != kerr.StreamsInvalidTopology.Code {
		t.Fatalf("a topology reading __consumer_offsets: %v %+v, want STREAMS_INVALID_TOPOLOGY", err, r)
	}

	// The first heartbeat finds no changelog topic: the member is told so
	// and the broker creates it, with the source topic's partitions.
	resp, err := a.heartbeat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(a.statuses, 3) { // MISSING_INTERNAL_TOPICS
		t.Fatalf("first heartbeat statuses %v, want MISSING_INTERNAL_TOPICS (3); response %+v", a.statuses, resp)
	}
	adm := newAdmin(t, addr)
	app.run(ctx, []*streamsMember{a}, func() bool { return len(a.owned) == 4 })
	td, err := adm.ListTopics(ctx, streamsChangelog(group))
	if err != nil || td.Error() != nil || len(td[streamsChangelog(group)].Partitions) != 4 {
		t.Fatalf("changelog topic: %v %v %+v", err, td.Error(), td)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, streamsChangelog(group))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := rc.On(streamsChangelog(group), nil); err != nil || !hasConfig(c, "cleanup.policy", "compact") {
		t.Fatalf("changelog configs: %v %+v", err, c)
	}

	app.run(ctx, []*streamsMember{a}, func() bool { return app.count() == 200 })

	// A second member: the tasks are split once a has revoked two.
	app.run(ctx, []*streamsMember{a, b}, func() bool {
		return len(a.owned) == 2 && len(b.owned) == 2 && a.epoch == b.epoch
	})
	produceKeys(t, addr, source, 200, 400)
	app.run(ctx, []*streamsMember{a, b}, func() bool { return app.count() == 400 })

	d := describeStreamsGroup(t, a.hb, group)
	if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 2 || d.Topology == nil ||
		len(d.Topology.Subtopologies) != 1 || !slices.Equal(d.Topology.Subtopologies[0].SourceTopics, []string{source}) {
		t.Fatalf("describe: %+v", d)
	}
	for _, dm := range d.Members {
		n := 0
		for _, ti := range dm.Assignment.ActiveTasks {
			n += len(ti.Partitions)
		}
		if n != 2 || dm.ProcessID != "process-"+dm.MemberID || dm.MemberEpoch != d.Epoch {
			t.Fatalf("describe member: %+v (ownership %s)", dm, ownership(a, b))
		}
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := groups[group]; !ok || g.GroupType != "streams" || g.State != "Stable" {
		t.Fatalf("ListGroups shows %s as %+v, want a Stable streams group", group, g)
	}
	if dg, _ := adm.DeleteGroup(ctx, group); !errors.Is(dg.Err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a streams group with members: %v, want NON_EMPTY_GROUP", dg.Err)
	}
	// The consumer protocol cannot take the group over.
	ch := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	ch.Group, ch.MemberID, ch.RebalanceTimeoutMillis, ch.SubscribedTopicNames = group, "c", 30000, []string{source}
	ch.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r, err := ch.RequestWith(ctx, a.hb); err != nil || r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("ConsumerGroupHeartbeat to a streams group: %v %+v", err, r)
	}

	// a leaves: b ends up with every task.
	if err := a.leave(ctx); err != nil {
		t.Fatal(err)
	}
	produceKeys(t, addr, source, 400, 500)
	app.run(ctx, []*streamsMember{b}, func() bool { return len(b.owned) == 4 && app.count() == 500 })
	for _, k := range keysUpTo(500) {
		if n := app.processed[k]; n != 1 {
			t.Fatalf("record %s processed and committed %d times, want once", k, n)
		}
	}
	ends, err := adm.ListEndOffsets(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := committed.Lookup(source, e.Partition); !ok || o.At != e.Offset {
			t.Errorf("partition %d: committed %+v, end %d", e.Partition, o, e.Offset)
		}
	})

	// Empty, the group can be deleted, and its offsets go with it.
	if err := b.leave(ctx); err != nil {
		t.Fatal(err)
	}
	if dg, err := adm.DeleteGroup(ctx, group); err != nil || dg.Err != nil {
		t.Fatalf("deleting the empty streams group: %v %v", err, dg.Err)
	}
	if d := describeStreamsGroup(t, a.hb, group); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe after delete: %+v", d)
	}
}

func (a *streamsApp) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.processed)
}

func describeStreamsGroup(t *testing.T, cl *kgo.Client, group string) kmsg.StreamsGroupDescribeResponseGroup {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	r, err := coordinatorRequest(ctxT(t, 10*time.Second), cl, group, req)
	if err != nil {
		t.Fatalf("StreamsGroupDescribe: %v", err)
	}
	resp := r.(*kmsg.StreamsGroupDescribeResponse)
	if len(resp.Groups) != 1 {
		t.Fatalf("StreamsGroupDescribe: %v %+v", err, resp)
	}
	return resp.Groups[0]
}

// TestStreamsGroupMembershipSurvivesRestart: with --data-dir a streams
// group's members, epochs, tasks and topology are saved beside its offsets,
// so a broker restart does not rebalance it: after the restart both members
// heartbeat on at their epochs with their tasks and process new records.
func TestStreamsGroupMembershipSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir}
	_, addr, stop := startTestBroker(t, args...)
	const group, source = "restarted-app", "restarted-words"
	createTopic(t, addr, source, 4, nil)
	produceKeys(t, addr, source, 0, 100)
	app := newStreamsApp(t, addr, group, source)
	a, b := app.member("a"), app.member("b")
	ctx := ctxT(t, 120*time.Second)
	app.run(ctx, []*streamsMember{a, b}, func() bool {
		return len(a.owned) == 2 && len(b.owned) == 2 && a.epoch == b.epoch && app.count() == 100
	})
	before := describeStreamsGroup(t, a.hb, group)
	epochA, epochB, ownedA, ownedB := a.epoch, b.epoch, slices.Clone(a.owned), slices.Clone(b.owned)

	stop()
	startTestBroker(t, append(args, "--kafka-addr", addr)...) // the last --kafka-addr wins
	produceKeys(t, addr, source, 100, 200)
	app.run(ctx, []*streamsMember{a, b}, func() bool { return app.count() == 200 })
	if a.epoch != epochA || b.epoch != epochB || !slices.Equal(a.owned, ownedA) || !slices.Equal(b.owned, ownedB) {
		t.Fatalf("after the restart: epochs %d/%d tasks %v/%v, before %d/%d %v/%v",
			a.epoch, b.epoch, a.owned, b.owned, epochA, epochB, ownedA, ownedB)
	}
	after := describeStreamsGroup(t, a.hb, group)
	if after.State != "Stable" || after.Epoch != before.Epoch || len(after.Members) != 2 {
		t.Fatalf("after the restart: %+v, before %+v", after, before)
	}
	for _, k := range keysUpTo(200) {
		if n := app.processed[k]; n != 1 {
			t.Fatalf("record %s processed and committed %d times, want once", k, n)
		}
	}
}

// TestStreamsGroupACLs: with --authorizer=acl a streams member needs READ
// on its group and DESCRIBE on its topology's topics to join, and its
// internal topics are created for it only with CREATE on them (the
// status names those it may not create); StreamsGroupDescribe refuses a
// group whose topics the caller may not describe.
func TestStreamsGroupACLs(t *testing.T) {
	addr, _ := aclBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)
	const group, source = "acl-app", "acl-words"
	changelog := streamsChangelog(group)
	mustCreateACLs(t, adm, kadm.NewACLs().Clusters().Allow(anon).AllowHosts("*").Operations(kadm.OpCreate))
	createTopic(t, addr, source, 2, nil)
	mustDeleteACLs(t, adm, kadm.NewACLs().Clusters().Allow(anon).AllowHosts("*").Operations(kadm.OpCreate))

	app := newStreamsApp(t, addr, group, source)
	m := app.member("a")
	if _, err := m.heartbeat(ctx); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("join without READ on the group: %v", err)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Groups(group).Allow(anon).Operations(kadm.OpRead, kadm.OpDescribe))
	mustCreateACLs(t, adm, kadm.NewACLs().Topics(source).Allow(anon).Operations(kadm.OpDescribe, kadm.OpRead))
	if _, err := m.heartbeat(ctx); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("join without DESCRIBE on the changelog: %v", err)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics(changelog).Allow(anon).Operations(kadm.OpDescribe, kadm.OpWrite))
	resp, err := m.heartbeat(ctx)
	if err != nil {
		t.Fatal(err)
	}
	detail := ""
	for _, s := range resp.Status {
		if s.StatusCode == 3 {
			detail = s.StatusDetail
		}
	}
	if !strings.Contains(detail, "Unauthorized to CREATE on topics "+changelog+".") {
		t.Fatalf("MISSING_INTERNAL_TOPICS detail %q, want it to name %s", detail, changelog)
	}
	if td, err := newAdmin(t, addr).ListTopics(ctx, changelog); err != nil || td.Error() == nil {
		t.Fatalf("changelog created without CREATE on it: %v %v", err, td)
	}

	mustCreateACLs(t, adm, kadm.NewACLs().Topics(changelog).Allow(anon).Operations(kadm.OpCreate))
	app.run(ctx, []*streamsMember{m}, func() bool { return len(m.owned) == 2 })
	// (A fresh client: kgo answers Metadata from its cache for a while.)
	if td, err := newAdmin(t, addr).ListTopics(ctx, changelog); err != nil || td.Error() != nil {
		t.Fatalf("changelog not created with CREATE on it: %v %v", err, td)
	}
	if d := describeStreamsGroup(t, m.hb, group); d.ErrorCode != 0 || len(d.Members) != 1 {
		t.Fatalf("describe with DESCRIBE on the group and its topics: %+v", d)
	}
	// (WRITE and CREATE imply DESCRIBE, as in Kafka: all go.)
	if n := mustDeleteACLs(t, adm, kadm.NewACLs().Topics(changelog).Allow(anon).AllowHosts("*").
		Operations(kadm.OpDescribe, kadm.OpWrite, kadm.OpCreate)); n != 3 {
		t.Fatalf("deleted %d ACLs of the changelog, want 3", n)
	}
	if d := describeStreamsGroup(t, m.hb, group); d.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(d.Members) != 0 {
		t.Fatalf("describe without DESCRIBE on the changelog: %+v", d)
	}
}

// TestStreamsGroupSurvivesGroupActorKills: the actor of a stable streams
// group is stopped, poisoned and made to panic (--debug-chaos); each time
// the group comes back from what it saved (in memory here) and both
// members heartbeat on at their epochs with their tasks, processing new
// records.
func TestStreamsGroupSurvivesGroupActorKills(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, "--debug-chaos", "--http-addr", httpAddr, "--group-streams-initial-rebalance-delay", "0s")
	const group, source = "healed-app", "healed-words"
	createTopic(t, addr, source, 4, nil)
	app := newStreamsApp(t, addr, group, source)
	app.tolerant = true
	a, b := app.member("a"), app.member("b")
	ctx := ctxT(t, 120*time.Second)
	produceKeys(t, addr, source, 0, 50)
	app.run(ctx, []*streamsMember{a, b}, func() bool {
		return len(a.owned) == 2 && len(b.owned) == 2 && a.epoch == b.epoch && app.count() == 50
	})
	epochA, epochB, ownedA, ownedB := a.epoch, b.epoch, slices.Clone(a.owned), slices.Clone(b.owned)
	n := 50
	for _, how := range []string{"panic", "stop", "poison"} {
		body, err := chaosPost(httpAddr, "/debug/chaos/kill?kind=group&how="+how)
		if err != nil {
			t.Fatalf("kill the group actor (%s): %v", how, err)
		}
		t.Logf("%s: %s", how, body)
		produceKeys(t, addr, source, n, n+50)
		n += 50
		app.run(ctx, []*streamsMember{a, b}, func() bool { return app.count() == n })
		if a.epoch != epochA || b.epoch != epochB || !slices.Equal(a.owned, ownedA) || !slices.Equal(b.owned, ownedB) {
			t.Fatalf("after a %s: epochs %d/%d tasks %v/%v, before %d/%d %v/%v",
				how, a.epoch, b.epoch, a.owned, b.owned, epochA, epochB, ownedA, ownedB)
		}
	}
	if r := scrapeRestarts(t, httpAddr); r["group"] < 3 {
		t.Fatalf("group actor restarts %v, want 3", r)
	}
}

// TestStreamsGroupInternalTopicCreationFails: an internal topic the broker
// cannot create (the client sent a config no topic may have) stays
// missing, and the members' MISSING_INTERNAL_TOPICS status says why.
func TestStreamsGroupInternalTopicCreationFails(t *testing.T) {
	_, addr := testBroker(t)
	const group, source = "bad-config-app", "bad-config-words"
	createTopic(t, addr, source, 2, nil)
	app := newStreamsApp(t, addr, group, source)
	bogus := kmsg.NewTopicInfoConfig()
	bogus.Key, bogus.Value = "cleanup.policy", "sometimes"
	app.topology.Subtopologies[0].StateChangelogTopics[0].Configs = []kmsg.TopicInfoConfig{bogus}
	m := app.member("a")
	ctx := ctxT(t, 30*time.Second)
	want := "Creation failed: " + streamsChangelog(group) + " (INVALID_CONFIG)."
	waitUntil(t, 20*time.Second, "the status naming the failed creation", func() bool {
		resp, err := m.heartbeat(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range resp.Status {
			if s.StatusCode == 3 && strings.Contains(s.StatusDetail, want) {
				return true
			}
		}
		return false
	})
	if len(m.owned) != 0 {
		t.Fatalf("tasks %v given while the changelog is missing", m.owned)
	}
}
