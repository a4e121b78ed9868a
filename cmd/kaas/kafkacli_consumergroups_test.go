package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumerGroupsTable parses a table the tool printed: the header's columns
// and each row's fields (values hold no spaces; "COORDINATOR (ID)" is two).
func consumerGroupsTable(t *testing.T, out string) (header []string, rows [][]string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if header == nil {
			header = f
			continue
		}
		rows = append(rows, f)
	}
	if header == nil {
		t.Fatalf("no table in %q", out)
	}
	return header, rows
}

// consumerGroupsCommitted is a group's committed offsets on topic.
func consumerGroupsCommitted(t *testing.T, ctx context.Context, adm *kadm.Client, group, topic string) map[int32]int64 {
	t.Helper()
	resps, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	resps.Each(func(r kadm.OffsetResponse) {
		if r.Topic == topic && r.Err == nil && r.At >= 0 {
			out[r.Partition] = r.At
		}
	})
	return out
}

// TestConsumerGroupsTool runs `kaas consumer-groups` against a broker with
// a live classic group and a live KIP-848 group: each describe view checked
// against kadm, the reset modes (refused while the group is active), the
// CSV round trip, offset and group deletion, and Kafka's refusals.
func TestConsumerGroupsTool(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	const topic, live, kip848 = "cg-orders", "cg-live", "cg-848"
	bs := []string{"consumer-groups", "--bootstrap-server", addr}
	tool := func(args ...string) string {
		t.Helper()
		return mustTool(t, append(append([]string{}, bs...), args...)...)
	}
	runTool := func(args ...string) (string, string, int) {
		t.Helper()
		return runKaas(t, append(append([]string{}, bs...), args...)...)
	}
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// Ten records per partition, record i of each stamped base + i seconds.
	base := time.Date(2024, 3, 1, 10, 0, 0, 0, time.UTC)
	prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce := func(p int32, n int, stamp func(i int) time.Time) {
		for i := range n {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: stamp(i)}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for p := range int32(3) {
		produce(p, 10, func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) })
	}

	// The classic consumer reads everything, commits, then stops polling
	// (it stays in the group) while five more records land on partition 0.
	classic, err := kgo.NewClient(append(groupClientOpts(addr, topic, live), kgo.ClientID("cg-client"), kgo.DisableAutoCommit())...)
	if err != nil {
		t.Fatal(err)
	}
	defer classic.Close()
	for n := 0; n < 30; {
		fs := classic.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := classic.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	produce(0, 5, func(int) time.Time { return time.Now() })

	// The KIP-848 member: the broker assigns, the member commits nothing.
	next, err := kgo.NewClient(append(groupClientOpts(addr, topic, kip848), kgo.ClientID("cg-848-client"),
		kgo.DisableAutoCommit(), kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	go func() {
		for ctx.Err() == nil && !next.PollFetches(ctx).IsClientClosed() {
		}
	}()
	var d848 kadm.DescribedConsumerGroup
	waitFor(t, ctx, kip848+" stable with its partitions", func() bool {
		ds, err := adm.DescribeConsumerGroups(ctx, kip848)
		d848 = ds[kip848]
		return err == nil && d848.Err == nil && d848.State == "Stable" && len(d848.Members) == 1 && len(d848.Members[0].Assignment[topic]) == 3
	})
	dg, err := adm.DescribeGroups(ctx, live)
	if err != nil || dg[live].State != "Stable" || len(dg[live].Members) != 1 {
		t.Fatalf("%s: %+v %v", live, dg[live], err)
	}
	liveMember := dg[live].Members[0]
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end := func(p int32) int64 { o, _ := ends.Lookup(topic, p); return o.Offset }
	if end(0) != 15 || end(1) != 10 {
		t.Fatalf("end offsets %v", ends)
	}

	t.Run("List", func(t *testing.T) {
		names := strings.Fields(tool("--list"))
		if !reflect.DeepEqual(names, []string{kip848, live}) {
			t.Errorf("--list: %q", names)
		}
		h, rows := consumerGroupsTable(t, tool("--list", "--type", "--state"))
		want := [][]string{{kip848, "Consumer", "Stable"}, {live, "Classic", "Stable"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "TYPE", "STATE"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--list --type --state: %q %q", h, rows)
		}
		h, rows = consumerGroupsTable(t, tool("--list", "--type", "consumer"))
		if !reflect.DeepEqual(h, []string{"GROUP", "TYPE"}) || !reflect.DeepEqual(rows, [][]string{{kip848, "Consumer"}}) {
			t.Errorf("--list --type consumer: %q %q", h, rows)
		}
		h, rows = consumerGroupsTable(t, tool("--list", "--state", "empty,dead"))
		if !reflect.DeepEqual(h, []string{"GROUP", "STATE"}) || len(rows) != 0 {
			t.Errorf("--list --state empty,dead: %q %q", h, rows)
		}
	})

	t.Run("DescribeOffsets", func(t *testing.T) {
		committed := consumerGroupsCommitted(t, ctx, adm, live, topic)
		for _, verbose := range []bool{false, true} {
			args := []string{"--describe", "--group", live}
			wantHeader := []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}
			if verbose {
				args = append(args, "--verbose")
				wantHeader = append(wantHeader[:3], append([]string{"LEADER-EPOCH"}, wantHeader[3:]...)...)
			}
			h, rows := consumerGroupsTable(t, tool(args...))
			if !reflect.DeepEqual(h, wantHeader) || len(rows) != 3 {
				t.Fatalf("%v: header %q, %d rows", args, h, len(rows))
			}
			for _, r := range rows {
				if verbose {
					r = append(r[:3], r[4:]...)
				}
				p, _ := strconv.Atoi(r[2])
				cur, _ := strconv.ParseInt(r[3], 10, 64)
				if r[0] != live || r[1] != topic || cur != committed[int32(p)] || r[4] != fmt.Sprint(end(int32(p))) ||
					r[5] != fmt.Sprint(end(int32(p))-cur) || r[6] != liveMember.MemberID || r[7] != liveMember.ClientHost || r[8] != "cg-client" {
					t.Errorf("row %q: committed %d, end %d, member %s %s", r, committed[int32(p)], end(int32(p)), liveMember.MemberID, liveMember.ClientHost)
				}
				if p == 0 && r[5] != "5" {
					t.Errorf("partition 0 lag %s, want the 5 records written after the commit", r[5])
				}
			}
		}
		// The KIP-848 group: its member holds all three partitions and
		// has committed nothing.
		_, rows := consumerGroupsTable(t, tool("--describe", "--offsets", "--group", kip848))
		if len(rows) != 3 {
			t.Fatalf("%s: %q", kip848, rows)
		}
		for _, r := range rows {
			if r[3] != "-" || r[5] != "-" || r[6] != d848.Members[0].MemberID || r[8] != "cg-848-client" {
				t.Errorf("%s row %q", kip848, r)
			}
		}
	})

	t.Run("DescribeMembers", func(t *testing.T) {
		h, rows := consumerGroupsTable(t, tool("--describe", "--group", live, "--members"))
		want := [][]string{{live, liveMember.MemberID, liveMember.ClientHost, "cg-client", "3"}}
		if !reflect.DeepEqual(h, []string{"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("--members: %q %q", h, rows)
		}
		_, rows = consumerGroupsTable(t, tool("--describe", "--group", live, "--members", "--verbose"))
		if len(rows) != 1 || !reflect.DeepEqual(rows[0][5:], []string{"-", topic + ":0,1,2", "-", "-"}) {
			t.Errorf("classic --members --verbose: %q", rows)
		}
		h, rows = consumerGroupsTable(t, tool("--describe", "--group", kip848, "--members", "--verbose"))
		m := d848.Members[0]
		want = [][]string{{kip848, m.MemberID, m.ClientHost, "cg-848-client", "3",
			fmt.Sprint(m.MemberEpoch), topic + ":0,1,2", fmt.Sprint(d848.AssignmentEpoch), topic + ":0,1,2"}}
		if !reflect.DeepEqual(h[5:], []string{"CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"}) || !reflect.DeepEqual(rows, want) {
			t.Errorf("KIP-848 --members --verbose: %q %q, want %q", h, rows, want)
		}
	})

	t.Run("DescribeState", func(t *testing.T) {
		out := tool("--describe", "--group", live, "--group", kip848, "--state", "--verbose")
		var tables [][]string
		for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
			h, rows := consumerGroupsTable(t, block)
			if !reflect.DeepEqual(h, []string{"GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"}) || len(rows) != 1 {
				t.Fatalf("--state --verbose block %q", block)
			}
			tables = append(tables, rows[0])
		}
		coord := fmt.Sprintf("%s:%d", d848.Coordinator.Host, d848.Coordinator.Port)
		want := [][]string{
			{kip848, coord, fmt.Sprintf("(%d)", d848.Coordinator.NodeID), d848.AssignorName, "Stable", fmt.Sprint(d848.Epoch), fmt.Sprint(d848.AssignmentEpoch), "1"},
			{live, fmt.Sprintf("%s:%d", dg[live].Coordinator.Host, dg[live].Coordinator.Port), fmt.Sprintf("(%d)", dg[live].Coordinator.NodeID), dg[live].Protocol, "Stable", "-", "-", "1"},
		}
		if !reflect.DeepEqual(tables, want) || d848.AssignorName == "" || dg[live].Protocol == "" {
			t.Errorf("--state --verbose: %q, want %q", tables, want)
		}
	})

	t.Run("ResetRefusedWhileActive", func(t *testing.T) {
		before := consumerGroupsCommitted(t, ctx, adm, live, topic)
		for _, g := range []string{live, kip848} {
			out, errOut, code := runTool("--reset-offsets", "--group", g, "--topic", topic, "--to-earliest", "--execute")
			want := fmt.Sprintf("Assignments can only be reset if the group '%s' is inactive, but the current state is Stable.", g)
			if code != 2 || !strings.Contains(errOut, want) || strings.Contains(out, "NEW-OFFSET") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q", g, code, out, errOut)
			}
		}
		if after := consumerGroupsCommitted(t, ctx, adm, live, topic); !reflect.DeepEqual(after, before) {
			t.Errorf("refused reset changed the offsets: %v -> %v", before, after)
		}
		_, errOut, code := runTool("--delete", "--group", kip848)
		if code != 2 || !strings.Contains(errOut, "could not be deleted") {
			t.Errorf("delete of a group with members: exit %d %q", code, errOut)
		}
	})

	// The classic consumer leaves; its group is Empty from now on.
	classic.Close()
	waitFor(t, ctx, live+" empty", func() bool {
		d, err := adm.DescribeGroups(ctx, live)
		return err == nil && d[live].State == "Empty"
	})

	liveCommitted := consumerGroupsCommitted(t, ctx, adm, live, topic)

	t.Run("DescribeEmpty", func(t *testing.T) {
		out, errOut, code := runTool("--describe", "--group", live)
		if code != 0 || !strings.Contains(errOut, "Consumer group '"+live+"' has no active members.") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		_, rows := consumerGroupsTable(t, out)
		if len(rows) != 3 || rows[0][6] != "-" || rows[0][7] != "-" || rows[0][8] != "-" {
			t.Errorf("rows without a consumer: %q", rows)
		}
	})

	reset := func(t *testing.T, args ...string) (map[int32]int64, string) {
		t.Helper()
		out, errOut, code := runTool(append([]string{"--reset-offsets", "--group", live}, args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
		h, rows := consumerGroupsTable(t, out)
		if !reflect.DeepEqual(h, []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}) {
			t.Fatalf("header %q", h)
		}
		plan := map[int32]int64{}
		for _, r := range rows {
			p, _ := strconv.Atoi(r[2])
			n, _ := strconv.ParseInt(r[3], 10, 64)
			if r[0] != live || r[1] != topic {
				t.Errorf("row %q", r)
			}
			plan[int32(p)] = n
		}
		return plan, errOut
	}
	// check compares a plan with the one wanted, and the group's committed
	// offsets with those before it overlaid with the plan.
	check := func(t *testing.T, what string, plan, want map[int32]int64) {
		t.Helper()
		if !reflect.DeepEqual(plan, want) {
			t.Errorf("%s: planned %v, want %v", what, plan, want)
		}
		for p, o := range want {
			liveCommitted[p] = o
		}
		if got := consumerGroupsCommitted(t, ctx, adm, live, topic); !reflect.DeepEqual(got, liveCommitted) {
			t.Errorf("%s: committed %v, want %v", what, got, liveCommitted)
		}
	}

	t.Run("Reset", func(t *testing.T) {
		before := consumerGroupsCommitted(t, ctx, adm, live, topic)
		for _, mode := range [][]string{{"--topic", topic, "--to-earliest"}, {"--all-topics", "--to-earliest", "--dry-run"}} {
			plan, errOut := reset(t, mode...)
			if dryByDefault := len(mode) == 3 && mode[2] == "--to-earliest"; dryByDefault != strings.Contains(errOut, "WARN: No action will be performed as the --execute option is missing.") {
				t.Errorf("%q: stderr %q", mode, errOut)
			}
			if !reflect.DeepEqual(plan, map[int32]int64{0: 0, 1: 0, 2: 0}) {
				t.Errorf("%q: planned %v", mode, plan)
			}
			if got := consumerGroupsCommitted(t, ctx, adm, live, topic); !reflect.DeepEqual(got, before) {
				t.Errorf("%q (a dry run) changed the offsets: %v -> %v", mode, before, got)
			}
		}
		plan, _ := reset(t, "--all-topics", "--to-earliest", "--execute")
		check(t, "--to-earliest", plan, map[int32]int64{0: 0, 1: 0, 2: 0})
		plan, _ = reset(t, "--topic", topic, "--to-latest", "--execute")
		check(t, "--to-latest", plan, map[int32]int64{0: 15, 1: 10, 2: 10})
		plan, _ = reset(t, "--topic", topic+":0", "--to-offset", "3", "--execute")
		check(t, "--to-offset 3 of partition 0", plan, map[int32]int64{0: 3})
		plan, _ = reset(t, "--topic", topic+":0,1", "--shift-by", "-2", "--execute")
		check(t, "--shift-by -2", plan, map[int32]int64{0: 1, 1: 8})
		plan, errOut := reset(t, "--topic", topic+":0", "--shift-by", "-100", "--execute")
		if !strings.Contains(errOut, "WARN: New offset (-99) is lower than earliest offset for topic partition cg-orders-0. Value will be set to 0") {
			t.Errorf("--shift-by -100: stderr %q", errOut)
		}
		check(t, "--shift-by -100 clamped", plan, map[int32]int64{0: 0})
		plan, errOut = reset(t, "--topic", topic+":1", "--to-offset", "1000", "--execute")
		if !strings.Contains(errOut, "WARN: New offset (1000) is higher than latest offset for topic partition cg-orders-1. Value will be set to 10") {
			t.Errorf("--to-offset 1000: stderr %q", errOut)
		}
		check(t, "--to-offset 1000 clamped", plan, map[int32]int64{1: 10})
		plan, _ = reset(t, "--topic", topic, "--to-current", "--execute")
		check(t, "--to-current", plan, map[int32]int64{0: 0, 1: 10, 2: 10})
		// Record i of each partition is stamped base + i s: 10:00:04Z is
		// offset 4, in UTC or in any other zone.
		plan, _ = reset(t, "--all-topics", "--to-datetime", "2024-03-01T10:00:04.000Z", "--execute")
		check(t, "--to-datetime", plan, map[int32]int64{0: 4, 1: 4, 2: 4})
		plan, _ = reset(t, "--all-topics", "--to-datetime", "2024-03-01T12:00:03.500+02:00", "--execute")
		check(t, "--to-datetime with a zone", plan, map[int32]int64{0: 4, 1: 4, 2: 4})
		plan, errOut = reset(t, "--all-topics", "--to-datetime", "2100-01-01T00:00:00.000Z", "--execute")
		if !strings.Contains(errOut, "Warn: Partition 1 from topic cg-orders is empty. Falling back to latest known offset.") {
			t.Errorf("--to-datetime after every record: stderr %q", errOut)
		}
		check(t, "--to-datetime after every record", plan, map[int32]int64{0: 15, 1: 10, 2: 10})
		// Only partition 0's last five records are younger than an hour.
		plan, _ = reset(t, "--all-topics", "--by-duration", "PT1H", "--execute")
		check(t, "--by-duration PT1H", plan, map[int32]int64{0: 10, 1: 10, 2: 10})
	})

	t.Run("ExportFromFile", func(t *testing.T) {
		plan, _ := reset(t, "--all-topics", "--to-offset", "7", "--execute")
		check(t, "--to-offset 7", plan, map[int32]int64{0: 7, 1: 7, 2: 7})
		csv := tool("--reset-offsets", "--group", live, "--all-topics", "--to-current", "--export", "--dry-run")
		if csv != "cg-orders,0,7\ncg-orders,1,7\ncg-orders,2,7\n\n" {
			t.Fatalf("--export: %q", csv)
		}
		file := filepath.Join(t.TempDir(), "plan.csv")
		if err := os.WriteFile(file, []byte(csv), 0o600); err != nil {
			t.Fatal(err)
		}
		plan, _ = reset(t, "--all-topics", "--to-earliest", "--execute")
		check(t, "--to-earliest", plan, map[int32]int64{0: 0, 1: 0, 2: 0})
		plan, _ = reset(t, "--from-file", file, "--execute")
		check(t, "--from-file", plan, map[int32]int64{0: 7, 1: 7, 2: 7})

		// Two groups: the group column, and a group that does not exist
		// yet gets its offsets (the commit creates it).
		const fresh = "cg-fresh"
		csv = tool("--reset-offsets", "--group", live, "--group", fresh, "--topic", topic+":0", "--to-offset", "2", "--export")
		if csv != "cg-live,cg-orders,0,2\ncg-fresh,cg-orders,0,2\n\n" {
			t.Fatalf("two-group --export: %q", csv)
		}
		if err := os.WriteFile(file, []byte(csv), 0o600); err != nil {
			t.Fatal(err)
		}
		tool("--reset-offsets", "--group", live, "--group", fresh, "--from-file", file, "--execute")
		for _, g := range []string{live, fresh} {
			if got := consumerGroupsCommitted(t, ctx, adm, g, topic)[0]; got != 2 {
				t.Errorf("%s partition 0 committed %d after --from-file, want 2", g, got)
			}
		}
		if names := strings.Fields(tool("--list")); !reflect.DeepEqual(names, []string{kip848, fresh, live}) {
			t.Errorf("--list after the reset created %s: %q", fresh, names)
		}
	})

	t.Run("DeleteOffsets", func(t *testing.T) {
		out := tool("--delete-offsets", "--group", live, "--topic", topic+":1")
		first, rest, _ := strings.Cut(out, "\n")
		if first != "Request succeed for deleting offsets with topic cg-orders:1 group cg-live" {
			t.Errorf("first line %q", first)
		}
		h, rows := consumerGroupsTable(t, rest)
		if !reflect.DeepEqual(h, []string{"TOPIC", "PARTITION", "STATUS"}) || !reflect.DeepEqual(rows, [][]string{{topic, "1", "Successful"}}) {
			t.Errorf("table %q %q", h, rows)
		}
		if got := consumerGroupsCommitted(t, ctx, adm, live, topic); !reflect.DeepEqual(got, map[int32]int64{0: 2, 2: 7}) {
			t.Errorf("committed after deleting partition 1: %v", got)
		}
		out, _, code := runTool("--delete-offsets", "--group", "cg-nope", "--topic", topic)
		if code != 2 || !strings.Contains(out, "Error: 'cg-nope' does not exist.") {
			t.Errorf("unknown group: exit %d, %q", code, out)
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		before := consumerGroupsCommitted(t, ctx, adm, live, topic)
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--describe", "--group", "cg-nope"}, "Consumer group 'cg-nope' does not exist."},
			{[]string{"--describe", "--group", "cg-nope", "--members"}, "Consumer group 'cg-nope' does not exist."},
			{[]string{"--describe", "--group", "cg-nope", "--state"}, "Consumer group 'cg-nope' does not exist."},
			{[]string{"--group", live}, "exactly one of --list, --describe"},
			{[]string{"--describe"}, "option --describe takes one of these options: --group, --all-groups"},
			{[]string{"--reset-offsets", "--group", live, "--all-topics", "--to-earliest", "--execute", "--dry-run"}, "only accepts one of --execute and --dry-run"},
			{[]string{"--reset-offsets", "--group", live, "--topic", "cg-missing", "--to-earliest", "--execute"}, "UNKNOWN_TOPIC_OR_PARTITION"},
			{[]string{"--reset-offsets", "--group", live, "--topic", topic + ":7", "--to-earliest", "--execute"}, "partition cg-orders-7 does not exist"},
			{[]string{"--reset-offsets", "--group", live, "--topic", topic + ":2", "--shift-by", "1", "--execute"}, ""},
		} {
			out, errOut, code := runTool(c.args...)
			if c.want == "" {
				continue // the last one succeeds; it is undone below
			}
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want %q", c.args, code, out, errOut, c.want)
			}
		}
		want := before
		want[2]++
		if got := consumerGroupsCommitted(t, ctx, adm, live, topic); !reflect.DeepEqual(got, want) {
			t.Errorf("refused commands changed the offsets: %v, want %v", got, want)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		if out := tool("--delete", "--group", live, "--group", "cg-fresh"); out != "Deletion of requested consumer groups ('cg-live, cg-fresh') was successful.\n" {
			t.Errorf("--delete: %q", out)
		}
		listed, err := adm.ListGroups(ctx)
		if err != nil || !reflect.DeepEqual(listed.Groups(), []string{kip848}) {
			t.Errorf("groups after --delete: %v %v", listed.Groups(), err)
		}
		out, _, code := runTool("--delete", "--group", live)
		if code != 2 || !strings.Contains(out, "* Group 'cg-live' could not be deleted due to: GROUP_ID_NOT_FOUND") {
			t.Errorf("deleting it again: exit %d, %q", code, out)
		}
	})
}
