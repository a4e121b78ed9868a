package assignment

// OffsetsTopic is Kafka's group-offsets topic. Its partition i belongs to
// group-coordinator slot i: the broker serving the slot leads it (while
// the slot is not held) and writes the records of the groups it
// coordinates there, as Kafka's coordinator writes them.
const OffsetsTopic = "__consumer_offsets"

// OffsetsTopicID is OffsetsTopic's topic id: fixed, the same on every
// broker and across restarts (routing derives it from the name; a test
// checks the two agree).
const OffsetsTopicID = "b6864155-c9ca-8047-8010-f1b8df99f2db"

// SlotLeaders returns the broker id leading each slot's partition of
// OffsetsTopic: the broker serving the slot (CoordinatorFor's rule), -1
// while the slot is held between coordinators or when no broker is alive.
func SlotLeaders(a *Assignment) []int32 {
	if a == nil {
		return nil
	}
	owners := SlotOwners(a)
	out := make([]int32, len(owners))
	held := make(map[int]bool, len(a.ConsumerGroups.Held))
	for _, h := range a.ConsumerGroups.Held {
		held[h] = true
	}
	for i, name := range owners {
		out[i] = NoLeader
		if b, ok := a.BrokerByName(name); ok && name != "" && !held[i] {
			out[i] = b.ID
		}
	}
	return out
}

// SetSlotEpochs fills next's slot epochs from prev's: a slot whose leader
// (SlotLeaders) changed gets prev's epoch plus one, the others keep
// theirs. Slots prev has no epochs for (none yet, or another slot count)
// start at 0 and count as changed, so a slot's first leader has epoch 1.
func SetSlotEpochs(prev, next *Assignment) {
	n := len(next.ConsumerGroups.Slots)
	epochs := make([]int32, n)
	var before, prevEpochs []int32
	if prev != nil && len(prev.ConsumerGroups.Slots) == n && len(prev.ConsumerGroups.Epochs) == n {
		before, prevEpochs = SlotLeaders(prev), prev.ConsumerGroups.Epochs
	}
	after := SlotLeaders(next)
	for i := range epochs {
		if prevEpochs == nil {
			epochs[i] = 1
			continue
		}
		epochs[i] = prevEpochs[i]
		if before[i] != after[i] {
			epochs[i]++
		}
	}
	next.ConsumerGroups.Epochs = epochs
}
