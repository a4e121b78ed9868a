package batch

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Spec describes an uncompressed batch to build (tests, tools, fuzz seeds).
type Spec struct {
	BaseOffset    int64
	ProducerID    int64 // -1 for none
	ProducerEpoch int16
	BaseSequence  int32
	Timestamp     int64 // first timestamp; record i gets Timestamp+i
	Values        [][]byte
	Keys          [][]byte // optional, same length as Values
	Transactional bool     // sets the transactional attribute
}

// Build encodes an uncompressed v2 record batch with a correct CRC.
func Build(s Spec) []byte {
	var recs []byte
	for i, v := range s.Values {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: int32(i), Value: v}
		if i < len(s.Keys) {
			r.Key = s.Keys[i]
		}
		body := r.AppendTo(nil)[1:] // drop the zero Length varint
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	n := int32(len(s.Values))
	var attrs int16
	if s.Transactional {
		attrs = AttrTransactional
	}
	b := kmsg.RecordBatch{
		Attributes:           attrs,
		FirstOffset:          s.BaseOffset,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      max(n-1, 0),
		FirstTimestamp:       s.Timestamp,
		MaxTimestamp:         s.Timestamp + int64(max(n-1, 0)),
		ProducerID:           s.ProducerID,
		ProducerEpoch:        s.ProducerEpoch,
		FirstSequence:        s.BaseSequence,
		NumRecords:           n,
		Records:              recs,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-LengthPrefix))
	binary.BigEndian.PutUint32(out[offCRC:], Checksum(out))
	return out
}
