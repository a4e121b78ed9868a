package batch

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"
)

// withCount is b with its record count and last offset delta set to claim
// n records, CRC recomputed: a batch that lies about its records.
func withCount(b []byte, n int32) []byte {
	b = append([]byte(nil), b...)
	binary.BigEndian.PutUint32(b[offRecordCount:], uint32(n))
	binary.BigEndian.PutUint32(b[offLastOffsetDelta:], uint32(n-1))
	binary.BigEndian.PutUint32(b[offCRC:], Checksum(b))
	return b
}

func TestValidateProduceChecksTheRecordCount(t *testing.T) {
	good := Build(Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("a"), []byte("b"), []byte("c")}})
	if _, err := ValidateProduce(good); err != nil {
		t.Fatalf("good batch: %v", err)
	}
	for _, n := range []int32{4, 2, 1, 1 << 30} {
		if _, err := ValidateProduce(withCount(good, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("3 records counted as %d: %v, want ErrCorrupt", n, err)
		}
	}
}

func TestValidateProduceBoundsACompressedCount(t *testing.T) {
	gz, err := Recompress(Build(Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("a")}}), 1)
	if err != nil {
		t.Fatal(err)
	}
	// Compressed records are not decoded: a count that fits is taken as
	// given, one past what MaxDecompressed bytes can hold is refused.
	fits := int32(MaxDecompressed / MinRecordSize)
	if _, err := ValidateProduce(withCount(gz, fits)); err != nil {
		t.Errorf("%d records claimed: %v", fits, err)
	}
	if _, err := ValidateProduce(withCount(gz, fits+1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("%d records claimed: %v, want ErrInvalid", fits+1, err)
	}
	short := withCount(gz, 5)
	binary.BigEndian.PutUint32(short[offLastOffsetDelta:], 7)
	binary.BigEndian.PutUint32(short[offCRC:], Checksum(short))
	if _, err := ValidateProduce(short); !errors.Is(err, ErrInvalid) {
		t.Errorf("5 records with lastOffsetDelta 7: %v, want ErrInvalid", err)
	}
}

// TestRecordTimestampsOfALyingCount: a stored batch whose count claims a
// billion records is an error, not a billion-entry allocation (which runs
// the broker out of memory).
func TestRecordTimestampsOfALyingCount(t *testing.T) {
	b := withCount(Build(Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("a")}}), math.MaxInt32)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := RecordTimestamps(b)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("RecordTimestamps: %v, want ErrCorrupt", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("RecordTimestamps of a %d-byte batch allocated %d bytes", len(b), grew)
	}
}
