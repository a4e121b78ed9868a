package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// DeleteShareGroupOffsets (key 92): v0, removes an empty share group's
// share-partition state of each topic named (every partition of it), the
// group actor checking the group ((*Group).ShareAdmin), then the broker's
// share keeper removing the state (share.Keeper.DeleteStates). State the
// volume holds for a group the coordinator does not know (no share group
// membership saved beside it) makes the group an empty share group again.
func init() {
	serve(groupAPI{key: kmsg.DeleteShareGroupOffsets.Int16(), min: 0, max: 0, handle: (*Coordinator).handleDeleteShareGroupOffsets})
}

func (c *Coordinator) handleDeleteShareGroupOffsets(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if c.shares == nil {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return conn.Ready(resp)
	}
	if req.GroupID == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return conn.Ready(resp)
	}
	return func() kmsg.Response {
		// Whether the group has state is read here, off the actors.
		create := c.shares.HasState(r.Ctx, r.CurrentView(), req.GroupID)
		if code := c.call(r, req.GroupID, &messages.GroupShareAdmin{Create: create})().(int16); code != 0 {
			resp.ErrorCode = code
			return resp
		}
		v := r.CurrentView()
		var tps []routing.TP
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			rt.Topic = t.Topic
			vt, ok := v.Topics[t.Topic]
			if !ok {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			rt.TopicID = vt.ID
			for p := range vt.Partitions {
				tps = append(tps, routing.TP{Topic: t.Topic, Partition: int32(p)})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		if len(tps) == 0 {
			return resp
		}
		if err := c.shares.DeleteStates(r.Ctx, req.GroupID, tps); err != nil {
			msg := err.Error()
			for i := range resp.Topics {
				if resp.Topics[i].ErrorCode == 0 {
					resp.Topics[i].ErrorCode, resp.Topics[i].ErrorMessage = kerr.KafkaStorageError.Code, &msg
				}
			}
		}
		return resp
	}
}
