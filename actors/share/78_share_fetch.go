package share

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
)

// ShareFetch (key 78): v0-2, KIP-932 share sessions (epoch 0 opens, >0
// continues with partitions added and forgotten, -1 closes), piggybacked
// acknowledgements, records acquired through the share-partition and read
// through the partition actors' normal read path, MaxRecords (v1+), lock
// renewal (v2 IsRenewAck).
func (k *Keeper) handleShareFetch(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ShareFetchRequest)
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	resp.AcquisitionLockTimeoutMillis = k.lockMillis()
	if !validMember(req.GroupID, req.MemberID) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return conn.Ready(resp)
	}
	renew := req.Version >= 2 && req.IsRenewAck
	if renew && (req.MaxBytes != 0 || req.MinBytes != 0 || req.MaxRecords != 0 || req.MaxWaitMillis != 0) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return conn.Ready(resp)
	}
	group, member := *req.GroupID, *req.MemberID
	b := &begin{op: opFetch, group: group, member: member, epoch: req.ShareSessionEpoch, renew: renew, view: r.View, conn: r.Conn}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			b.parts = append(b.parts, PartReq{TP: TP{t.TopicID, p.Partition},
				Acks: toAcks(p.AcknowledgementBatches, func(a kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return a.FirstOffset, a.LastOffset, a.AcknowledgeTypes
				})})
		}
	}
	for _, t := range req.ForgottenTopicsData {
		for _, p := range t.Partitions {
			b.forgotten = append(b.forgotten, TP{t.TopicID, p})
		}
	}
	// The session step is sent now, from Receive, so it sees this
	// connection's earlier requests first.
	began := call(k, r, func(reply func(beginResult)) any { b.reply = reply; return b })
	return func() kmsg.Response {
		br := began()
		if br.code != 0 {
			if br.durable != nil {
				br.durable()
			}
			resp.ErrorCode = br.code
			return resp
		}
		br.awaitWritten(group)
		if req.ShareSessionEpoch == 0 {
			k.recheckMarks(r.Ctx, group, br.parts)
		}
		var reads []PartResult
		for _, p := range br.parts {
			if p.Read {
				reads = append(reads, p)
			}
		}
		got, errs := map[TP]*fetched{}, map[TP]int16{}
		maxRecords := k.opts.MaxRecords
		if req.Version >= 1 && req.MaxRecords > 0 {
			maxRecords = int(req.MaxRecords)
		}
		maxBytes := req.MaxBytes
		// MaxBytes 0 (a client's fetch.max.bytes=0) acquires nothing, as
		// Kafka's share fetch, which refuses to split no bytes among the
		// partitions; the acknowledgements above are answered all the same.
		if len(reads) > 0 && maxBytes > 0 {
			// The client times its locks from this: the group's lock
			// duration when its configs set one.
			if lock := k.fetchRecords(r, group, member, reads, maxRecords, maxBytes, time.Duration(req.MaxWaitMillis)*time.Millisecond, got, errs); lock > 0 {
				resp.AcquisitionLockTimeoutMillis = int32(lock.Milliseconds())
			}
		}
		requested := map[TP]bool{}
		for _, p := range b.parts {
			requested[p.TP] = true
		}
		topics := map[[16]byte]int{}
		for _, p := range br.parts {
			f := got[p.TP]
			code := p.Code
			if c, ok := errs[p.TP]; ok && code == 0 {
				code = c
			}
			// A partition goes out when it has records, an error, or
			// was named in the request (its acknowledgements are
			// answered, or it just joined the session).
			if f == nil && code == 0 && p.AckCode == 0 && !requested[p.TP] {
				continue
			}
			ti, ok := topics[p.TopicID]
			if !ok {
				ti = len(resp.Topics)
				topics[p.TopicID] = ti
				t := kmsg.NewShareFetchResponseTopic()
				t.TopicID = p.TopicID
				resp.Topics = append(resp.Topics, t)
			}
			rp := kmsg.NewShareFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.AcknowledgeErrorCode = p.Partition, code, p.AckCode
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			rp.Records = []byte{}
			if f != nil {
				rp.Records = f.recs
				for _, rg := range f.ranges {
					ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
					ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = rg.First, rg.Last, rg.DeliveryCount
					rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
				}
			}
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		}
		return resp
	}
}

func tpOf(p PartResult) routing.TP { return routing.TP{Topic: p.Topic, Partition: p.Partition} }
