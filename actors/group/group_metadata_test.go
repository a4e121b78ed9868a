package group

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// describeMetadata is GroupMetadata's answer as text: keep, tombstone, or
// the decoded record's generation, protocol, leader and members.
func describeMetadata(t *testing.T, g *Group) string {
	t.Helper()
	want, s := g.GroupMetadata()
	switch want {
	case metadataKeep:
		return "keep"
	case metadataTombstone:
		return "tombstone"
	}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(groupMetadataValue(s)); err != nil {
		t.Fatalf("decode the value: %v", err)
	}
	out := fmt.Sprintf("v%d %s gen %d protocol %v leader %v members", v.Version, v.ProtocolType, v.Generation, deref(v.Protocol), deref(v.Leader))
	for _, m := range v.Members {
		out += fmt.Sprintf(" %s(%s %s %s)", m.MemberID, m.ClientID, m.ClientHost, m.Assignment)
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

// TestGroupMetadata: what a classic group's GroupMetadata record says
// through its life, as Kafka writes it: the assignment once stored, nothing
// new mid-rebalance, an Empty record when the last member leaves, a
// tombstone when deleted; nothing for a group that only stores offsets.
func TestGroupMetadata(t *testing.T) {
	g, ids, now := stableGroup(t, 2)
	steps := []struct {
		name string
		do   func()
		want string
	}{
		{"stable: the assignment", func() {},
			fmt.Sprintf("v1 consumer gen 1 protocol range leader %[1]s members %[1]s(cl /127.0.0.1 a-%[1]s) %[2]s(cl /127.0.0.1 a-%[2]s)", min(ids[0], ids[1]), max(ids[0], ids[1]))},
		{"a member leaves: rebalancing keeps it", func() { g.LeaveGroup(now, leaveReq(ids[1], nil)) }, "keep"},
		{"the rest rejoins: still rebalancing", func() { join(g, now, joinReq(ids[0], "m")) }, "keep"},
		{"synced: the new generation", func() { syncG(g, now, syncReq(ids[0], 2, map[string]string{ids[0]: "all"})) },
			fmt.Sprintf("v1 consumer gen 2 protocol range leader %[1]s members %[1]s(cl /127.0.0.1 all)", ids[0])},
		{"the last leaves: Empty", func() { g.LeaveGroup(now, leaveReq(ids[0], nil)) }, "v1 consumer gen 3 protocol null leader null members"},
		{"deleted: a tombstone", func() { g.Delete(now) }, "tombstone"},
		{"gone", func() { g.Deleted() }, "tombstone"},
		{"offsets only: no record", func() { commit(g, now, commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 1}})) }, "keep"},
	}
	for _, s := range steps {
		s.do()
		if got := describeMetadata(t, g); got != s.want {
			t.Fatalf("%s: %q, want %q (state %v)", s.name, got, s.want, g.State())
		}
	}
}

// TestGroupMetadataAcrossProtocols: a classic group upgraded to a consumer
// group has its record tombstoned (Kafka writes the consumer group's own
// records, kaas none); one downgraded back writes the Stable group it
// starts as, while it rebalances.
func TestGroupMetadataAcrossProtocols(t *testing.T) {
	gr := New("g", testConfig())
	now := t0
	a, b := newCCM(t, gr, false), newCCM(t, gr, false)
	classicRebalance(t, &now, a, b)
	if w, _ := gr.GroupMetadata(); w != metadataWrite {
		t.Fatalf("classic group: %v", w)
	}
	c := newCGM(t, gr, "c")
	if r := c.beat(now); r.ErrorCode != 0 || gr.Kind() != KindConsumer {
		t.Fatalf("upgrade: %s, kind %v", code(r.ErrorCode), gr.Kind())
	}
	if w, _ := gr.GroupMetadata(); w != metadataTombstone {
		t.Fatalf("upgraded group: %v, want a tombstone", w)
	}

	gr, _, _, c, now = mixedGroup(t, testConfig(), true)
	if r := gr.ConsumerHeartbeat(now, client, c.req(-1), c.topics); r.ErrorCode != 0 || gr.Kind() != KindClassic || gr.State() != PreparingRebalance {
		t.Fatalf("downgrade: %s, kind %v state %v", code(r.ErrorCode), gr.Kind(), gr.State())
	}
	w, s := gr.GroupMetadata()
	if w != metadataWrite || s.Generation != gr.Generation() || len(s.Classic) != 2 {
		t.Fatalf("downgraded group: %v %+v", w, s)
	}
}

func TestGroupMetadataValue(t *testing.T) {
	inst := "i-1"
	s := &savedMembership{Kind: "classic", ProtocolType: "consumer", Protocol: "cooperative-sticky", Generation: 7, Leader: "m1",
		Classic: []savedClassic{{ID: "m1", InstanceID: &inst, ClientID: "c1", ClientHost: "10.0.0.5", SessionMs: 45000, RebalanceMs: 60000,
			Protocols:  []savedProtocol{{Name: "range", Metadata: []byte("r")}, {Name: "cooperative-sticky", Metadata: []byte("cs")}},
			Assignment: []byte("asg")}}}
	var v kmsg.GroupMetadataValue
	if err := v.ReadFrom(groupMetadataValue(s)); err != nil {
		t.Fatal(err)
	}
	m := v.Members[0]
	if v.Version != 1 || v.ProtocolType != "consumer" || v.Generation != 7 || deref(v.Protocol) != "cooperative-sticky" || deref(v.Leader) != "m1" || len(v.Members) != 1 {
		t.Fatalf("value %+v", v)
	}
	if m.MemberID != "m1" || m.InstanceID != nil || m.ClientID != "c1" || m.ClientHost != "/10.0.0.5" || m.SessionTimeoutMillis != 45000 ||
		m.RebalanceTimeoutMillis != 60000 || string(m.Subscription) != "cs" || string(m.Assignment) != "asg" {
		t.Fatalf("member %+v", m)
	}
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(groupMetadataKey("g")); err != nil || k.Version != 2 || k.Group != "g" {
		t.Fatalf("key %+v: %v", k, err)
	}
}

func TestMetadataChange(t *testing.T) {
	rec := func(v string) *metadataRecord { return &metadataRecord{value: []byte(v)} }
	tomb := &metadataRecord{}
	show := func(r *metadataRecord) string {
		switch {
		case r == nil:
			return "none"
		case r.value == nil:
			return "tombstone"
		}
		return string(r.value)
	}
	for _, tc := range []struct {
		name              string
		written           metadataHeld
		inFlight, pending *metadataRecord
		want              metadataWant
		value             string
		out               string
	}{
		{"first record", metadataHeld{}, nil, nil, metadataWrite, "a", "a"},
		{"unchanged", metadataHeld{value: []byte("a")}, nil, nil, metadataWrite, "a", "none"},
		{"changed", metadataHeld{value: []byte("a")}, nil, nil, metadataWrite, "b", "b"},
		{"in flight already", metadataHeld{value: []byte("a")}, rec("b"), nil, metadataWrite, "b", "none"},
		{"pending over in flight", metadataHeld{}, rec("b"), rec("c"), metadataWrite, "b", "b"},
		{"loaded: written once", metadataHeld{unknown: true}, nil, nil, metadataWrite, "a", "a"},
		{"rebalancing", metadataHeld{value: []byte("a")}, nil, nil, metadataKeep, "", "none"},
		{"deleted", metadataHeld{value: []byte("a")}, nil, nil, metadataTombstone, "", "tombstone"},
		{"deleted while writing", metadataHeld{}, rec("a"), nil, metadataTombstone, "", "tombstone"},
		{"never written: no tombstone", metadataHeld{}, nil, nil, metadataTombstone, "", "none"},
		{"tombstone in flight", metadataHeld{value: []byte("a")}, tomb, nil, metadataTombstone, "", "none"},
		{"loaded, then deleted", metadataHeld{unknown: true}, nil, nil, metadataTombstone, "", "tombstone"},
		{"loaded, rebalancing", metadataHeld{unknown: true}, nil, nil, metadataKeep, "", "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var value []byte
			if tc.value != "" {
				value = []byte(tc.value)
			}
			got := metadataChange([]*metadataRecord{tc.inFlight, tc.pending}, tc.written, tc.want, value)
			if s := show(got); s != tc.out {
				t.Fatalf("change %q, want %q", s, tc.out)
			}
		})
	}
}

// The metadata record follows the offsets of its batch, and waits when
// they do not all fit.
func TestOffsetsBatchWithGroupMetadata(t *testing.T) {
	now := time.UnixMilli(1800000000000)
	recs := map[groupstore.TP]*groupstore.Commit{{Topic: "a", Partition: 0}: nil, {Topic: "a", Partition: 1}: nil}
	meta := &metadataRecord{}
	b, taken, sent := offsetsBatch("g", recs, meta, now, 2)
	if len(taken) != 2 || sent != meta {
		t.Fatalf("took %d offsets, metadata %v", len(taken), sent)
	}
	records := batchRecords(t, b)
	var k kmsg.GroupMetadataKey
	if len(records) != 3 || k.ReadFrom(records[2].Key) != nil || k.Version != 2 || k.Group != "g" || !records[2].Tombstone {
		t.Fatalf("records %+v: want two offset tombstones, then the group's", records)
	}
	if _, _, sent := offsetsBatch("g", recs, meta, now, 1); sent != nil {
		t.Fatal("the metadata record went before offsets left for the next batch")
	}
	b, taken, sent = offsetsBatch("g", nil, &metadataRecord{value: []byte{0, 1}}, now, 2)
	if records := batchRecords(t, b); len(taken) != 0 || sent == nil || len(records) != 1 || records[0].Tombstone {
		t.Fatalf("metadata only: %+v", records)
	}
}

// batchRecords decodes a batch's records.
func batchRecords(t *testing.T, b []byte) []compaction.Record {
	t.Helper()
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatalf("batch: %v", err)
	}
	records, err := compaction.Records(b, h)
	if err != nil {
		t.Fatalf("records: %v", err)
	}
	return records
}
