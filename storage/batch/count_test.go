package batch

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"strings"
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
	for c := CodecNone; c <= CodecZstd; c++ {
		b, err := Recompress(good, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := ValidateProduce(b, false); err != nil {
			t.Fatalf("codec %d: good batch: %v", c, err)
		}
		for _, n := range []int32{4, 2, 1, 1 << 20} {
			if _, _, err := ValidateProduce(withCount(b, n), false); !errors.Is(err, ErrInvalid) {
				t.Errorf("codec %d: 3 records counted as %d: %v, want ErrInvalid", c, n, err)
			}
		}
	}
}

func TestValidateProduceBoundsACompressedCount(t *testing.T) {
	gz, err := Recompress(Build(Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("a")}}), CodecGzip)
	if err != nil {
		t.Fatal(err)
	}
	// A count more than MaxDecompressed bytes can hold is refused before
	// the records are decompressed, one that fits when they are walked.
	fits := int32(MaxDecompressed / MinRecordSize)
	if _, _, err := ValidateProduce(withCount(gz, fits), false); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "record 1 of") {
		t.Errorf("%d records claimed: %v, want the walk's ErrInvalid", fits, err)
	}
	if _, _, err := ValidateProduce(withCount(gz, fits+1), false); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cannot fit") {
		t.Errorf("%d records claimed: %v, want ErrInvalid before decompressing", fits+1, err)
	}
	short := withCount(gz, 5)
	binary.BigEndian.PutUint32(short[offLastOffsetDelta:], 7)
	binary.BigEndian.PutUint32(short[offCRC:], Checksum(short))
	if _, _, err := ValidateProduce(short, false); !errors.Is(err, ErrInvalid) {
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
