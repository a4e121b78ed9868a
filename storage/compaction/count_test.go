package compaction

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/kaas-project/kaas/storage/batch"
)

// TestRecordsOfALyingCount: a compressed batch in a log whose count claims
// 2^31-1 records (the produce path refuses such a batch) is an error for the
// cleaner, not an allocation that runs the broker out of memory.
func TestRecordsOfALyingCount(t *testing.T) {
	plain := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte("v")}})
	b, err := batch.Recompress(plain, 1) // gzip
	if err != nil {
		t.Fatal(err)
	}
	// Record count (offset 57), last offset delta (23) and CRC (17) of the
	// v2 batch header.
	binary.BigEndian.PutUint32(b[57:], math.MaxInt32)
	binary.BigEndian.PutUint32(b[23:], math.MaxInt32-1)
	binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatalf("the batch must pass the header checks a stored batch gets: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Records(b, h)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, batch.ErrCorrupt) {
		t.Fatalf("Records: %v, want ErrCorrupt", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("Records of a %d-byte batch allocated %d bytes", len(b), grew)
	}
}
