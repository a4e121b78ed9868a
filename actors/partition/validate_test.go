package partition

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/storage/batch"
)

func TestValidateProduce(t *testing.T) {
	one := batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte("a"), []byte("b")}})
	badCRC := append([]byte(nil), one...)
	badCRC[len(badCRC)-1] ^= 0xff
	for _, tc := range []struct {
		name    string
		records []byte
		max     int
		code    int16
	}{
		{"one batch", one, 1 << 20, 0},
		{"over max.message.bytes", one, len(one) - 1, kerr.MessageTooLarge.Code},
		{"empty", nil, 1 << 20, kerr.CorruptMessage.Code},
		{"shorter than a header", one[:20], 1 << 20, kerr.CorruptMessage.Code},
		{"torn batch", one[:len(one)-1], 1 << 20, kerr.CorruptMessage.Code},
		{"one batch and a torn one", append(append([]byte(nil), one...), one[:30]...), 1 << 20, kerr.CorruptMessage.Code},
		{"two batches", append(append([]byte(nil), one...), one...), 1 << 20, kerr.InvalidRecord.Code},
		{"bad crc", badCRC, 1 << 20, kerr.CorruptMessage.Code},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, h, _, code, msg := validateProduce(tc.records, tc.max, false)
			if code != tc.code {
				t.Fatalf("code %d (%s), want %d", code, msg, tc.code)
			}
			if code == 0 && (len(b) != len(one) || cap(b) != len(b) || h.NumRecords != 2) {
				t.Fatalf("batch of %d bytes (cap %d), %d records; want %d bytes, 2 records", len(b), cap(b), h.NumRecords, len(one))
			}
		})
	}
}
