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

func TestOffsetsChanges(t *testing.T) {
	tp := func(p int32) groupstore.TP { return groupstore.TP{Topic: "t", Partition: p} }
	c := func(o int64) groupstore.Commit { return groupstore.Commit{Offset: o, LeaderEpoch: -1} }
	ptr := func(o int64) *groupstore.Commit { x := c(o); return &x }
	show := func(m map[groupstore.TP]*groupstore.Commit) string {
		s := ""
		for p := int32(0); p < 5; p++ {
			if r, ok := m[tp(p)]; ok {
				if r == nil {
					s += fmt.Sprintf("%d:tombstone ", p)
				} else {
					s += fmt.Sprintf("%d:%d ", p, r.Offset)
				}
			}
		}
		return s
	}
	for _, tc := range []struct {
		name      string
		written   map[groupstore.TP]groupstore.Commit
		inFlight  map[groupstore.TP]*groupstore.Commit
		pending   map[groupstore.TP]*groupstore.Commit
		committed map[groupstore.TP]groupstore.Commit
		want      string
	}{
		{"nothing written: every offset", nil, nil, nil, map[groupstore.TP]groupstore.Commit{tp(0): c(5), tp(1): c(7)}, "0:5 1:7 "},
		{"unchanged: nothing", map[groupstore.TP]groupstore.Commit{tp(0): c(5)}, nil, nil, map[groupstore.TP]groupstore.Commit{tp(0): c(5)}, ""},
		{"moved and deleted", map[groupstore.TP]groupstore.Commit{tp(0): c(5), tp(1): c(7)}, nil, nil, map[groupstore.TP]groupstore.Commit{tp(0): c(6)}, "0:6 1:tombstone "},
		{"in flight already carries it", map[groupstore.TP]groupstore.Commit{tp(0): c(5)}, map[groupstore.TP]*groupstore.Commit{tp(0): ptr(6)}, nil, map[groupstore.TP]groupstore.Commit{tp(0): c(6)}, ""},
		{"pending over in flight", nil, map[groupstore.TP]*groupstore.Commit{tp(0): ptr(6)}, map[groupstore.TP]*groupstore.Commit{tp(0): ptr(8)}, map[groupstore.TP]groupstore.Commit{tp(0): c(6)}, "0:6 "},
		{"a tombstone in flight, set again", map[groupstore.TP]groupstore.Commit{tp(2): c(1)}, map[groupstore.TP]*groupstore.Commit{tp(2): nil}, nil, map[groupstore.TP]groupstore.Commit{tp(2): c(1)}, "2:1 "},
		{"gone from pending only", nil, nil, map[groupstore.TP]*groupstore.Commit{tp(3): ptr(4)}, nil, "3:tombstone "},
		{"only what the record leaves out changed (topic id, expiry): nothing", map[groupstore.TP]groupstore.Commit{tp(0): c(5)}, nil, nil, map[groupstore.TP]groupstore.Commit{tp(0): {Offset: 5, LeaderEpoch: -1, ExpireTime: 9, TopicID: [16]byte{1}}}, ""},
		{"the group deleted", map[groupstore.TP]groupstore.Commit{tp(0): c(5), tp(4): c(2)}, nil, nil, nil, "0:tombstone 4:tombstone "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := offsetsChanges([]map[groupstore.TP]*groupstore.Commit{tc.inFlight, tc.pending}, tc.written, tc.committed)
			if s := show(got); s != tc.want {
				t.Fatalf("changes %q, want %q", s, tc.want)
			}
		})
	}
}

// The records are Kafka's: what its OffsetsMessageFormatter and Burrow
// decode.
func TestOffsetsBatch(t *testing.T) {
	recs := map[groupstore.TP]*groupstore.Commit{
		{Topic: "b", Partition: 0}: {Offset: 42, LeaderEpoch: 3, Metadata: "m", CommitTime: 1700000000000},
		{Topic: "a", Partition: 1}: nil,
		{Topic: "a", Partition: 0}: {Offset: 7, LeaderEpoch: -1, CommitTime: 1700000000001},
	}
	now := time.UnixMilli(1800000000000)
	b, taken, _ := offsetsBatch("g", recs, nil, now, 2)
	if len(taken) != 2 {
		t.Fatalf("took %d records, want the first 2", len(taken))
	}
	h, err := batch.Validate(b)
	if err != nil || h.NumRecords != 2 || h.FirstTimestamp != now.UnixMilli() {
		t.Fatalf("batch %+v: %v", h, err)
	}
	records, err := compaction.Records(b, h)
	if err != nil || len(records) != 2 {
		t.Fatalf("records %v: %v", records, err)
	}
	var k kmsg.OffsetCommitKey
	if err := k.ReadFrom(records[0].Key); err != nil || k.Version != 1 || k.Group != "g" || k.Topic != "a" || k.Partition != 0 {
		t.Fatalf("first key %+v: %v", k, err)
	}
	var v kmsg.OffsetCommitValue
	if err := v.ReadFrom(records[0].Value); err != nil || v.Version != 3 || v.Offset != 7 || v.LeaderEpoch != -1 || v.CommitTimestamp != 1700000000001 {
		t.Fatalf("first value %+v: %v", v, err)
	}
	if err := k.ReadFrom(records[1].Key); err != nil || k.Topic != "a" || k.Partition != 1 || !records[1].Tombstone {
		t.Fatalf("second record: key %+v %+v: want a's partition 1 tombstone", k, records[1])
	}
	_, rest, _ := offsetsBatch("g", map[groupstore.TP]*groupstore.Commit{{Topic: "b", Partition: 0}: recs[groupstore.TP{Topic: "b", Partition: 0}]}, nil, now, 2)
	if c := rest[groupstore.TP{Topic: "b", Partition: 0}]; c == nil || c.Offset != 42 || c.Metadata != "m" {
		t.Fatalf("the rest: %+v", rest)
	}
}
