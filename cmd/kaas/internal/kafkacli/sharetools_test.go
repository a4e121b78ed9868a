package kafkacli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShareConsumerPerfLine: ShareConsumerPerformance's stats fields, in
// its order (records/s before the record count), with Java's rounding.
func TestShareConsumerPerfLine(t *testing.T) {
	datef, err := parsePerfDateFormat("HH:mm:ss:SSS")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 9, 1, 10, 0, 0, 0, time.Local).UnixMilli()
	for _, c := range []struct {
		end, bytes, records int64
		want                string
	}{
		{start + 2000, 3 * 1024 * 1024, 1000, "10:00:00:000, 10:00:02:000, 3.0000, 1.5000, 500.0000, 1000, 2000"},
		{start + 3, 5, 1, "10:00:00:000, 10:00:00:003, 0.0000, 0.0016, 333.3333, 1, 3"},
		{start, 0, 0, "10:00:00:000, 10:00:00:000, 0.0000, NaN, NaN, 0, 0"},
	} {
		if got := shareConsumerPerfLine(datef, start, c.end, c.bytes, c.records); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// TestVerifiableShareAcksEvents: each partition result claims the offsets
// marked for its partition, one offsets_acknowledged event per partition
// in Kafka's field order; a failure is reported and not counted; the
// consumer is stopped once --max-messages are accepted.
func TestVerifiableShareAcksEvents(t *testing.T) {
	var out bytes.Buffer
	stopped := 0
	a := &verifiableShareAcks{ev: &verifiableEvents{out: &out, now: func() time.Time { return time.UnixMilli(7) }},
		marked: map[verifiableTopicPartition][]int64{}, polled: map[verifiableTopicPartition][]int64{},
		maxMessages: 4, done: func() { stopped++ }}
	a.poll(verifiableTopicPartition{"t", 1}, []int64{5, 3})
	a.poll(verifiableTopicPartition{"t", 0}, []int64{0})
	a.callback(nil, kgo.ShareAckResults{{Topic: "t", Partition: 1}}) // before marking: nothing to report
	if out.Len() != 0 {
		t.Fatalf("an unmarked poll reported %s", out.String())
	}
	a.markPolled()
	a.callback(nil, kgo.ShareAckResults{{Topic: "t", Partition: 1}, {Topic: "t", Partition: 0, Err: kerr.InvalidRecordState}})
	if a.total() != 2 || stopped != 0 {
		t.Errorf("accepted %d, stopped %d; want 2, 0", a.total(), stopped)
	}
	a.poll(verifiableTopicPartition{"t", 0}, []int64{1, 2})
	a.markPolled()
	a.callback(nil, kgo.ShareAckResults{{Topic: "t", Partition: 0}})
	want := []string{
		`{"timestamp":7,"name":"offsets_acknowledged","count":2,"partitions":[{"topic":"t","partition":1,"count":2,"offsets":[3,5]}],"success":true}`,
		`{"timestamp":7,"name":"offsets_acknowledged","count":1,"partitions":[{"topic":"t","partition":0,"count":1,"offsets":[0]}],"success":false,"error":"` + kerr.InvalidRecordState.Description + `"}`,
		`{"timestamp":7,"name":"offsets_acknowledged","count":2,"partitions":[{"topic":"t","partition":0,"count":2,"offsets":[1,2]}],"success":true}`,
	}
	if got := strings.TrimSuffix(out.String(), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("events\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
	if a.total() != 4 || stopped != 1 {
		t.Errorf("accepted %d, stopped %d; want 4, 1", a.total(), stopped)
	}
}
