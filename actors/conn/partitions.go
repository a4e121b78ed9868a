package conn

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/tracing"
)

// partitionTarget resolves a partition (of an internal topic too) to its
// local actor, or to the error a client should see:
// UNKNOWN_TOPIC_OR_PARTITION when it does not exist, NOT_LEADER_OR_FOLLOWER
// when another broker (or nobody, mid-move) leads it.
func partitionTarget(v *routing.View, topic string, partition int32) (ref partitionRef, code int16) {
	t, ok := v.AnyTopic(topic)
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return partitionRef{}, kerr.UnknownTopicOrPartition.Code
	}
	r, ok := v.Local[routing.TP{Topic: topic, Partition: partition}]
	if !ok {
		return partitionRef{}, kerr.NotLeaderForPartition.Code
	}
	return partitionRef{ref: r, epoch: t.Partitions[partition].LeaderEpoch}, 0
}

type partitionRef struct {
	ref interface{ Send(any) }
	// epoch is the leader epoch the view knows.
	epoch int32
}

// topicName resolves a topic by name, or by id when the name is empty and
// the id is set (Fetch v13+, Metadata v12, DeleteTopics v6).
func topicName(v *routing.View, name string, id [16]byte) (string, bool) {
	if name != "" {
		_, ok := v.Topics[name]
		return name, ok
	}
	if t, ok := v.TopicIDs[id]; ok {
		return t.Name, true
	}
	if t, ok := v.InternalByID(id); ok {
		return t.Name, true
	}
	return "", false
}

// waitGroup gathers replies from actors; each reply writes its own slot.
type waitGroup = sync.WaitGroup

// fanOut sends a request's partitions to the partition actors leading them
// here and gathers their replies (Produce, ListOffsets, DeleteRecords,
// OffsetForLeaderEpoch). Sends happen in Receive, in request order; each
// reply writes its own partition's slot of the response, so the slots need
// no lock, and Wait orders those writes before the response is encoded.
type fanOut struct {
	view *routing.View
	ctx  context.Context // the request's span (nil while tracing is off)
	wg   waitGroup
}

func newFanOut(r *Request) *fanOut { return &fanOut{view: r.View, ctx: r.Ctx} }

// send sends the partition's actor the message msg builds, whose reply must
// call done once (after writing its slot). A partition not led here gets no
// message: *errorCode is set to the error its slot answers instead. (The
// code is never written once the message is sent: the reply may already be
// writing the slot.)
func (f *fanOut) send(topic string, partition int32, errorCode *int16, msg func(done func()) any) {
	target, code := partitionTarget(f.view, topic, partition)
	if code != 0 {
		*errorCode = code
		return
	}
	f.wg.Add(1)
	target.ref.Send(tracing.Wrap(f.ctx, msg(f.wg.Done)))
}

// wait waits for every reply.
func (f *fanOut) wait() { f.wg.Wait() }

// answer is the Pending that returns resp once every reply has arrived.
func (f *fanOut) answer(resp kmsg.Response) Pending {
	return func() kmsg.Response {
		f.wait()
		return resp
	}
}
