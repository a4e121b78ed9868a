package assignment

import (
	"slices"
	"sort"
	"strings"
)

// PartitionRef names one partition of one topic incarnation and the leader
// epoch that goes with it.
type PartitionRef struct {
	Topic       string
	TopicID     string
	Partition   int32
	LeaderEpoch int32
}

// Changes is what one broker has to do when the assignment goes from one
// document to the next (see Diff). All slices are sorted by (topic,
// partition), or ascending for slot indexes; nil when empty.
type Changes struct {
	// Take: partitions this broker leads in the new document and did not lead
	// (as the same topic incarnation) in the old one, with the new leader epoch.
	Take []PartitionRef
	// Relinquish: partitions this broker led in the old document and no longer
	// leads (moved away, leader -1, topic deleted or recreated with a new id),
	// with the old topic id and leader epoch.
	Relinquish []PartitionRef
	// EpochChanged: partitions this broker leads in both documents whose
	// leader epoch changed, with the new epoch.
	EpochChanged []PartitionRef

	// SlotsGained / SlotsLost: group-coordinator slot indexes this broker
	// serves now and did not before / served before and no longer does, where
	// "serves" is CoordinatorFor's rule (the slot's broker, or the alive one
	// it falls to: SlotOwners).
	SlotsGained []int
	SlotsLost   []int
	// SlotsReset is set when the slot count changed (the first document, or
	// a list of one slot per broker replaced by GroupSlotCount slots): slot
	// indexes of the two documents then mean different groups, SlotsGained
	// lists every slot served now and SlotsLost every slot served before,
	// and every coordinated group must be re-checked with CoordinatorFor.
	SlotsReset bool
}

// Empty reports whether there is nothing to do.
func (c Changes) Empty() bool {
	return len(c.Take) == 0 && len(c.Relinquish) == 0 && len(c.EpochChanged) == 0 &&
		len(c.SlotsGained) == 0 && len(c.SlotsLost) == 0 && !c.SlotsReset
}

// Diff computes what broker self (id) / selfName has to do to go from old to
// next. old == nil means nothing before; next == nil means nothing after. It
// is pure.
func Diff(old, next *Assignment, self int32, selfName string) Changes {
	var c Changes
	oldTopics, newTopics := topicsOf(old), topicsOf(next)

	for _, name := range sortedKeys(oldTopics, newTopics) {
		if name == OffsetsTopic {
			continue // a KafkaTopic of that name is hidden: its partitions are the slots'
		}
		ot, inOld := oldTopics[name]
		nt, inNew := newTopics[name]
		sameTopic := inOld && inNew && ot.ID == nt.ID
		if inOld {
			for p, op := range ot.Partitions {
				if op.Leader != self {
					continue
				}
				if sameTopic && p < len(nt.Partitions) && nt.Partitions[p].Leader == self {
					continue // kept: handled below
				}
				c.Relinquish = append(c.Relinquish, PartitionRef{name, ot.ID, int32(p), op.LeaderEpoch})
			}
		}
		if inNew {
			for p, np := range nt.Partitions {
				if np.Leader != self {
					continue
				}
				ref := PartitionRef{name, nt.ID, int32(p), np.LeaderEpoch}
				if sameTopic && p < len(ot.Partitions) && ot.Partitions[p].Leader == self {
					if ot.Partitions[p].LeaderEpoch != np.LeaderEpoch {
						c.EpochChanged = append(c.EpochChanged, ref)
					}
					continue
				}
				c.Take = append(c.Take, ref)
			}
		}
	}

	c.offsetsPartitions(old, next, self)

	var oldSlots, newSlots []string
	if old != nil {
		oldSlots = old.ConsumerGroups.Slots
	}
	if next != nil {
		newSlots = next.ConsumerGroups.Slots
	}
	oldOwners, newOwners := SlotOwners(old), SlotOwners(next)
	c.SlotsReset = len(oldSlots) != len(newSlots)
	if c.SlotsReset {
		for i, o := range newOwners {
			if o == selfName {
				c.SlotsGained = append(c.SlotsGained, i)
			}
		}
		for i, o := range oldOwners {
			if o == selfName {
				c.SlotsLost = append(c.SlotsLost, i)
			}
		}
		// A reset with nothing served on either side needs no action.
		if len(c.SlotsGained) == 0 && len(c.SlotsLost) == 0 {
			c.SlotsReset = false
		}
		return c
	}
	for i := range newOwners {
		switch was, is := oldOwners[i] == selfName, newOwners[i] == selfName; {
		case is && !was:
			c.SlotsGained = append(c.SlotsGained, i)
		case was && !is:
			c.SlotsLost = append(c.SlotsLost, i)
		}
	}
	return c
}

func topicsOf(a *Assignment) map[string]Topic {
	if a == nil {
		return nil
	}
	return a.Topics
}

func sortedKeys(a, b map[string]Topic) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, dup := a[k]; !dup {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// offsetsPartitions adds the partitions of OffsetsTopic that self starts,
// stops or keeps leading with another epoch: partition i is led with slot
// i (SlotLeaders), in files that carry slot epochs. It keeps each list
// sorted by (topic, partition).
func (c *Changes) offsetsPartitions(old, next *Assignment, self int32) {
	oldLeaders, newLeaders := offsetsLeaders(old), offsetsLeaders(next)
	ref := func(a *Assignment, i int) PartitionRef {
		return PartitionRef{OffsetsTopic, OffsetsTopicID, int32(i), a.ConsumerGroups.Epochs[i]}
	}
	added := false
	for i := range max(len(oldLeaders), len(newLeaders)) {
		was := i < len(oldLeaders) && oldLeaders[i] == self
		is := i < len(newLeaders) && newLeaders[i] == self
		switch {
		case is && !was:
			c.Take = append(c.Take, ref(next, i))
		case was && !is:
			c.Relinquish = append(c.Relinquish, ref(old, i))
		case is && old.ConsumerGroups.Epochs[i] != next.ConsumerGroups.Epochs[i]:
			c.EpochChanged = append(c.EpochChanged, ref(next, i))
		default:
			continue
		}
		added = true
	}
	if added {
		for _, refs := range [][]PartitionRef{c.Take, c.Relinquish, c.EpochChanged} {
			slices.SortFunc(refs, func(a, b PartitionRef) int {
				if a.Topic != b.Topic {
					return strings.Compare(a.Topic, b.Topic)
				}
				return int(a.Partition - b.Partition)
			})
		}
	}
}

// offsetsLeaders is SlotLeaders of a file that carries slot epochs; nil
// for any other (it leads no partition of OffsetsTopic).
func offsetsLeaders(a *Assignment) []int32 {
	if a == nil || len(a.ConsumerGroups.Epochs) != len(a.ConsumerGroups.Slots) || len(a.ConsumerGroups.Epochs) == 0 {
		return nil
	}
	return SlotLeaders(a)
}
