package wire

import (
	"bytes"
	"io"
	"math/rand"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type memRecords []byte

func (r memRecords) Len() int { return len(r) }
func (r memRecords) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r)
	return int64(n), err
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

func randFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.Version = version
	r.ThrottleMillis = rng.Int31()
	r.ErrorCode = int16(rng.Intn(100))
	r.SessionID = rng.Int31()
	pick := func(n int) int { return rng.Intn(n) }
	for t := pick(4); t > 0; t-- {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = string(randBytes(rng, pick(300)))
		rng.Read(rt.TopicID[:])
		for p := pick(5); p > 0; p-- {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = rng.Int31()
			rp.ErrorCode = int16(rng.Intn(120))
			rp.HighWatermark = rng.Int63()
			rp.LastStableOffset = rng.Int63()
			rp.LogStartOffset = rng.Int63()
			switch pick(3) {
			case 0:
				rp.AbortedTransactions = nil
			case 1:
				rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			default:
				for a := 1 + pick(3); a > 0; a-- {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = rng.Int63(), rng.Int63()
					rp.AbortedTransactions = append(rp.AbortedTransactions, at)
				}
			}
			rp.PreferredReadReplica = int32(pick(3)) - 1
			switch pick(4) {
			case 0:
				rp.RecordBatches = nil
			case 1:
				rp.RecordBatches = []byte{}
			default:
				rp.RecordBatches = randBytes(rng, pick(70000))
			}
			if pick(2) == 0 {
				rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = rng.Int31(), rng.Int63()
			}
			if pick(2) == 0 {
				rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = rng.Int31(), rng.Int31()
			}
			if pick(3) == 0 {
				rp.SnapshotID.EndOffset, rp.SnapshotID.Epoch = rng.Int63(), rng.Int31()
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	if pick(2) == 0 {
		for b := pick(4); b > 0; b-- {
			br := kmsg.NewFetchResponseBroker()
			br.NodeID, br.Port = rng.Int31(), rng.Int31()
			br.Host = string(randBytes(rng, pick(40)))
			if pick(2) == 0 {
				rack := string(randBytes(rng, pick(10)))
				br.Rack = &rack
			}
			r.Brokers = append(r.Brokers, br)
		}
	}
	return r
}

// TestAppendFetchResponseMatchesKmsg compares the piecewise encoder with
// kmsg's FetchResponse.AppendTo (through AppendResponse), byte for byte,
// for every served version with random contents.
func TestAppendFetchResponseMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewSource(42))
	for v := int16(4); v <= 16; v++ {
		for i := 0; i < 60; i++ {
			resp := randFetchResponse(rng, v)
			hdr := RequestHeader{Key: 1, Version: v, CorrelationID: rng.Int31(), Flexible: v >= 12}
			want := AppendResponse(nil, hdr, resp)
			// Move some partitions' batches into Records pieces.
			moved := map[[2]int]memRecords{}
			for ti := range resp.Topics {
				for pi := range resp.Topics[ti].Partitions {
					p := &resp.Topics[ti].Partitions[pi]
					if p.RecordBatches != nil && rng.Intn(3) > 0 {
						moved[[2]int{ti, pi}] = memRecords(p.RecordBatches)
						p.RecordBatches = nil
					}
				}
			}
			pieces := AppendFetchResponse(nil, hdr, resp, func(ti, pi int) Records {
				if r, ok := moved[[2]int{ti, pi}]; ok {
					return r
				}
				return nil
			})
			var got bytes.Buffer
			nrec := 0
			for _, p := range pieces {
				if p.Records != nil {
					nrec++
					if _, err := p.Records.WriteTo(&got); err != nil {
						t.Fatal(err)
					}
				} else {
					got.Write(p.Bytes)
				}
			}
			if nrec != len(moved) {
				t.Fatalf("v%d: %d records pieces, want %d", v, nrec, len(moved))
			}
			if FrameLen(pieces) != len(want) {
				t.Fatalf("v%d: FrameLen %d, want %d", v, FrameLen(pieces), len(want))
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("v%d case %d: encodings differ (%d vs %d bytes)", v, i, got.Len(), len(want))
			}
			// And it decodes back.
			back := kmsg.NewPtrFetchResponse()
			back.Version = v
			off := 8
			if v >= 12 {
				off = 9
			}
			if err := back.ReadFrom(got.Bytes()[off:]); err != nil {
				t.Fatalf("v%d: decode: %v", v, err)
			}
		}
	}
}
