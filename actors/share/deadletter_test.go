package share

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
)

// TestCheckTopic: Kafka's checks of a group's dead-letter topic, in its
// order and with its messages.
func TestCheckTopic(t *testing.T) {
	v := &routing.View{Topics: map[string]*routing.Topic{
		"dlq.on":     {Name: "dlq.on", Config: map[string]string{topicEnable: "true"}},
		"dlq.off":    {Name: "dlq.off"},
		"other.on":   {Name: "other.on", Config: map[string]string{topicEnable: "TRUE"}},
		"__internal": {Name: "__internal", Config: map[string]string{topicEnable: "true"}},
	}}
	def := DeadLetterSettings{TopicPrefix: "dlq."}
	cases := []struct {
		topic  string
		s      DeadLetterSettings
		exists bool
		err    string
	}{
		{"dlq.on", def, true, ""},
		{"", def, false, "Configured DLQ topic name in share group: g is empty."},
		{"__internal", DeadLetterSettings{}, false, "Configured DLQ topic name in share group: g cannot start with __, topic: __internal."},
		{"dlq.off", def, true, "DLQ is not enabled on configured DLQ topic for share group: g, topic: dlq.off"},
		{"other.on", def, true, "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: g, topic: other.on, prefix: dlq."},
		{"other.on", DeadLetterSettings{}, true, ""},
		{"dlq.missing", def, false, "DLQ topic does not exist and auto create is disabled on cluster for share group: g, topic: dlq.missing."},
		{"dlq.missing", DeadLetterSettings{TopicPrefix: "dlq.", AutoCreate: true}, false, ""},
		{"other.missing", DeadLetterSettings{TopicPrefix: "dlq.", AutoCreate: true}, false, "Configured DLQ topic name does not comply with the DLQ topic prefix in share group: g, topic: other.missing, prefix: dlq."},
	}
	for _, c := range cases {
		exists, err := checkTopic(v, "g", c.topic, c.s)
		var ce *ConfigError
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q %+v: %v", c.topic, c.s, err)
		case c.err != "" && (!errors.As(err, &ce) || ce.Msg != c.err):
			t.Errorf("%q %+v: error %v, want %q", c.topic, c.s, err, c.err)
		case c.err == "" && exists != c.exists:
			t.Errorf("%q %+v: exists %v, want %v", c.topic, c.s, exists, c.exists)
		}
	}
}

// TestBuildBatch: a run's dead-letter records go out in batches that fit
// the topic's max.message.bytes (at least one record each), with the
// headers Kafka writes, the copied key and value, and the write's time.
func TestBuildBatch(t *testing.T) {
	clk := clock.NewFake(time.UnixMilli(1_700_000_000_000))
	w := &DeadLetterWriter{Clock: clk}
	job := deadLetterJob{group: "g", topic: "orders", partition: 3, letter: DeadLetter{First: 10, Last: 14, DeliveryCount: 2, Rejected: true}}
	copied := map[int64]compaction.Record{}
	for o := int64(10); o <= 14; o++ {
		copied[o] = compaction.Record{Offset: o, Key: []byte{byte(o)}, Value: make([]byte, 400)}
	}
	copied[12] = compaction.Record{Offset: 12, NullKey: true, Tombstone: true}
	var sizes []int
	for next := job.letter.First; next <= job.letter.Last; {
		b, last := w.buildBatch(job, next, job.letter.Last, 1400, copied)
		if len(b) > 1400 {
			t.Fatalf("batch from %d is %d bytes, over 1400", next, len(b))
		}
		h, err := batch.Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := compaction.Records(b, h)
		if err != nil || len(recs) != int(last-next+1) {
			t.Fatalf("batch from %d: %d records (%v), want %d", next, len(recs), err, last-next+1)
		}
		var kb kmsg.RecordBatch
		if err := kb.ReadFrom(b); err != nil || kb.FirstTimestamp != clk.Now().UnixMilli() || kb.MaxTimestamp != kb.FirstTimestamp {
			t.Fatalf("batch timestamps %d-%d (%v), want the write's %d", kb.FirstTimestamp, kb.MaxTimestamp, err, clk.Now().UnixMilli())
		}
		for i, r := range recs {
			o := next + int64(i)
			if want := copied[o]; r.NullKey != want.NullKey || r.Tombstone != want.Tombstone || len(r.Value) != len(want.Value) {
				t.Fatalf("record for %d: key null %v value null %v (%d bytes), want %v %v (%d)", o, r.NullKey, r.Tombstone, len(r.Value), want.NullKey, want.Tombstone, len(want.Value))
			}
		}
		sizes = append(sizes, len(recs))
		next = last + 1
	}
	if fmt.Sprint(sizes) != "[2 2 1]" {
		t.Fatalf("records per batch %v, want [2 2 1]", sizes)
	}
	// A record over the bound goes alone (the leader refuses it, as Kafka's).
	if _, last := w.buildBatch(job, 10, job.letter.Last, 100, copied); last != 10 {
		t.Fatalf("a batch over the bound holds up to %d, want only 10", last)
	}
	// Headers: where the record is and why it is here.
	if _, last := w.buildBatch(job, 10, 11, 1<<20, copied); last != 11 {
		t.Fatalf("a batch bounded at 11 holds up to %d", last)
	}
	b, _ := w.buildBatch(job, 13, job.letter.Last, 1<<20, nil)
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := compaction.Records(b, h)
	if err != nil || len(recs) != 2 || !recs[0].NullKey || !recs[0].Tombstone {
		t.Fatalf("records without copies: %+v %v, want two with null key and value", recs, err)
	}
	var r kmsg.Record
	if err := r.ReadFrom(recs[1].Raw); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range r.Headers {
		got = append(got, x.Key+"="+string(x.Value))
	}
	want := "[__dlq.errors.topic=orders __dlq.errors.partition=3 __dlq.errors.offset=14 __dlq.errors.group=g __dlq.errors.delivery.count=2 __dlq.errors.message=Offset rejected by client.]"
	if fmt.Sprint(got) != want {
		t.Fatalf("headers %v, want %s", got, want)
	}
}
