package controller

import (
	"context"
	"sort"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kaas-project/kaas/storage"
)

// Stray partition directories: a topic deleted while one of its partitions
// had no live leader (its broker dead but not yet declared so, or the
// partition held mid-move) leaves that partition's directory on the volume,
// since only a leader's relinquish removes one. The controller, which alone
// knows every live topic, removes such directories once they have been
// stray for StrayGrace, after confirming its Lease.

// StrayPartitions returns, sorted, the partitions of ids whose topic id is
// not in live.
func StrayPartitions(ids []storage.PartitionID, live map[string]bool) []storage.PartitionID {
	var out []storage.PartitionID
	for _, id := range ids {
		if !live[id.TopicID] {
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TopicID != out[j].TopicID {
			return out[i].TopicID < out[j].TopicID
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

type (
	// strayList is a listing of the data directory's partitions.
	strayList struct {
		ids []storage.PartitionID
		err error
	}
	// straysRemoved reports the removal goroutine's end.
	straysRemoved struct {
		ids []storage.PartitionID
		err error
	}
)

// liveTopicIDs are the ids of every topic this controller knows: the ones
// it last wrote and the ones its topic watch reports (a topic being created
// is in the second before it is in a file, and before any directory of it
// exists).
func (a *Actor) liveTopicIDs() map[string]bool {
	live := map[string]bool{}
	for _, t := range a.prev.Topics {
		live[t.ID] = true
	}
	for _, t := range a.topics {
		live[t.ID] = true
	}
	return live
}

// scanStrays lists the data directory on a goroutine, at most every
// StrayGrace/2, once this controller has written a file of its own epoch
// from a topic list it has received.
func (a *Actor) scanStrays(ctx actor.Context) {
	c := a.cfg
	if c.StrayGrace <= 0 || c.ListPartitions == nil || c.RemovePartition == nil || a.strayBusy || !a.haveTopic ||
		a.prev == nil || a.prev.ControllerEpoch != c.Epoch || c.Now().Before(a.nextStrayScan) {
		return
	}
	a.strayBusy = true
	a.nextStrayScan = c.Now().Add(c.StrayGrace / 2)
	self, system, list := ctx.Self(), ctx.ActorSystem(), c.ListPartitions
	go func() {
		ids, err := list()
		system.Root.Send(self, &strayList{ids: ids, err: err})
	}()
}

// onStrayList records when each stray partition was first seen and removes,
// on a goroutine after a Lease check, those stray for StrayGrace.
func (a *Actor) onStrayList(ctx actor.Context, m *strayList) {
	a.strayBusy = false
	if m.err != nil {
		a.cfg.Log.Warn().Err(m.err).Msg("list partition directories")
		return
	}
	now := a.cfg.Now()
	seen := map[storage.PartitionID]time.Time{}
	var due []storage.PartitionID
	for _, id := range StrayPartitions(m.ids, a.liveTopicIDs()) {
		since, ok := a.straySince[id]
		if !ok {
			since = now
		}
		seen[id] = since
		if now.Sub(since) >= a.cfg.StrayGrace {
			due = append(due, id)
		}
	}
	a.straySince = seen
	if len(due) == 0 {
		return
	}
	a.strayBusy = true
	self, system, verify, remove, log := ctx.Self(), ctx.ActorSystem(), a.cfg.VerifyLease, a.cfg.RemovePartition, a.cfg.Log
	go func() {
		if verify != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := verify(ctx)
			cancel()
			if err != nil {
				system.Root.Send(self, &straysRemoved{err: err})
				return
			}
		}
		var done []storage.PartitionID
		for _, id := range due {
			if err := remove(id); err != nil {
				log.Warn().Err(err).Str("topic", id.Topic).Int32("partition", id.Partition).Str("topic_id", id.TopicID).
					Msg("remove the directory of a deleted topic's partition")
				continue
			}
			log.Warn().Str("topic", id.Topic).Int32("partition", id.Partition).Str("topic_id", id.TopicID).
				Msg("removed the directory of a deleted topic's partition that no broker had removed")
			done = append(done, id)
		}
		system.Root.Send(self, &straysRemoved{ids: done})
	}()
}

func (a *Actor) onStraysRemoved(m *straysRemoved) {
	a.strayBusy = false
	if m.err != nil {
		a.cfg.Log.Warn().Err(m.err).Msg("lease not confirmed; stray partition directories kept")
	}
	for _, id := range m.ids {
		delete(a.straySince, id)
	}
}
