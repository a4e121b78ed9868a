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
	"github.com/twmb/franz-go/pkg/kgo"
)

// groups2StartOffsets is a share group's start offset of each partition of
// topic, as DescribeShareGroupOffsets answers (partitions without state
// left out).
func groups2StartOffsets(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resps, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resps[group].Offsets.Each(func(o kadm.ShareOffset) {
		if o.Topic == topic && o.Err == nil && o.StartOffset >= 0 {
			out[o.Partition] = o.StartOffset
		}
	})
	return out
}

// groups2Refused runs a tool that must fail and checks its message.
func groups2Refused(t *testing.T, want string, args ...string) {
	t.Helper()
	out, errOut, code := runKaas(t, args...)
	if code == 0 || !strings.Contains(out+errOut, want) {
		t.Errorf("kaas %s: exit %d, stdout %q, stderr %q; want a failure naming %q", strings.Join(args, " "), code, out, errOut, want)
	}
}

// TestShareGroupsTool runs `kaas share-groups` against a broker with a
// live share group (a franz-go share consumer) and an empty one that has
// read everything: list and describe checked against the raw
// ShareGroupDescribe and DescribeShareGroupOffsets answers, the resets
// (refused while the group has members) moving the start offsets, offset
// and group deletion, and Kafka's refusals.
func TestShareGroupsTool(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	ctx := ctxT(t, 90*time.Second)
	adm := newAdmin(t, addr)
	const topic, live, idle = "sg-tool", "sg-live", "sg-idle"
	bs := []string{"share-groups", "--bootstrap-server", addr}
	tool := func(args ...string) string {
		t.Helper()
		return mustTool(t, append(append([]string{}, bs...), args...)...)
	}
	refused := func(want string, args ...string) {
		t.Helper()
		groups2Refused(t, want, append(append([]string{}, bs...), args...)...)
	}
	createTopic(t, addr, topic, 2, nil)
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for p := range int32(2) {
		for i := range 10 {
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	// idle reads and accepts all 20 records, then its consumer leaves.
	reader := shareConsumer(t, addr, idle, topic)
	for n := 0; n < 20; {
		n += len(pollSome(t, ctx, reader, 100))
		reader.MarkAcks(kgo.AckAccept)
	}
	if err := reader.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	reader.Close()
	waitFor(t, ctx, idle+" empty with its offsets at the end", func() bool {
		d, err := adm.DescribeShareGroups(ctx, idle)
		starts := groups2StartOffsets(t, ctx, adm, idle, topic)
		return err == nil && d[idle].GroupState == "Empty" && starts[0] == 10 && starts[1] == 10
	})
	// live keeps a member holding both partitions.
	shareConsumer(t, addr, live, topic, kgo.ClientID("sg-client"))
	waitShareStable(t, adm, live, 1)
	described, err := adm.DescribeShareGroups(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	dl := described[live]

	t.Run("List", func(t *testing.T) {
		if names := strings.Fields(tool("--list")); !reflect.DeepEqual(names, []string{idle, live}) {
			t.Errorf("--list: %q", names)
		}
		h, rows := consumerGroupsTable(t, tool("--list", "--state"))
		if !reflect.DeepEqual(h, []string{"GROUP", "STATE"}) || !reflect.DeepEqual(rows, [][]string{{idle, "Empty"}, {live, "Stable"}}) {
			t.Errorf("--list --state: %q %q", h, rows)
		}
		if _, rows := consumerGroupsTable(t, tool("--list", "--state", "stable")); !reflect.DeepEqual(rows, [][]string{{live, "Stable"}}) {
			t.Errorf("--list --state stable: %q", rows)
		}
	})

	t.Run("DescribeState", func(t *testing.T) {
		coord := fmt.Sprintf("%s:%d", dl.Coordinator.Host, dl.Coordinator.Port)
		h, rows := consumerGroupsTable(t, tool("--describe", "--state", "--group", live))
		want := [][]string{{live, coord, fmt.Sprintf("(%d)", dl.Coordinator.NodeID), "Stable", "1"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --state: %q %q, want %q", h, rows, want)
		}
		h, rows = consumerGroupsTable(t, tool("--describe", "--state", "--verbose", "--group", live))
		want[0] = append(want[0][:4], fmt.Sprint(dl.GroupEpoch), fmt.Sprint(dl.AssignmentEpoch), "1")
		if !reflect.DeepEqual(h, []string{"GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --state --verbose: %q %q, want %q", h, rows, want)
		}
		out, errOut, code := runKaas(t, append(append([]string{}, bs...), "--describe", "--state", "--group", idle)...)
		if _, rows := consumerGroupsTable(t, out); code != 0 || len(rows) != 1 || rows[0][3] != "Empty" || rows[0][4] != "0" ||
			!strings.Contains(errOut, "Share group '"+idle+"' has no active members.") {
			t.Errorf("--describe --state of the empty group: %d %q %q", code, out, errOut)
		}
	})

	t.Run("DescribeMembers", func(t *testing.T) {
		m := dl.Members[0]
		h, rows := consumerGroupsTable(t, tool("--describe", "--members", "--verbose", "--group", live))
		want := [][]string{{live, m.MemberID, m.ClientHost, "sg-client", "2", fmt.Sprint(m.MemberEpoch), topic + ":0,1"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --members --verbose: %q %q, want %q", h, rows, want)
		}
		_, rows = consumerGroupsTable(t, tool("--describe", "--members", "--group", live))
		if len(rows) != 1 || len(rows[0]) != 6 || rows[0][5] != topic+":0,1" {
			t.Errorf("--describe --members: %q", rows)
		}
	})

	t.Run("DescribeOffsets", func(t *testing.T) {
		for _, verbose := range []bool{false, true} {
			args := []string{"--describe", "--group", idle}
			wantHeader := []string{"GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"}
			if verbose {
				args = append(args, "--verbose")
				wantHeader = []string{"GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"}
			}
			h, rows := consumerGroupsTable(t, tool(args...))
			if !reflect.DeepEqual(h, wantHeader) || len(rows) != 2 {
				t.Fatalf("%v: %q %q", args, h, rows)
			}
			for i, r := range rows {
				if verbose {
					r = append(r[:3], r[4:]...)
				}
				if !reflect.DeepEqual(r, []string{idle, topic, fmt.Sprint(i), "10", "0"}) {
					t.Errorf("%v row %q, want start 10 and no lag", args, r)
				}
			}
		}
		// --all-groups describes both, sorted.
		_, rows := consumerGroupsTable(t, tool("--describe", "--all-groups"))
		if len(rows) < 3 || rows[0][0] != idle || rows[len(rows)-1][0] != live {
			t.Errorf("--describe --all-groups: %q", rows)
		}
		refused("Share group 'sg-none' does not exist.", "--describe", "--group", "sg-none")
	})

	t.Run("ResetOffsets", func(t *testing.T) {
		// Dry run: the plan, nothing changed.
		h, rows := consumerGroupsTable(t, tool("--reset-offsets", "--group", idle, "--all-topics", "--to-earliest", "--dry-run"))
		want := [][]string{{idle, topic, "0", "0"}, {idle, topic, "1", "0"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--dry-run: %q %q", h, rows)
		}
		if s := groups2StartOffsets(t, ctx, adm, idle, topic); s[0] != 10 || s[1] != 10 {
			t.Fatalf("a dry run moved the start offsets: %v", s)
		}
		tool("--reset-offsets", "--group", idle, "--all-topics", "--to-earliest", "--execute")
		if s := groups2StartOffsets(t, ctx, adm, idle, topic); s[0] != 0 || s[1] != 0 {
			t.Fatalf("after --to-earliest --execute: %v, want 0 and 0", s)
		}
		_, rows = consumerGroupsTable(t, tool("--reset-offsets", "--group", idle, "--topic", topic+":1", "--to-latest", "--execute"))
		if !reflect.DeepEqual(rows, [][]string{{idle, topic, "1", "10"}}) {
			t.Errorf("--to-latest of partition 1: %q", rows)
		}
		if s := groups2StartOffsets(t, ctx, adm, idle, topic); s[0] != 0 || s[1] != 10 {
			t.Fatalf("after --to-latest of partition 1: %v", s)
		}
		// Every record was written before 2030: the log end.
		_, rows = consumerGroupsTable(t, tool("--reset-offsets", "--group", idle, "--topic", topic, "--to-datetime", "2030-01-01T00:00:00.000Z", "--dry-run"))
		if !reflect.DeepEqual(rows, [][]string{{idle, topic, "0", "10"}, {idle, topic, "1", "10"}}) {
			t.Errorf("--to-datetime 2030: %q", rows)
		}
		// A group with members is refused, its offsets untouched.
		before := groups2StartOffsets(t, ctx, adm, live, topic)
		refused("Share group 'sg-live' is not empty.", "--reset-offsets", "--group", live, "--all-topics", "--to-earliest", "--execute")
		if after := groups2StartOffsets(t, ctx, adm, live, topic); !reflect.DeepEqual(before, after) {
			t.Errorf("a refused reset moved %s: %v -> %v", live, before, after)
		}
		refused("UNKNOWN_TOPIC_OR_PARTITION", "--reset-offsets", "--group", idle, "--topic", "sg-nope", "--to-earliest", "--execute")
	})

	t.Run("DeleteOffsets", func(t *testing.T) {
		out, _, code := runKaas(t, append(append([]string{}, bs...), "--delete-offsets", "--group", idle, "--topic", topic, "--topic", "sg-nope")...)
		h, rows := consumerGroupsTable(t, out)
		if code == 0 || !reflect.DeepEqual(h, []string{"TOPIC", "STATUS"}) || len(rows) != 2 ||
			rows[0][0] != "sg-nope" || rows[0][1] != "Error:" || !reflect.DeepEqual(rows[1], []string{topic, "Successful"}) {
			t.Errorf("--delete-offsets: exit %d, %q %q", code, h, rows)
		}
		if s := groups2StartOffsets(t, ctx, adm, idle, topic); len(s) != 0 {
			t.Errorf("after --delete-offsets: start offsets %v, want none", s)
		}
		refused("NON_EMPTY_GROUP", "--delete-offsets", "--group", live, "--topic", topic)
		if s := groups2StartOffsets(t, ctx, adm, live, topic); len(s) != 2 {
			t.Errorf("a refused --delete-offsets changed %s: %v", live, s)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		out, _, code := runKaas(t, append(append([]string{}, bs...), "--delete", "--group", live, "--group", "sg-none")...)
		if code == 0 || !strings.Contains(out, "* Group '"+live+"' could not be deleted due to: Share group '"+live+"' is not EMPTY.") ||
			!strings.Contains(out, "* Group 'sg-none' could not be deleted due to: Group 'sg-none' is not a share group.") {
			t.Errorf("--delete of a live and an absent group: %d %q", code, out)
		}
		// The group's share-partition state goes with it.
		tool("--reset-offsets", "--group", idle, "--topic", topic, "--to-earliest", "--execute")
		if s := groups2StartOffsets(t, ctx, adm, idle, topic); len(s) == 0 {
			t.Fatalf("no start offsets after a reset of %s", idle)
		}
		if out := tool("--delete", "--group", idle); strings.TrimSpace(out) != "Deletion of requested share groups ('"+idle+"') was successful." {
			t.Errorf("--delete: %q", out)
		}
		if s := groups2StartOffsets(t, ctx, adm, idle, topic); len(s) != 0 {
			t.Errorf("after --delete: start offsets %v, want none", s)
		}
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := listed[idle]; ok {
			t.Errorf("%s still listed after --delete", idle)
		}
		if _, ok := listed[live]; !ok {
			t.Errorf("%s gone after a refused --delete", live)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		for _, c := range []struct {
			want string
			args []string
		}{
			{"exactly one of --list, --describe, --delete, --reset-offsets, --delete-offsets", nil},
			{"exactly one of", []string{"--list", "--describe"}},
			{"option --describe takes one of these options: --all-groups, --group", []string{"--describe"}},
			{"at most one of these options: --members, --offsets, --state", []string{"--describe", "--group", live, "--members", "--state"}},
			{"option --reset-offsets takes the option: --execute or --dry-run", []string{"--reset-offsets", "--group", idle, "--all-topics", "--to-earliest"}},
			{"takes one of these options: --to-datetime, --to-earliest, --to-latest", []string{"--reset-offsets", "--group", idle, "--all-topics", "--dry-run"}},
			{"option --to-earliest can't be used with option --to-latest", []string{"--reset-offsets", "--group", idle, "--all-topics", "--dry-run", "--to-earliest", "--to-latest"}},
			{"takes one of these options: --all-topics, --topic", []string{"--reset-offsets", "--group", idle, "--to-earliest", "--dry-run"}},
			{"flag provided but not defined: -to-offset", []string{"--reset-offsets", "--group", idle, "--all-topics", "--to-offset", "3", "--dry-run"}},
			{"option --delete does not take the option: --topic", []string{"--delete", "--group", idle, "--topic", topic}},
			{"--delete-offsets takes topic names, without partitions", []string{"--delete-offsets", "--group", idle, "--topic", topic + ":0"}},
			{"option --delete-offsets takes the following options: --group, --topic", []string{"--delete-offsets", "--group", idle}},
			{"invalid state list 'bogus'. Valid states are: Empty, Stable, Dead", []string{"--list", "--state", "bogus"}},
			{"option --group can only be used with", []string{"--list", "--group", live}},
			{"option --group can't be used with option --all-groups", []string{"--describe", "--group", live, "--all-groups"}},
			{"--to-datetime", []string{"--reset-offsets", "--group", idle, "--all-topics", "--to-datetime", "yesterday", "--dry-run"}},
		} {
			refused(c.want, c.args...)
		}
		groups2Refused(t, "missing required argument --bootstrap-server", "share-groups", "--list")
	})
}

// groups2TopicExists says whether the cluster lists topic (a listing of
// every topic: one that names a missing topic waits for it to appear).
func groups2TopicExists(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) bool {
	t.Helper()
	tds, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tds.Has(topic)
}

// groups2Committed is a group's committed offsets of topic.
func groups2Committed(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	return consumerGroupsCommitted(t, ctx, adm, group, topic)
}

// TestStreamsGroupsTool runs `kaas streams-groups` against a broker with a
// live streams group (a member of a streamsApp, the streams rebalance
// protocol spoken with kmsg) and an empty one that has processed
// everything: list and describe checked against the raw
// StreamsGroupDescribe answer and the committed offsets, the resets
// (refused while the group has members) with internal topic deletion,
// offset and group deletion, and Kafka's refusals.
func TestStreamsGroupsTool(t *testing.T) {
	_, addr := testBroker(t, "--group-streams-initial-rebalance-delay", "0")
	ctx := ctxT(t, 90*time.Second)
	// Metadata fresh on every look: kgo answers a Metadata request from
	// its cache for MetadataMinAge (5 s by default), so a deleted topic
	// would stay listed that long.
	adm := kadm.NewClient(newClient(t, addr, kgo.MetadataMinAge(10*time.Millisecond)))
	const source, other, live, idle = "sgt-words", "sgt-other", "sgt-live", "sgt-idle"
	bs := []string{"streams-groups", "--bootstrap-server", addr}
	tool := func(args ...string) string {
		t.Helper()
		return mustTool(t, append(append([]string{}, bs...), args...)...)
	}
	refused := func(want string, args ...string) {
		t.Helper()
		groups2Refused(t, want, append(append([]string{}, bs...), args...)...)
	}
	createTopic(t, addr, source, 2, nil)
	createTopic(t, addr, other, 1, nil)
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			r := &kgo.Record{Topic: source, Partition: int32(i % 2), Key: []byte(fmt.Sprint(i))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 20)
	// idle processes all 20 records, then its member leaves.
	idleApp := newStreamsApp(t, addr, idle, source)
	b := idleApp.member("b")
	idleApp.run(ctx, []*streamsMember{b}, func() bool { return len(b.owned) == 2 && idleApp.count() == 20 })
	if err := b.leave(ctx); err != nil {
		t.Fatal(err)
	}
	// live processes them too and stays, then six more land on partition 0.
	liveApp := newStreamsApp(t, addr, live, source)
	a := liveApp.member("a")
	liveApp.run(ctx, []*streamsMember{a}, func() bool { return len(a.owned) == 2 && liveApp.count() == 20 })
	produce(20, 32) // six more records on each partition
	dl := describeStreamsGroup(t, a.hb, live)
	coord := adm.FindGroupCoordinators(ctx, live)[live]
	if dl.ErrorCode != 0 || dl.State != "Stable" || len(dl.Members) != 1 || dl.Topology == nil || coord.Err != nil {
		t.Fatalf("%s: %+v, coordinator %+v", live, dl, coord)
	}
	changelog := streamsChangelog(idle)

	t.Run("List", func(t *testing.T) {
		if names := strings.Fields(tool("--list")); !reflect.DeepEqual(names, []string{idle, live}) {
			t.Errorf("--list: %q", names)
		}
		h, rows := consumerGroupsTable(t, tool("--list", "--state"))
		if !reflect.DeepEqual(h, []string{"GROUP", "STATE"}) || !reflect.DeepEqual(rows, [][]string{{idle, "Empty"}, {live, "Stable"}}) {
			t.Errorf("--list --state: %q %q", h, rows)
		}
		if _, rows := consumerGroupsTable(t, tool("--list", "--state", "EMPTY")); !reflect.DeepEqual(rows, [][]string{{idle, "Empty"}}) {
			t.Errorf("--list --state EMPTY: %q", rows)
		}
	})

	t.Run("DescribeState", func(t *testing.T) {
		c := []string{fmt.Sprintf("%s:%d", coord.Host, coord.Port), fmt.Sprintf("(%d)", coord.NodeID)}
		h, rows := consumerGroupsTable(t, tool("--describe", "--state", "--group", live))
		want := [][]string{{live, c[0], c[1], "Stable", "1"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --state: %q %q, want %q", h, rows, want)
		}
		h, rows = consumerGroupsTable(t, tool("--describe", "--state", "--verbose", "--group", live))
		want = [][]string{{live, c[0], c[1], "Stable", fmt.Sprint(dl.Epoch), fmt.Sprint(dl.AssignmentEpoch), "1"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "COORDINATOR", "(ID)", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --state --verbose: %q %q, want %q", h, rows, want)
		}
		out := tool("--describe", "--state", "--group", idle)
		if !strings.Contains(out, "Error: Streams group '"+idle+"' has no active members.") || !strings.Contains(out, " Empty ") {
			t.Errorf("--describe --state of the empty group: %q", out)
		}
	})

	t.Run("DescribeMembers", func(t *testing.T) {
		m := dl.Members[0]
		h, rows := consumerGroupsTable(t, tool("--describe", "--members", "--group", live))
		want := [][]string{{live, "a", "process-a", m.ClientID, "ACTIVE:", "0:[0,1];"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --members: %q %q, want %q", h, rows, want)
		}
		h, rows = consumerGroupsTable(t, tool("--describe", "--members", "--verbose", "--group", live))
		want = [][]string{{live, fmt.Sprint(dl.AssignmentEpoch), fmt.Sprint(dl.Topology.Epoch), "a", "streams", fmt.Sprint(m.MemberEpoch),
			"process-a", m.ClientID, "ACTIVE:", "0:[0,1];", "TARGET-ACTIVE:", "0:[0,1];"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL", "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"}) ||
			!reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --members --verbose: %q %q, want %q", h, rows, want)
		}
	})

	t.Run("DescribeOffsets", func(t *testing.T) {
		committed := groups2Committed(t, ctx, adm, live, source)
		ends, err := adm.ListEndOffsets(ctx, source)
		if err != nil {
			t.Fatal(err)
		}
		end := func(p int32) int64 { o, _ := ends.Lookup(source, p); return o.Offset }
		if committed[0] != 10 || committed[1] != 10 || end(0) != 16 || end(1) != 16 {
			t.Fatalf("committed %v, ends %v", committed, ends)
		}
		h, rows := consumerGroupsTable(t, tool("--describe", "--group", live))
		want := [][]string{{live, source, "0", "6"}, {live, source, "1", "6"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "TOPIC", "PARTITION", "OFFSET-LAG"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe: %q %q, want %q", h, rows, want)
		}
		h, rows = consumerGroupsTable(t, tool("--describe", "--offsets", "--verbose", "--group", live))
		want = [][]string{{live, source, "0", "10", "-", "16", "6"}, {live, source, "1", "10", "-", "16", "6"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET", "OFFSET-LAG"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--describe --offsets --verbose: %q %q, want %q", h, rows, want)
		}
		// Kafka's tool shows the offsets of active tasks only: none for
		// a group without members.
		if out := tool("--describe", "--group", idle); strings.TrimSpace(out) != "" {
			t.Errorf("--describe of the empty group: %q", out)
		}
		refused("Streams group 'sgt-none' does not exist.", "--describe", "--group", "sgt-none")
	})

	t.Run("ResetOffsets", func(t *testing.T) {
		h, rows := consumerGroupsTable(t, tool("--reset-offsets", "--group", idle, "--all-input-topics", "--to-earliest", "--dry-run"))
		if !reflect.DeepEqual(h, []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}) ||
			!reflect.DeepEqual(rows, [][]string{{idle, source, "0", "0"}, {idle, source, "1", "0"}}) {
			t.Errorf("--dry-run: %q %q", h, rows)
		}
		if c := groups2Committed(t, ctx, adm, idle, source); c[0] != 10 || c[1] != 10 {
			t.Fatalf("a dry run moved the offsets: %v", c)
		}
		tool("--reset-offsets", "--group", idle, "--input-topic", source+":0", "--to-offset", "3", "--execute")
		if c := groups2Committed(t, ctx, adm, idle, source); c[0] != 3 || c[1] != 10 {
			t.Fatalf("after --to-offset 3 of partition 0: %v", c)
		}
		csv := tool("--reset-offsets", "--group", idle, "--all-input-topics", "--shift-by", "-2", "--dry-run", "--export")
		if strings.TrimSpace(csv) != source+",0,1\n"+source+",1,8" {
			t.Errorf("--shift-by -2 --export: %q", csv)
		}
		plan := filepath.Join(t.TempDir(), "plan.csv")
		if err := os.WriteFile(plan, []byte(source+",1,2\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		tool("--reset-offsets", "--group", idle, "--from-file", plan, "--execute")
		if c := groups2Committed(t, ctx, adm, idle, source); c[0] != 3 || c[1] != 2 {
			t.Fatalf("after --from-file: %v", c)
		}
		// The live group is refused, its offsets untouched; so is a topic
		// the group has no offsets for, and a topic that is not the
		// group's internal topic.
		refused("Assignments can only be reset if the group '"+live+"' is inactive, but the current state is Stable.",
			"--reset-offsets", "--group", live, "--all-input-topics", "--to-earliest", "--execute")
		if c := groups2Committed(t, ctx, adm, live, source); c[0] != 10 || c[1] != 10 {
			t.Errorf("a refused reset moved %s: %v", live, c)
		}
		refused("One or more topics are not part of the group '"+idle+"'.", "--reset-offsets", "--group", idle, "--input-topic", other, "--to-earliest", "--execute")
		refused("not an internal topic of streams group "+idle, "--reset-offsets", "--group", idle, "--all-input-topics",
			"--to-earliest", "--execute", "--delete-internal-topic", live+"-counts-changelog")
		if c := groups2Committed(t, ctx, adm, idle, source); c[0] != 3 || c[1] != 2 {
			t.Fatalf("a refused reset moved %s: %v", idle, c)
		}
		// A reset with the internal topic's deletion: the application
		// starts over.
		if !groups2TopicExists(t, ctx, adm, changelog) {
			t.Fatalf("no changelog %s before the reset", changelog)
		}
		tool("--reset-offsets", "--group", idle, "--all-input-topics", "--to-earliest", "--execute", "--delete-internal-topic", changelog)
		if c := groups2Committed(t, ctx, adm, idle, source); c[0] != 0 || c[1] != 0 {
			t.Fatalf("after --to-earliest: %v", c)
		}
		waitFor(t, ctx, changelog+" deleted", func() bool { return !groups2TopicExists(t, ctx, adm, changelog) })
	})

	t.Run("DeleteOffsets", func(t *testing.T) {
		out := tool("--delete-offsets", "--group", idle, "--input-topic", source+":0")
		h, rows := consumerGroupsTable(t, out)
		if h[0] != "Request" || !strings.HasPrefix(out, "Request succeeded for deleting offsets from group "+idle+".") ||
			!reflect.DeepEqual(rows[1:], [][]string{{source, "0", "Successful"}}) {
			t.Errorf("--delete-offsets: %q", out)
		}
		if c := groups2Committed(t, ctx, adm, idle, source); len(c) != 1 || c[1] != 0 {
			t.Errorf("after --delete-offsets of partition 0: %v", c)
		}
		out, _, code := runKaas(t, append(append([]string{}, bs...), "--delete-offsets", "--group", live, "--all-input-topics")...)
		if code == 0 || !strings.Contains(out, "Encountered some partition-level error") || strings.Count(out, "GROUP_SUBSCRIBED_TO_TOPIC") != 2 {
			t.Errorf("--delete-offsets of the live group's source topic: %d %q", code, out)
		}
		if c := groups2Committed(t, ctx, adm, live, source); len(c) != 2 {
			t.Errorf("a refused --delete-offsets changed %s: %v", live, c)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		out, _, code := runKaas(t, append(append([]string{}, bs...), "--delete", "--group", live, "--group", "sgt-none")...)
		if code == 0 || !strings.Contains(out, "* Group '"+live+"' could not be deleted due to: Streams group '"+live+"' is not EMPTY.") ||
			!strings.Contains(out, "* Group 'sgt-none' could not be deleted due to: Group 'sgt-none' does not exist or is not a streams group.") {
			t.Errorf("--delete of a live and an absent group: %d %q", code, out)
		}
		// The changelog, deleted by the reset, is back (as the next
		// member's heartbeat would create it): --delete-all-internal-topics
		// takes it with the group.
		createTopic(t, addr, changelog, 2, nil)
		out = tool("--delete", "--group", idle, "--delete-all-internal-topics")
		if !strings.Contains(out, "Deletion of requested streams groups ('"+idle+"') was successful.") ||
			!strings.Contains(out, "Deletion of associated internal topics of the streams groups ('"+idle+"') was successful.") {
			t.Errorf("--delete --delete-all-internal-topics: %q", out)
		}
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := listed[idle]; ok {
			t.Errorf("%s still listed after --delete", idle)
		}
		if _, ok := listed[live]; !ok {
			t.Errorf("%s gone after a refused --delete", live)
		}
		waitFor(t, ctx, changelog+" deleted with its group", func() bool { return !groups2TopicExists(t, ctx, adm, changelog) })
		if !groups2TopicExists(t, ctx, adm, source) {
			t.Errorf("the source topic %s went with the group", source)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		for _, c := range []struct {
			want string
			args []string
		}{
			{"exactly one of --list, --describe, --delete, --reset-offsets, --delete-offsets", nil},
			{"option --describe takes one of these options: --all-groups, --group", []string{"--describe"}},
			{"at most one of these options: --members, --offsets, --state", []string{"--describe", "--group", live, "--offsets", "--members"}},
			{"Kafka Streams does not support topic-specific offset deletion", []string{"--delete", "--group", live, "--input-topic", source}},
			{"option --delete-offsets takes the --group and one of these options: --all-input-topics, --input-topic", []string{"--delete-offsets", "--group", live}},
			{"option --delete-offsets supports only one --group at a time", []string{"--delete-offsets", "--group", live, "--group", idle, "--all-input-topics"}},
			{"option --reset-offsets takes the option: --execute or --dry-run", []string{"--reset-offsets", "--group", live, "--all-input-topics", "--to-earliest"}},
			{"requires one of the following scenarios", []string{"--reset-offsets", "--group", live, "--all-input-topics", "--dry-run"}},
			{"option --to-offset can't be used with option --to-earliest", []string{"--reset-offsets", "--group", live, "--all-input-topics", "--dry-run", "--to-earliest", "--to-offset", "1"}},
			{"one of the reset scopes should be defined: --all-input-topics, --input-topic", []string{"--reset-offsets", "--group", live, "--to-earliest", "--dry-run"}},
			{"option --delete-all-internal-topics takes --execute", []string{"--reset-offsets", "--group", live, "--all-input-topics", "--to-earliest", "--dry-run", "--delete-all-internal-topics"}},
			{"option --delete-internal-topic takes --reset-offsets when --execute is used", []string{"--reset-offsets", "--group", live, "--all-input-topics", "--to-earliest", "--dry-run", "--delete-internal-topic", live + "-x-changelog"}},
			{"not the name of a Kafka Streams internal topic", []string{"--reset-offsets", "--group", live, "--all-input-topics", "--to-earliest", "--execute", "--delete-internal-topic", source}},
			{"only option --reset-offsets accepts --execute or --dry-run", []string{"--describe", "--group", live, "--execute"}},
			{"option --input-topic can only be used with", []string{"--describe", "--group", live, "--input-topic", source}},
			{"option --export can only be used with --reset-offsets", []string{"--list", "--export"}},
			{"flag provided but not defined: -topic", []string{"--delete-offsets", "--group", live, "--topic", source}},
			{"invalid state list 'bogus'. Valid states are: Empty, NotReady, Assigning, Reconciling, Stable, Dead", []string{"--list", "--state", "bogus"}},
			{"--by-duration", []string{"--reset-offsets", "--group", live, "--all-input-topics", "--by-duration", "1h", "--dry-run"}},
		} {
			refused(c.want, c.args...)
		}
	})
}
