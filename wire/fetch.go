package wire

import (
	"encoding/binary"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Records is a partition's record batches as a piece of a response frame:
// written by WriteTo (sendfile for file-backed records) rather than copied
// into the encoded body.
type Records interface {
	Len() int
	io.WriterTo
}

// Piece is one part of an encoded response frame: Bytes, or Records when
// Records is not nil. A frame is its pieces written in order.
type Piece struct {
	Bytes   []byte
	Records Records
}

// FrameLen is the total length of pieces.
func FrameLen(pieces []Piece) int {
	n := 0
	for _, p := range pieces {
		if p.Records != nil {
			n += p.Records.Len()
		} else {
			n += len(p.Bytes)
		}
	}
	return n
}

// AppendFetchResponse frames a Fetch response (versions 4 to 16) for a
// request with header h, like AppendResponse, but leaves the record
// batches out of the encoded bytes: records(t, p) gives the batches of
// resp.Topics[t].Partitions[p] (nil: that partition's RecordBatches bytes
// are encoded as usual), and each becomes a Records piece. The pieces
// written in order are byte for byte what AppendResponse produces with the
// same batches in RecordBatches. Unknown tagged fields are not encoded.
func AppendFetchResponse(dst []byte, h RequestHeader, resp *kmsg.FetchResponse, records func(t, p int) Records) []Piece {
	e := fetchEncoder{buf: dst[:0], version: resp.Version, flexible: resp.Version >= 12}
	e.buf = append(e.buf, 0, 0, 0, 0)
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(h.CorrelationID))
	if e.flexible {
		e.buf = append(e.buf, 0)
	}
	v := e.version
	e.i32(resp.ThrottleMillis)
	if v >= 7 {
		e.i16(resp.ErrorCode)
		e.i32(resp.SessionID)
	}
	e.arrayLen(len(resp.Topics))
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		if v <= 12 {
			e.str(t.Topic)
		} else {
			e.buf = append(e.buf, t.TopicID[:]...)
		}
		e.arrayLen(len(t.Partitions))
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			e.i32(p.Partition)
			e.i16(p.ErrorCode)
			e.i64(p.HighWatermark)
			e.i64(p.LastStableOffset)
			if v >= 5 {
				e.i64(p.LogStartOffset)
			}
			e.nullableArrayLen(len(p.AbortedTransactions), p.AbortedTransactions == nil)
			for _, a := range p.AbortedTransactions {
				e.i64(a.ProducerID)
				e.i64(a.FirstOffset)
				e.tags()
			}
			if v >= 11 {
				e.i32(p.PreferredReadReplica)
			}
			var r Records
			if records != nil {
				r = records(ti, pi)
			}
			if r != nil {
				e.bytesLen(r.Len(), false)
				e.cut(r)
			} else {
				e.bytesLen(len(p.RecordBatches), p.RecordBatches == nil)
				e.buf = append(e.buf, p.RecordBatches...)
			}
			if e.flexible {
				n := 0
				de := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
				cl := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
				sn := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
				for _, b := range []bool{de, cl, sn} {
					if b {
						n++
					}
				}
				e.uvarint(uint64(n))
				if de {
					e.uvarint(0)
					e.uvarint(13)
					e.i32(p.DivergingEpoch.Epoch)
					e.i64(p.DivergingEpoch.EndOffset)
					e.tags()
				}
				if cl {
					e.uvarint(1)
					e.uvarint(9)
					e.i32(p.CurrentLeader.LeaderID)
					e.i32(p.CurrentLeader.LeaderEpoch)
					e.tags()
				}
				if sn {
					e.uvarint(2)
					e.uvarint(13)
					e.i64(p.SnapshotID.EndOffset)
					e.i32(p.SnapshotID.Epoch)
					e.tags()
				}
			}
		}
		e.tags()
	}
	if e.flexible {
		if len(resp.Brokers) == 0 {
			e.uvarint(0)
		} else {
			e.uvarint(1)
			e.uvarint(0)
			var b fetchEncoder
			b.flexible = true
			b.arrayLen(len(resp.Brokers))
			for _, br := range resp.Brokers {
				b.i32(br.NodeID)
				b.str(br.Host)
				b.i32(br.Port)
				if br.Rack == nil {
					b.uvarint(0)
				} else {
					b.str(*br.Rack)
				}
				b.tags()
			}
			e.uvarint(uint64(len(b.buf)))
			e.buf = append(e.buf, b.buf...)
		}
	}
	pieces := e.finish()
	binary.BigEndian.PutUint32(pieces[0].Bytes, uint32(FrameLen(pieces)-4))
	return pieces
}

type fetchEncoder struct {
	buf      []byte
	version  int16
	flexible bool
	cuts     []int // positions in buf where records[i] go
	records  []Records
}

func (e *fetchEncoder) i16(v int16) { e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(v)) }
func (e *fetchEncoder) i32(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }
func (e *fetchEncoder) i64(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }
func (e *fetchEncoder) uvarint(v uint64) {
	e.buf = binary.AppendUvarint(e.buf, v)
}

func (e *fetchEncoder) tags() {
	if e.flexible {
		e.buf = append(e.buf, 0)
	}
}

func (e *fetchEncoder) str(s string) {
	if e.flexible {
		e.uvarint(uint64(len(s)) + 1)
	} else {
		e.i16(int16(len(s)))
	}
	e.buf = append(e.buf, s...)
}

func (e *fetchEncoder) arrayLen(n int) {
	if e.flexible {
		e.uvarint(uint64(n) + 1)
	} else {
		e.i32(int32(n))
	}
}

func (e *fetchEncoder) nullableArrayLen(n int, null bool) {
	switch {
	case null && e.flexible:
		e.uvarint(0)
	case null:
		e.i32(-1)
	default:
		e.arrayLen(n)
	}
}

func (e *fetchEncoder) bytesLen(n int, null bool) {
	switch {
	case null && e.flexible:
		e.uvarint(0)
	case null:
		e.i32(-1)
	case e.flexible:
		e.uvarint(uint64(n) + 1)
	default:
		e.i32(int32(n))
	}
}

func (e *fetchEncoder) cut(r Records) {
	e.cuts = append(e.cuts, len(e.buf))
	e.records = append(e.records, r)
}

func (e *fetchEncoder) finish() []Piece {
	pieces := make([]Piece, 0, 2*len(e.cuts)+1)
	prev := 0
	for i, c := range e.cuts {
		pieces = append(pieces, Piece{Bytes: e.buf[prev:c:c]})
		pieces = append(pieces, Piece{Records: e.records[i]})
		prev = c
	}
	return append(pieces, Piece{Bytes: e.buf[prev:]})
}
