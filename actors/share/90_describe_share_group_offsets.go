package share

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
)

// DescribeShareGroupOffsets (key 90): v0-1, each share-partition's start
// offset and, from v1, its lag (KIP-1226): the partition's end offset,
// asked of its leader, less the start offset and the records after it
// already done. With --data-dir the state is read from the volume, where
// every leader persists its share-partitions, so any broker answers for
// every partition; in memory, from this broker's keeper.
func (k *Keeper) registerDescribeOffsets(srv *conn.Server) {
	srv.Register(conn.API{Key: kmsg.DescribeShareGroupOffsets.Int16(), MinVersion: 0, MaxVersion: 1, Handle: k.handleDescribeShareGroupOffsets})
}

// progress is where a share-partition stands: its start offset and how
// many records after it are done (acknowledged or archived).
type progress struct{ start, complete int64 }

// starts asks the keeper for a group's share-partitions' progress.
type starts struct {
	group string
	reply func(map[routing.TP]progress)
}

func (k *keeper) starts(m *starts) map[routing.TP]progress {
	var v *routing.View
	if k.opts.Views != nil {
		v = k.opts.Views.Load()
	}
	out := map[routing.TP]progress{}
	for key, p := range k.parts {
		if key.group == m.group && p.Initialized() && !ofDeletedTopic(v, key.tp.Topic, k.ids[key]) {
			out[key.tp] = progress{p.Start(), p.DeliveryComplete()}
		}
	}
	for key, snap := range k.memStored {
		if _, ok := out[key.tp]; key.group == m.group && !ok && !ofDeletedTopic(v, key.tp.Topic, snap.TopicID) {
			out[key.tp] = progress{snap.Start, DeliveryComplete(snap.States)}
		}
	}
	return out
}

func (k *Keeper) handleDescribeShareGroupOffsets(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	var waits []func() map[routing.TP]progress
	if k.opts.Store == nil {
		for _, g := range req.Groups {
			waits = append(waits, call(k, r, func(reply func(map[routing.TP]progress)) any {
				return &starts{group: g.GroupID, reply: reply}
			}))
		}
	}
	return func() kmsg.Response {
		v := r.CurrentView()
		knowns := make([]map[routing.TP]progress, len(req.Groups))
		for gi, g := range req.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID = g.GroupID
			known, err := k.groupStarts(v, g.GroupID, waits, gi)
			if err != nil {
				rg.ErrorCode = kerr.KafkaStorageError.Code
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			knowns[gi] = known
			rg.Topics = describeStarts(v, g.Topics, known)
			resp.Groups = append(resp.Groups, rg)
		}
		if req.Version >= 1 {
			k.fillLags(r.Ctx, v, resp, knowns)
		}
		return resp
	}
}

// describeStarts answers the topics asked (nil: every topic with
// share-partition state) with their partitions' start offsets; lag -1.
func describeStarts(v *routing.View, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic, known map[routing.TP]progress) []kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	if topics == nil {
		byTopic := map[string][]int32{}
		for tp := range known {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		for _, name := range slices.Sorted(maps.Keys(byTopic)) {
			ps := byTopic[name]
			slices.Sort(ps)
			topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: name, Partitions: ps})
		}
	}
	var out []kmsg.DescribeShareGroupOffsetsResponseGroupTopic
	for _, t := range topics {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = t.Topic
		vt, ok := v.Topics[t.Topic]
		if ok {
			rt.TopicID = vt.ID
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
			switch {
			case !ok || p < 0 || int(p) >= len(vt.Partitions):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				rp.LeaderEpoch = vt.Partitions[p].LeaderEpoch
				if pr, has := known[routing.TP{Topic: t.Topic, Partition: p}]; has {
					rp.StartOffset = pr.start
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		out = append(out, rt)
	}
	return out
}

// fillLags sets the lag of every share-partition with a start offset, as
// Kafka's group coordinator does: the partition's end offset less the
// start offset and the records after it already done. A partition whose
// end offset its leader cannot tell gets the leader's error.
func (k *Keeper) fillLags(ctx context.Context, v *routing.View, resp *kmsg.DescribeShareGroupOffsetsResponse, knowns []map[routing.TP]progress) {
	type target struct {
		rp *kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition
		tp routing.TP
		pr progress
	}
	var targets []target
	need := map[routing.TP]bool{}
	for gi := range resp.Groups {
		for ti := range resp.Groups[gi].Topics {
			rt := &resp.Groups[gi].Topics[ti]
			for pi := range rt.Partitions {
				rp := &rt.Partitions[pi]
				tp := routing.TP{Topic: rt.Topic, Partition: rp.Partition}
				if pr, ok := knowns[gi][tp]; ok && rp.ErrorCode == 0 {
					targets = append(targets, target{rp, tp, pr})
					need[tp] = true
				}
			}
		}
	}
	if len(targets) == 0 {
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ends := k.endOffsets(ctx, v, slices.Collect(maps.Keys(need)))
	for _, x := range targets {
		if e := ends[x.tp]; e.code != 0 {
			x.rp.ErrorCode = e.code
		} else {
			x.rp.Lag = Lag(e.offset, x.pr.start, x.pr.complete)
		}
	}
}

// endOffset is a partition's end offset, or the error its leader answered.
type endOffset struct {
	offset int64
	code   int16
}

// endOffsetWait bounds the wait for this broker's partition actors.
const endOffsetWait = 5 * time.Second

// endOffsets asks each partition's leader for its end offset: the high
// watermark, what ListOffsets answers a consumer asking for the latest
// offset. This broker's partitions answer through their actors; another
// broker's through a ListOffsets request to it (Options.Peers).
func (k *Keeper) endOffsets(ctx context.Context, v *routing.View, tps []routing.TP) map[routing.TP]endOffset {
	out := make(map[routing.TP]endOffset, len(tps))
	var mu sync.Mutex
	set := func(tp routing.TP, e endOffset) {
		mu.Lock()
		out[tp] = e
		mu.Unlock()
	}
	byLeader := map[int32][]routing.TP{}
	local := map[routing.TP]chan messages.PartitionStatusResult{}
	for _, tp := range tps {
		if ref, ok := v.Local[tp]; ok {
			ch := make(chan messages.PartitionStatusResult, 1)
			local[tp] = ch
			ref.Send(&messages.PartitionStatus{Reply: func(st messages.PartitionStatusResult) { ch <- st }})
			continue
		}
		leader := v.Topics[tp.Topic].Partitions[tp.Partition].Leader
		byLeader[leader] = append(byLeader[leader], tp)
	}
	var wg sync.WaitGroup
	for leader, ps := range byLeader {
		b, ok := brokerByID(v, leader)
		if leader < 0 || !ok || k.opts.Peers == nil {
			for _, tp := range ps {
				set(tp, endOffset{code: kerr.LeaderNotAvailable.Code})
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tp, e := range k.remoteEndOffsets(ctx, b, ps) {
				set(tp, e)
			}
		}()
	}
	timer := time.NewTimer(endOffsetWait)
	defer timer.Stop()
	for tp, ch := range local {
		select {
		case st := <-ch:
			if st.Leading {
				set(tp, endOffset{offset: st.HighWatermark})
			} else {
				set(tp, endOffset{code: kerr.NotLeaderForPartition.Code})
			}
		case <-timer.C:
			set(tp, endOffset{code: kerr.RequestTimedOut.Code})
		}
	}
	wg.Wait()
	return out
}

// remoteEndOffsets sends one ListOffsets (latest, read_uncommitted, as a
// consumer) for ps to broker b.
func (k *Keeper) remoteEndOffsets(ctx context.Context, b routing.Broker, ps []routing.TP) map[routing.TP]endOffset {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	byTopic := map[string]int{}
	for _, tp := range ps {
		i, ok := byTopic[tp.Topic]
		if !ok {
			i = len(req.Topics)
			byTopic[tp.Topic] = i
			t := kmsg.NewListOffsetsRequestTopic()
			t.Topic = tp.Topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewListOffsetsRequestTopicPartition()
		p.Partition, p.Timestamp = tp.Partition, -1
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, p)
	}
	out := make(map[routing.TP]endOffset, len(ps))
	kr, err := k.opts.Peers.Do(ctx, b, req)
	if err != nil {
		code := kerr.NetworkException.Code
		if errors.Is(err, context.DeadlineExceeded) {
			code = kerr.RequestTimedOut.Code
		}
		k.opts.Log.Warn().Err(err).Int32("broker", b.ID).Msg("share-partition lag: end offsets not read")
		for _, tp := range ps {
			out[tp] = endOffset{code: code}
		}
		return out
	}
	for _, t := range kr.(*kmsg.ListOffsetsResponse).Topics {
		for _, p := range t.Partitions {
			out[routing.TP{Topic: t.Topic, Partition: p.Partition}] = endOffset{offset: p.Offset, code: p.ErrorCode}
		}
	}
	for _, tp := range ps {
		if _, ok := out[tp]; !ok {
			out[tp] = endOffset{code: kerr.UnknownServerError.Code}
		}
	}
	return out
}

func brokerByID(v *routing.View, id int32) (routing.Broker, bool) {
	for _, b := range v.Brokers {
		if b.ID == id {
			return b, true
		}
	}
	return routing.Broker{}, false
}

// groupStarts is a group's share-partitions' progress: from the volume
// (read here, in the request's handler), or from the keeper. State of a
// deleted topic is left out, of one created again too.
func (k *Keeper) groupStarts(v *routing.View, group string, waits []func() map[routing.TP]progress, i int) (map[routing.TP]progress, error) {
	if k.opts.Store == nil {
		return waits[i](), nil
	}
	return k.storedStarts(v, group)
}

// storedStarts is a group's share-partitions' progress on the volume, of
// the topics v has (a snapshot of a deleted topic, or of an earlier topic
// of the same name, left out).
func (k *Keeper) storedStarts(v *routing.View, group string) (map[routing.TP]progress, error) {
	parts, err := k.opts.Store.Partitions(group)
	if err != nil {
		k.opts.Log.Error().Err(err).Str("group", group).Msg("listing share-partition state failed")
		return nil, err
	}
	out := map[routing.TP]progress{}
	for topic, ps := range parts {
		for _, p := range ps {
			snap, ok, err := k.opts.Store.Load(group, topic, p)
			if err != nil {
				k.opts.Log.Error().Err(err).Str("group", group).Msg("reading share-partition state failed")
				continue
			}
			if ok && !ofDeletedTopic(v, topic, snap.TopicID) {
				out[routing.TP{Topic: topic, Partition: p}] = progress{snap.Start, DeliveryComplete(snap.States)}
			}
		}
	}
	return out, nil
}
