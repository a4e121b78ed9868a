package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsResetJoinIdle joins group as a classic consumer member that never
// heartbeats afterwards: the member of a stopped application instance that
// the broker keeps until its session (a minute) times out.
func streamsResetJoinIdle(t *testing.T, ctx context.Context, cl *kgo.Client, group, topic string) string {
	t.Helper()
	meta := kmsg.ConsumerMemberMetadata{Topics: []string{topic}}
	join := func(member string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 60000, 60000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	jr := join("")
	if kerr.ErrorForCode(jr.ErrorCode) == kerr.MemberIDRequired {
		jr = join(jr.MemberID)
	}
	if err := kerr.ErrorForCode(jr.ErrorCode); err != nil {
		t.Fatalf("join %s: %v", group, err)
	}
	asg := kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: []int32{0, 1}}}}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = group, jr.Generation, jr.MemberID
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID, a.MemberAssignment = jr.MemberID, asg.AppendTo(nil)
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{a}
	sr, err := sync.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(sr.ErrorCode)
	}
	if err != nil {
		t.Fatalf("sync %s: %v", group, err)
	}
	return jr.MemberID
}

// TestStreamsApplicationResetTool runs `kaas streams-application-reset`
// against applications of classic consumer groups (offsets committed on an
// input topic, internal topics named after the application id): the
// offsets it commits and the topics it deletes checked with kadm, the dry
// run that changes nothing, the refusal of a group with a member (removed
// with --force) and of a streams group with a member, and bad input
// refused before any change.
func TestStreamsApplicationResetTool(t *testing.T) {
	_, addr := testBroker(t, "--group-streams-initial-rebalance-delay", "0")
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	const input, unrelated = "srt-in", "srt-unrelated"
	bs := []string{"streams-application-reset", "--bootstrap-server", addr}
	runTool := func(args ...string) (string, string, int) {
		t.Helper()
		return runKaas(t, append(append([]string{}, bs...), args...)...)
	}
	createTopic(t, addr, input, 2, nil)
	createTopic(t, addr, unrelated, 1, nil)
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 20 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: input, Partition: int32(i % 2), Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// app sets up an application: offsets 7 and 4 committed on the input
	// topic, and its changelog, repartition and a non-internal topic.
	internal := func(app string) []string {
		return []string{app + "-KSTREAM-AGGREGATE-0000000001-repartition", app + "-store-changelog"}
	}
	app := func(t *testing.T, id string) {
		t.Helper()
		for _, topic := range append(internal(id), id+"-notes") {
			createTopic(t, addr, topic, 1, nil)
		}
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: input, Partition: 0, At: 7, LeaderEpoch: -1})
		offs.Add(kadm.Offset{Topic: input, Partition: 1, At: 4, LeaderEpoch: -1})
		if r, err := adm.CommitOffsets(ctx, id, offs); err != nil || r.Error() != nil {
			t.Fatalf("commit: %v %v", err, r.Error())
		}
	}
	committed := func(t *testing.T, id string) map[int32]int64 {
		t.Helper()
		return consumerGroupsCommitted(t, ctx, adm, id, input)
	}
	exists := func(t *testing.T, topics ...string) []bool {
		t.Helper()
		// A new client each time: kgo answers Metadata from its cache
		// for a while, which would show a deleted topic as still there.
		tds, err := newAdmin(t, addr).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]bool, len(topics))
		for i, tp := range topics {
			out[i] = tds.Has(tp)
		}
		return out
	}
	// unchanged checks that the application's offsets and topics are as
	// app left them.
	unchanged := func(t *testing.T, id string) {
		t.Helper()
		if c := committed(t, id); !reflect.DeepEqual(c, map[int32]int64{0: 7, 1: 4}) {
			t.Errorf("offsets changed: %v", c)
		}
		if e := exists(t, append(internal(id), id+"-notes", unrelated)...); !reflect.DeepEqual(e, []bool{true, true, true, true}) {
			t.Errorf("topics %v exist: %v", append(internal(id), id+"-notes", unrelated), e)
		}
	}

	t.Run("ResetToEarliest", func(t *testing.T) {
		const id = "srt-app"
		app(t, id)
		out, errOut, code := runTool("--application-id", id, "--input-topics", input)
		want := "Reset-offsets for input topics [srt-in]\n" +
			"Following input topics offsets will be reset to (for consumer group srt-app)\n" +
			"Topic: srt-in Partition: 0 Offset: 0\n" +
			"Topic: srt-in Partition: 1 Offset: 0\n" +
			"Done.\n" +
			"Deleting inferred internal topics [srt-app-KSTREAM-AGGREGATE-0000000001-repartition, srt-app-store-changelog]\n" +
			"Done.\n"
		if code != 0 || out != want {
			t.Fatalf("exit %d, stderr %q\ngot:\n%s\nwant:\n%s", code, errOut, out, want)
		}
		if c := committed(t, id); !reflect.DeepEqual(c, map[int32]int64{0: 0, 1: 0}) {
			t.Errorf("offsets after reset: %v", c)
		}
		if e := exists(t, append(internal(id), id+"-notes", unrelated)...); !reflect.DeepEqual(e, []bool{false, false, true, true}) {
			t.Errorf("internal topics deleted, others kept: %v", e)
		}
	})

	t.Run("DryRun", func(t *testing.T) {
		const id = "srt-dry"
		app(t, id)
		out, _, code := runTool("--application-id", id, "--input-topics", input, "--to-offset", "100", "--dry-run")
		want := "----Dry run displays the actions which will be performed when running Streams Reset Tool----\n" +
			"Reset-offsets for input topics [srt-in]\n" +
			"Following input topics offsets will be reset to (for consumer group srt-dry)\n" +
			"New offset (100) is higher than latest offset. Value will be set to 10\n" +
			"New offset (100) is higher than latest offset. Value will be set to 10\n" +
			"Topic: srt-in Partition: 0 Offset: 10\n" +
			"Topic: srt-in Partition: 1 Offset: 10\n" +
			"Done.\n" +
			"Deleting inferred internal topics [srt-dry-KSTREAM-AGGREGATE-0000000001-repartition, srt-dry-store-changelog]\n" +
			"Done.\n"
		if code != 0 || out != want {
			t.Fatalf("exit %d\ngot:\n%s\nwant:\n%s", code, out, want)
		}
		unchanged(t, id)
	})

	t.Run("ShiftByAndSpecifiedInternalTopics", func(t *testing.T) {
		const id = "srt-shift"
		app(t, id)
		changelog := internal(id)[1]
		out, _, code := runTool("--application-id", id, "--input-topics", input, "--shift-by", "-2", "--internal-topics", changelog)
		if code != 0 || !strings.Contains(out, "Topic: srt-in Partition: 0 Offset: 5\nTopic: srt-in Partition: 1 Offset: 2\n") ||
			!strings.Contains(out, "Deleting specified internal topics ["+changelog+"]\nDone.\n") {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		if c := committed(t, id); !reflect.DeepEqual(c, map[int32]int64{0: 5, 1: 2}) {
			t.Errorf("offsets after --shift-by -2: %v", c)
		}
		if e := exists(t, append(internal(id), unrelated)...); !reflect.DeepEqual(e, []bool{true, false, true}) {
			t.Errorf("only the changelog deleted: %v", e)
		}
		// From a file: offsets out of a partition's log are clamped.
		plan := filepath.Join(t.TempDir(), "plan.csv")
		if err := os.WriteFile(plan, []byte("srt-in,0,3\nsrt-in,1,-5\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, _, code = runTool("--application-id", id, "--input-topics", input, "--from-file", plan, "--internal-topics", internal(id)[0])
		if code != 0 || !strings.Contains(out, "New offset (-5) is lower than earliest offset. Value will be set to 0\n") {
			t.Fatalf("--from-file: exit %d:\n%s", code, out)
		}
		if c := committed(t, id); !reflect.DeepEqual(c, map[int32]int64{0: 3, 1: 0}) {
			t.Errorf("offsets after --from-file: %v", c)
		}
	})

	t.Run("RefusedBeforeAnyChange", func(t *testing.T) {
		const id = "srt-bad"
		app(t, id)
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--input-topics", input + ",srt-missing"}, "--input-topics: Following input topics are not found: [srt-missing]"},
			{[]string{"--input-topics", input, "--internal-topics", unrelated}, "--internal-topics: Invalid topic specified in the --internal-topics option."},
			{[]string{"--input-topics", input, "--internal-topics", id + "-notes"}, "--internal-topics: Invalid topic specified"},
			{[]string{"--input-topics", input, "--to-earliest", "--to-latest"}, `option "[to-earliest]" can't be used with option "[to-latest]"`},
			{[]string{"--input-topics", input, "--from-file", "/nonexistent/plan.csv"}, "--from-file:"},
		} {
			out, errOut, code := runTool(append([]string{"--application-id", id}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("%q: exit %d, stderr %q, want %q", c.args, code, errOut, c.want)
			}
			if out != "" {
				t.Errorf("%q printed %q", c.args, out)
			}
		}
		if _, errOut, code := runKaas(t, "streams-application-reset", "--bootstrap-server", addr, "--input-topics", input); code == 0 || !strings.Contains(errOut, "[application-id]") {
			t.Errorf("without --application-id: exit %d, %q", code, errOut)
		}
		unchanged(t, id)
	})

	t.Run("GroupWithMember", func(t *testing.T) {
		const id = "srt-live"
		app(t, id)
		member := streamsResetJoinIdle(t, ctx, newClient(t, addr), id, input)
		_, errOut, code := runTool("--application-id", id, "--input-topics", input)
		if code == 0 || !strings.Contains(errOut, "Consumer group 'srt-live' is still active and has following members: [(memberId="+member) ||
			!strings.Contains(errOut, "You can use option '--force' to remove active members from the group.") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		unchanged(t, id)
		// A dry run with --force shows the removal and does not do it.
		if out, _, code := runTool("--application-id", id, "--input-topics", input, "--force", "--dry-run"); code != 0 ||
			!strings.HasPrefix(out, "Force deleting all active members in the group: srt-live\n----Dry run") {
			t.Fatalf("--force --dry-run: exit %d:\n%s", code, out)
		}
		if dg, err := adm.DescribeGroups(ctx, id); err != nil || len(dg[id].Members) != 1 {
			t.Fatalf("after --force --dry-run: %+v %v", dg[id], err)
		}
		unchanged(t, id)
		out, errOut, code := runTool("--application-id", id, "--input-topics", input, "--force")
		if code != 0 || !strings.HasPrefix(out, "Force deleting all active members in the group: srt-live\nReset-offsets") {
			t.Fatalf("--force: exit %d, stderr %q:\n%s", code, errOut, out)
		}
		if dg, err := adm.DescribeGroups(ctx, id); err != nil || len(dg[id].Members) != 0 {
			t.Errorf("after --force: %+v %v", dg[id], err)
		}
		if c := committed(t, id); !reflect.DeepEqual(c, map[int32]int64{0: 0, 1: 0}) {
			t.Errorf("offsets after --force: %v", c)
		}
		if e := exists(t, internal(id)...); !reflect.DeepEqual(e, []bool{false, false}) {
			t.Errorf("internal topics after --force: %v\n%s", e, out)
		}
	})

	// A member of the consumer protocol (KIP-848) is removed by --force
	// too: LeaveGroup removes it, as Kafka's coordinator does.
	t.Run("ConsumerProtocolMember", func(t *testing.T) {
		const id = "srt-848"
		app(t, id)
		beat := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		beat.Group, beat.MemberID, beat.MemberEpoch = id, "srt-848-member-000001", 0
		beat.RebalanceTimeoutMillis, beat.SubscribedTopicNames = 60_000, []string{input}
		beat.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if r, err := beat.RequestWith(ctx, newClient(t, addr)); err != nil || r.ErrorCode != 0 {
			t.Fatalf("join: %v %+v", err, r)
		}
		if _, errOut, code := runTool("--application-id", id, "--input-topics", input); code == 0 || !strings.Contains(errOut, "(memberId=srt-848-member-000001") {
			t.Fatalf("without --force: exit %d, stderr %q", code, errOut)
		}
		unchanged(t, id)
		out, errOut, code := runTool("--application-id", id, "--input-topics", input, "--force")
		if code != 0 || !strings.HasPrefix(out, "Force deleting all active members in the group: srt-848\nReset-offsets") {
			t.Fatalf("--force: exit %d, stderr %q:\n%s", code, errOut, out)
		}
		if dg, err := adm.DescribeConsumerGroups(ctx, id); err != nil || len(dg[id].Members) != 0 || dg[id].State != "Empty" {
			t.Errorf("after --force: %+v %v", dg[id], err)
		}
		if c := committed(t, id); !reflect.DeepEqual(c, map[int32]int64{0: 0, 1: 0}) {
			t.Errorf("offsets after --force: %v", c)
		}
		// The removed member learns it at its next heartbeat.
		beat.MemberEpoch = 1
		if r, err := beat.RequestWith(ctx, newClient(t, addr)); err != nil || r.ErrorCode != kerr.UnknownMemberID.Code {
			t.Errorf("the removed member's heartbeat: %v %+v", err, r)
		}
	})

	t.Run("StreamsGroup", func(t *testing.T) {
		const id = "srt-streams"
		app(t, id)
		m := newStreamsApp(t, addr, id, input).member("a")
		if _, err := m.heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := runTool("--application-id", id, "--input-topics", input, "--force")
		if code == 0 || !strings.Contains(errOut, "Streams group 'srt-streams' is still active and has following members: [(memberId=a,") ||
			!strings.Contains(errOut, "kaas streams-groups") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		unchanged(t, id)
		// Once its member has left, the empty streams group is reset.
		if err := m.leave(ctx); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := runTool("--application-id", id, "--input-topics", input, "--to-latest"); code != 0 {
			t.Fatalf("after leaving: exit %d, stderr %q:\n%s", code, errOut, out)
		}
		if c := committed(t, id); !reflect.DeepEqual(c, map[int32]int64{0: 10, 1: 10}) {
			t.Errorf("offsets of the empty streams group: %v", c)
		}
	})
}
