package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// AlterShareGroupOffsets (key 91): v0, sets share-partitions' start
// offsets of an empty share group (creating the group when there is
// none, as Kafka), the group actor checking the group
// ((*Group).ShareAdmin), then the broker's share keeper writing the state
// (share.Keeper.SetStarts).
func init() {
	serve(groupAPI{key: kmsg.AlterShareGroupOffsets.Int16(), min: 0, max: 0, handle: (*Coordinator).handleAlterShareGroupOffsets})
}

// ShareStates changes share-partition state (share.Keeper).
type ShareStates interface {
	SetStarts(ctx context.Context, group string, starts map[routing.TP]int64) error
	DeleteStates(ctx context.Context, group string, tps []routing.TP) error
	DeleteGroupStates(ctx context.Context, group string) error
	HasState(ctx context.Context, v *routing.View, group string) bool
}

// SetShareStates gives the coordinator the share-partition state it changes
// for keys 91 and 92; called before requests are served.
func (c *Coordinator) SetShareStates(s ShareStates) { c.shares = s }

func (c *Coordinator) handleAlterShareGroupOffsets(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if c.shares == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return conn.Ready(resp)
	}
	wait := c.call(r, req.GroupID, &messages.GroupShareAdmin{Create: true})
	return func() kmsg.Response {
		if code := wait().(int16); code != 0 {
			resp.ErrorCode = code
			return resp
		}
		v := r.CurrentView()
		starts := map[routing.TP]int64{}
		for _, t := range req.Topics {
			rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			vt, ok := v.Topics[t.Topic]
			if ok {
				rt.TopicID = vt.ID
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
				rp.Partition = p.Partition
				switch {
				case !ok || p.Partition < 0 || int(p.Partition) >= len(vt.Partitions):
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case p.StartOffset < 0:
					rp.ErrorCode = kerr.InvalidRequest.Code
					rp.ErrorMessage = strp("the start offset must not be negative")
				default:
					starts[routing.TP{Topic: t.Topic, Partition: p.Partition}] = p.StartOffset
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(starts) == 0 {
			return resp
		}
		if err := c.shares.SetStarts(r.Ctx, req.GroupID, starts); err != nil {
			msg := err.Error()
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					rp := &resp.Topics[i].Partitions[j]
					if _, set := starts[routing.TP{Topic: resp.Topics[i].Topic, Partition: rp.Partition}]; set {
						rp.ErrorCode, rp.ErrorMessage = kerr.KafkaStorageError.Code, &msg
					}
				}
			}
		}
		return resp
	}
}
