package share

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
)

// DescribeShareGroupOffsets (key 90): v0-1, each share-partition's start
// offset. With --data-dir it is read from the volume, where every leader
// persists its share-partitions, so any broker answers for every
// partition; in memory, from this broker's keeper. Lag (v1) is -1
// (unknown).
func (k *Keeper) registerDescribeOffsets(srv *conn.Server) {
	srv.Register(conn.API{Key: kmsg.DescribeShareGroupOffsets.Int16(), MinVersion: 0, MaxVersion: 1, Handle: k.handleDescribeShareGroupOffsets})
}

// starts asks the keeper for a group's share-partition start offsets.
type starts struct {
	group string
	reply func(map[routing.TP]int64)
}

func (k *keeper) starts(m *starts) map[routing.TP]int64 {
	var v *routing.View
	if k.opts.Views != nil {
		v = k.opts.Views.Load()
	}
	out := map[routing.TP]int64{}
	for key, p := range k.parts {
		if key.group == m.group && p.Initialized() && !ofDeletedTopic(v, key.tp.Topic, k.ids[key]) {
			out[key.tp] = p.Start()
		}
	}
	for key, snap := range k.memStored {
		if _, ok := out[key.tp]; key.group == m.group && !ok && !ofDeletedTopic(v, key.tp.Topic, snap.TopicID) {
			out[key.tp] = snap.Start
		}
	}
	return out
}

func (k *Keeper) handleDescribeShareGroupOffsets(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	var waits []func() map[routing.TP]int64
	if k.opts.Store == nil {
		for _, g := range req.Groups {
			waits = append(waits, call(k, r, func(reply func(map[routing.TP]int64)) any {
				return &starts{group: g.GroupID, reply: reply}
			}))
		}
	}
	return func() kmsg.Response {
		v := r.CurrentView()
		for gi, g := range req.Groups {
			rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID = g.GroupID
			known, err := k.groupStarts(v, g.GroupID, waits, gi)
			if err != nil {
				rg.ErrorCode = kerr.KafkaStorageError.Code
				resp.Groups = append(resp.Groups, rg)
				continue
			}
			topics := g.Topics
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
						if start, has := known[routing.TP{Topic: t.Topic, Partition: p}]; has {
							rp.StartOffset = start
						}
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				rg.Topics = append(rg.Topics, rt)
			}
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
}

// groupStarts is a group's share-partition start offsets: from the
// volume (read here, in the request's handler), or from the keeper. State
// of a deleted topic is left out, of one created again too.
func (k *Keeper) groupStarts(v *routing.View, group string, waits []func() map[routing.TP]int64, i int) (map[routing.TP]int64, error) {
	if k.opts.Store == nil {
		return waits[i](), nil
	}
	return k.storedStarts(v, group)
}

// storedStarts is a group's share-partition start offsets on the volume,
// of the topics v has (a snapshot of a deleted topic, or of an earlier
// topic of the same name, left out).
func (k *Keeper) storedStarts(v *routing.View, group string) (map[routing.TP]int64, error) {
	parts, err := k.opts.Store.Partitions(group)
	if err != nil {
		k.opts.Log.Error().Err(err).Str("group", group).Msg("listing share-partition state failed")
		return nil, err
	}
	out := map[routing.TP]int64{}
	for topic, ps := range parts {
		for _, p := range ps {
			snap, ok, err := k.opts.Store.Load(group, topic, p)
			if err != nil {
				k.opts.Log.Error().Err(err).Str("group", group).Msg("reading share-partition state failed")
				continue
			}
			if ok && !ofDeletedTopic(v, topic, snap.TopicID) {
				out[routing.TP{Topic: topic, Partition: p}] = snap.Start
			}
		}
	}
	return out, nil
}
