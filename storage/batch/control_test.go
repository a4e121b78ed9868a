package batch

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMarkerIsAValidControlBatchKafkaClientsRead(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := Marker(42, 3, commit, 7, 1234)
		h, err := Validate(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.NumRecords != 1 || h.BaseSequence != -1 {
			t.Fatalf("header %+v", h)
		}
		typ, err := ControlType(b)
		want := ControlAbort
		if commit {
			want = ControlCommit
		}
		if err != nil || typ != want {
			t.Fatalf("ControlType = %d %v, want %d", typ, err, want)
		}
		// franz-go's decoding of the same bytes agrees.
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		var rec kmsg.Record
		if err := rec.ReadFrom(rb.Records); err != nil {
			t.Fatal(err)
		}
		var key kmsg.ControlRecordKey
		if err := key.ReadFrom(rec.Key); err != nil || int16(key.Type) != want {
			t.Fatalf("record key %x: %+v %v", rec.Key, key, err)
		}
		var val kmsg.EndTxnMarker
		if err := val.ReadFrom(rec.Value); err != nil || val.CoordinatorEpoch != 7 {
			t.Fatalf("record value %x: %+v %v", rec.Value, val, err)
		}
	}
	if _, err := ControlType(Marker(1, 0, true, 0, 0)[:HeaderSize+2]); err == nil {
		t.Fatal("truncated marker accepted")
	}
}
