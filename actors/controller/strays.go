package controller

import (
	"sort"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
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

// liveTopicIDs are the ids of every topic this controller knows: the ones
// it last wrote and the ones its topic watch reports (a topic being created
// is in the second before it is in a file, and before any directory of it
// exists).
func (c *Core) liveTopicIDs() map[string]bool {
	live := map[string]bool{assignment.OffsetsTopicID: true}
	for _, t := range c.prev.Topics {
		live[t.ID] = true
	}
	for _, t := range c.topics {
		live[t.ID] = true
	}
	return live
}

// scanStrays asks for a listing of the data directory, at most every
// StrayGrace/2, once this controller has written a file of its own epoch
// from a topic list it has received.
func (c *Core) scanStrays() {
	if c.strays != strayIdle || c.prev == nil || c.prev.ControllerEpoch != c.cfg.Epoch || c.now.Before(c.nextStrayScan) {
		return
	}
	c.strays = strayListing
	c.nextStrayScan = c.now.Add(c.cfg.StrayGrace / 2)
	c.emit(ListPartitions{})
}

// onStrayList records when each stray partition was first seen and asks
// for the removal, after a Lease check, of those stray for StrayGrace.
func (c *Core) onStrayList(m PartitionsListed) {
	c.strays = strayIdle
	if m.Err != nil {
		c.cfg.Log.Warn().Err(m.Err).Msg("list partition directories")
		return
	}
	seen := map[storage.PartitionID]time.Time{}
	var due []storage.PartitionID
	for _, id := range StrayPartitions(m.IDs, c.liveTopicIDs()) {
		since, ok := c.straySince[id]
		if !ok {
			since = c.now
		}
		seen[id] = since
		if c.now.Sub(since) >= c.cfg.StrayGrace {
			due = append(due, id)
		}
	}
	c.straySince = seen
	if len(due) == 0 {
		return
	}
	c.strays = strayRemoving
	c.emit(RemoveStrays{IDs: due})
}

func (c *Core) onStraysRemoved(m StraysRemoved) {
	c.strays = strayIdle
	if m.Err != nil {
		c.cfg.Log.Warn().Err(m.Err).Msg("lease not confirmed; stray partition directories kept")
	}
	for _, id := range m.IDs {
		delete(c.straySince, id)
	}
}
