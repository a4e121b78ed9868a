package main

import (
	"context"
	"fmt"
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
		refused("share group 'sg-live' is not empty", "--reset-offsets", "--group", live, "--all-topics", "--to-earliest", "--execute")
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
		if out := tool("--delete", "--group", idle); strings.TrimSpace(out) != "Deletion of requested share groups ('"+idle+"') was successful." {
			t.Errorf("--delete: %q", out)
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
