package share

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// ShareAcknowledge (key 79): v0-2, acknowledgements in the member's share
// session (epoch > 0 continues it, -1 closes it and releases what the
// member still holds), lock renewal (v2 IsRenewAck).
func (k *Keeper) handleShareAcknowledge(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ShareAcknowledgeRequest)
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.AcquisitionLockTimeoutMillis = k.lockMillis()
	if !validMember(req.GroupID, req.MemberID) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return conn.Ready(resp)
	}
	b := &begin{op: opAck, group: *req.GroupID, member: *req.MemberID, epoch: req.ShareSessionEpoch,
		renew: req.Version >= 2 && req.IsRenewAck, view: r.View}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			b.parts = append(b.parts, PartReq{TP: TP{t.TopicID, p.Partition},
				Acks: toAcks(p.AcknowledgementBatches, func(a kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return a.FirstOffset, a.LastOffset, a.AcknowledgeTypes
				})})
		}
	}
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
		br.awaitWritten(*req.GroupID)
		topics := map[[16]byte]int{}
		for _, p := range br.parts {
			ti, ok := topics[p.TopicID]
			if !ok {
				ti = len(resp.Topics)
				topics[p.TopicID] = ti
				t := kmsg.NewShareAcknowledgeResponseTopic()
				t.TopicID = p.TopicID
				resp.Topics = append(resp.Topics, t)
			}
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, p.AckCode
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			resp.Topics[ti].Partitions = append(resp.Topics[ti].Partitions, rp)
		}
		return resp
	}
}
