package batch

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Spec describes an uncompressed batch to build (tests, tools, fuzz seeds,
// the broker's own writes such as share groups' dead letters).
type Spec struct {
	BaseOffset    int64
	ProducerID    int64 // -1 for none
	ProducerEpoch int16
	BaseSequence  int32
	Timestamp     int64 // first timestamp; record i gets Timestamp+i
	// SameTimestamp gives every record Timestamp.
	SameTimestamp bool
	Values        [][]byte        // a nil value is null
	Keys          [][]byte        // optional, same length as Values; a nil key is null
	Headers       [][]kmsg.Header // optional, same length as Values
	Transactional bool            // sets the transactional attribute
}

// Build encodes an uncompressed v2 record batch with a correct CRC.
func Build(s Spec) []byte {
	var recs []byte
	step := int64(1)
	if s.SameTimestamp {
		step = 0
	}
	for i, v := range s.Values {
		r := kmsg.Record{TimestampDelta64: int64(i) * step, OffsetDelta: int32(i), Value: v}
		if i < len(s.Keys) {
			r.Key = s.Keys[i]
		}
		if i < len(s.Headers) {
			r.Headers = s.Headers[i]
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
	return Frame(kmsg.RecordBatch{
		Attributes:           attrs,
		FirstOffset:          s.BaseOffset,
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      max(n-1, 0),
		FirstTimestamp:       s.Timestamp,
		MaxTimestamp:         s.Timestamp + int64(max(n-1, 0))*step,
		ProducerID:           s.ProducerID,
		ProducerEpoch:        s.ProducerEpoch,
		FirstSequence:        s.BaseSequence,
		NumRecords:           n,
		Records:              recs,
	})
}

// Frame encodes b as a v2 batch as it stands (its Records section and
// header fields as given, right or wrong), with its length and CRC-32C
// computed: a batch as a client may send it.
func Frame(b kmsg.RecordBatch) []byte {
	b.Magic = 2
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[offLength:], uint32(len(out)-LengthPrefix))
	binary.BigEndian.PutUint32(out[offCRC:], Checksum(out))
	return out
}
