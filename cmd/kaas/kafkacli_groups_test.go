package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupsToolTable parses `kaas groups --list` output by Kafka's layout:
// three columns of one width w (the header is 3w+2 characters), each row
// 3w+3 with a space after every column. A group without a protocol type
// keeps its empty column.
func groupsToolTable(t *testing.T, out string) [][3]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	head := lines[0]
	w := (len(head) - 2) / 3
	if w < 20 || len(head) != 3*w+2 || strings.Join(strings.Fields(head), " ") != "GROUP TYPE PROTOCOL" ||
		head[:w+1] != "GROUP"+strings.Repeat(" ", w-4) {
		t.Fatalf("header %q is not Kafka's", head)
	}
	var rows [][3]string
	for _, l := range lines[1:] {
		if len(l) != 3*w+3 || l[w] != ' ' || l[2*w+1] != ' ' || l[3*w+2] != ' ' {
			t.Fatalf("row %q is not %d-wide columns each followed by a space", l, w)
		}
		rows = append(rows, [3]string{strings.TrimRight(l[:w], " "), strings.TrimRight(l[w+1:2*w+1], " "), strings.TrimRight(l[2*w+2:3*w+2], " ")})
	}
	return rows
}

// groupsConnectMember joins group as a classic member of protocol type
// "connect" (as Kafka Connect's workers do), by hand: franz-go's consumer
// only speaks "consumer". The second join waits for the rebalance, so it
// is left running; the client's close ends it.
func groupsConnectMember(t *testing.T, ctx context.Context, addr, group string) {
	cl := newClient(t, addr)
	join := func(member string) (*kmsg.JoinGroupResponse, error) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = group, member, "connect"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "sessioned", []byte{0}
		req.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		return req.RequestWith(ctx, cl)
	}
	resp, err := join("")
	if err != nil || resp.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join of %s: %v, error code %v; want MEMBER_ID_REQUIRED", group, err, resp)
	}
	go func() { _, _ = join(resp.MemberID) }()
}

// TestGroupsTool runs `kaas groups --list` against a broker holding one
// group of each kind: a classic group of franz-go's consumer, a classic
// group of protocol type "connect", a simple group that only committed
// offsets, a KIP-848 group, a share group and a streams group. The table is
// checked against the raw ListGroups answer and each filter against the
// groups it must keep; then Kafka's refusals.
func TestGroupsTool(t *testing.T) {
	_, addr := testBroker(t, "--group-streams-initial-rebalance-delay", "0")
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	const topic = "gr-topic"
	createTopic(t, addr, topic, 1, nil)
	newClient(t, addr, kgo.ConsumerGroup("gr-classic"), kgo.ConsumeTopics(topic))
	newClient(t, addr, kgo.ConsumerGroup("gr-kip848"), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer())
	shareConsumer(t, addr, "gr-share", topic)
	groupsConnectMember(t, ctx, addr, "gr-connect")
	simple := kadm.Offsets{}
	simple.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
	if resp, err := adm.CommitOffsets(ctx, "gr-simple", simple); err != nil || resp.Error() != nil {
		t.Fatalf("commit gr-simple: %v %v", err, resp.Error())
	}
	if _, err := newStreamsApp(t, addr, "gr-streams", topic).member("a").heartbeat(ctx); err != nil {
		t.Fatal(err)
	}

	// What each group must be listed as: Kafka's type names, the protocol
	// types Kafka's coordinator gives (none for an offsets-only group).
	want := [][3]string{
		{"gr-classic", "Classic", "consumer"},
		{"gr-connect", "Classic", "connect"},
		{"gr-kip848", "Consumer", "consumer"},
		{"gr-share", "Share", "share"},
		{"gr-simple", "Classic", ""},
		{"gr-streams", "Streams", "streams"},
	}
	waitFor(t, ctx, "every group listed", func() bool {
		l, err := adm.ListGroups(ctx)
		return err == nil && len(l) == len(want)
	})
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range want {
		raw := listed[g[0]]
		if !strings.EqualFold(raw.GroupType, g[1]) || raw.ProtocolType != g[2] {
			t.Errorf("ListGroups answers %s as type %q protocol %q, want %q %q", g[0], raw.GroupType, raw.ProtocolType, g[1], g[2])
		}
	}

	bs := []string{"groups", "--bootstrap-server", addr, "--list"}
	list := func(args ...string) [][3]string {
		t.Helper()
		return groupsToolTable(t, mustTool(t, append(append([]string{}, bs...), args...)...))
	}
	pick := func(ids ...string) [][3]string {
		var out [][3]string
		for _, g := range want {
			for _, id := range ids {
				if g[0] == id {
					out = append(out, g)
				}
			}
		}
		return out
	}

	t.Run("ListAll", func(t *testing.T) {
		if got := list(); !reflect.DeepEqual(got, want) {
			t.Errorf("--list:\n%q\nwant\n%q", got, want)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			want [][3]string
		}{
			{[]string{"--group-type", "classic"}, pick("gr-classic", "gr-connect", "gr-simple")},
			{[]string{"--group-type", "Consumer"}, pick("gr-kip848")},
			{[]string{"--group-type", "SHARE"}, pick("gr-share")},
			{[]string{"--group-type", "streams"}, pick("gr-streams")},
			{[]string{"--group-type", "classic", "--protocol", "connect"}, pick("gr-connect")},
			{[]string{"--group-type", "consumer", "--protocol", "connect"}, nil},
			{[]string{"--protocol", "consumer"}, pick("gr-classic", "gr-kip848")},
			{[]string{"--protocol", ""}, pick("gr-simple")},
			{[]string{"--consumer"}, pick("gr-classic", "gr-kip848", "gr-simple")},
			{[]string{"--share"}, pick("gr-share")},
			{[]string{"--streams"}, pick("gr-streams")},
		} {
			if got := list(c.args...); !reflect.DeepEqual(got, c.want) {
				t.Errorf("--list %q:\n%q\nwant\n%q", c.args, got, c.want)
			}
		}
	})

	t.Run("Refusals", func(t *testing.T) {
		for _, c := range []struct {
			want string
			args []string
		}{
			{"--group-type must be a valid group type", []string{"--group-type", "bogus"}},
			{"--group-type must be a valid group type", []string{"--group-type", "unknown"}},
			{`Option "[consumer]" can't be used with option "[group-type]"`, []string{"--consumer", "--group-type", "classic"}},
			{`Option "[consumer]" can't be used with option "[protocol]"`, []string{"--consumer", "--protocol", "consumer"}},
			{`Option "[consumer]" can't be used with option "[share]"`, []string{"--consumer", "--share"}},
			{`Option "[share]" can't be used with option "[streams]"`, []string{"--share", "--streams"}},
			{`Option "[share]" can't be used with option "[group-type]"`, []string{"--share", "--group-type", "share"}},
			{`Option "[streams]" can't be used with option "[protocol]"`, []string{"--streams", "--protocol", "streams"}},
		} {
			groups2Refused(t, c.want, append(append([]string{}, bs...), c.args...)...)
		}
		groups2Refused(t, "exactly one action: --list", "groups", "--bootstrap-server", addr, "--consumer")
		groups2Refused(t, "--bootstrap-server", "groups", "--list")
		groups2Refused(t, "flag provided but not defined: -describe", "groups", "--bootstrap-server", addr, "--describe")
	})
}
