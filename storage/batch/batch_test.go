package batch

import (
	"errors"
	"slices"
	"testing"
)

func TestBuildValidates(t *testing.T) {
	b := Build(Spec{ProducerID: 7, ProducerEpoch: 1, BaseSequence: 10, Timestamp: 1000, Values: [][]byte{[]byte("a"), []byte("bb"), []byte("ccc")}})
	h, _, err := ValidateProduce(b, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.NumRecords != 3 || h.LastOffsetDelta != 2 || h.ProducerID != 7 || h.BaseSequence != 10 || h.LastSequence() != 12 {
		t.Fatalf("header %+v", h)
	}
	if h.MaxTimestamp != 1002 || h.Size() != len(b) {
		t.Fatalf("header %+v size %d", h, len(b))
	}
	ts, err := RecordTimestamps(b)
	if err != nil || len(ts) != 3 || ts[2].Timestamp != 1002 || ts[1].Offset != 1 {
		t.Fatalf("timestamps %v %v", ts, err)
	}
}

func TestValidateRejects(t *testing.T) {
	good := Build(Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("x"), []byte("y")}})
	cases := []struct {
		name string
		mut  func([]byte) []byte
		want error
	}{
		{"crc flipped", func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b }, ErrCorrupt},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, ErrCorrupt},
		{"short header", func(b []byte) []byte { return b[:40] }, ErrCorrupt},
		{"magic 1", func(b []byte) []byte { b[offMagic] = 1; return b }, ErrUnsupportedMagic},
		{"length too small", func(b []byte) []byte { b[offLength+3] = 5; b[offLength+2] = 0; return b }, ErrCorrupt},
		{"count mismatch", func(b []byte) []byte {
			b[offRecordCount+3] = 5
			b[offCRC], b[offCRC+1], b[offCRC+2], b[offCRC+3] = 0, 0, 0, 0
			c := Checksum(b)
			b[offCRC], b[offCRC+1], b[offCRC+2], b[offCRC+3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
			return b
		}, ErrInvalid},
		{"control batch", func(b []byte) []byte {
			b[offAttributes+1] |= AttrControl
			c := Checksum(b)
			b[offCRC], b[offCRC+1], b[offCRC+2], b[offCRC+3] = byte(c>>24), byte(c>>16), byte(c>>8), byte(c)
			return b
		}, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mut(append([]byte(nil), good...))
			if _, _, err := ValidateProduce(b, false); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSplitAndRewrite(t *testing.T) {
	a := Build(Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("1")}})
	b := Build(Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("2"), []byte("3")}})
	all := append(append([]byte(nil), a...), b...)
	bs, rest, err := Split(append(all, b[:20]...))
	if err != nil || len(bs) != 2 || len(rest) != 20 {
		t.Fatalf("split: %d batches, %d rest, %v", len(bs), len(rest), err)
	}
	SetBaseOffset(bs[1], 41)
	SetLeaderEpoch(bs[1], 3)
	h, err := Validate(bs[1])
	if err != nil {
		t.Fatalf("rewriting offset/epoch must not break the CRC: %v", err)
	}
	if h.BaseOffset != 41 || h.LeaderEpoch != 3 || h.NextOffset() != 43 {
		t.Fatalf("header %+v", h)
	}
	SetLogAppendTime(bs[0], 99)
	h, err = Validate(bs[0])
	if err != nil || h.MaxTimestamp != 99 || h.Attributes&AttrTimestampType == 0 {
		t.Fatalf("log append time: %+v %v", h, err)
	}
}

func TestLastSequenceWraps(t *testing.T) {
	h := Header{BaseSequence: 1<<31 - 2, LastOffsetDelta: 3}
	if got := h.LastSequence(); got != 1 {
		t.Fatalf("LastSequence = %d, want 1", got)
	}
}

// TestRecordTimestampsOfCompressedBatches: a compressed batch lists its
// records' offsets and timestamps as its uncompressed form does, in every
// codec; one whose records do not decompress is corrupt.
func TestRecordTimestampsOfCompressedBatches(t *testing.T) {
	records := [][]byte{goodRecord(0, 0), goodRecord(1, 30), goodRecord(2, 10)}
	want, err := RecordTimestamps(rawBatch(t, CodecNone, 1000, records...))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 || want[1] != (RecordTS{Offset: 1, Timestamp: 1030}) || want[2] != (RecordTS{Offset: 2, Timestamp: 1010}) {
		t.Fatalf("uncompressed: %v", want)
	}
	for _, c := range []int16{CodecGzip, CodecSnappy, CodecLz4, CodecZstd} {
		b := rawBatch(t, c, 1000, records...)
		if got, err := RecordTimestamps(b); err != nil || !slices.Equal(got, want) {
			t.Errorf("codec %d: %v %v, want %v", c, got, err, want)
		}
		for i := HeaderSize; i < len(b); i++ {
			b[i] = 0xff // the records section is garbage to every codec
		}
		if _, err := RecordTimestamps(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("codec %d damaged: %v, want ErrCorrupt", c, err)
		}
	}
}
