package assignment

import (
	"math"
	"slices"
)

// JavaStringHashCode is Java's String.hashCode(): s[0]*31^(n-1) + ... + s[n-1]
// over the string's UTF-16 code units, in wrapping 32-bit arithmetic. Runes
// outside the Basic Multilingual Plane count as their two surrogates, as in
// Java; invalid UTF-8 bytes count as U+FFFD.
func JavaStringHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10)&0x3ff)
			h = 31*h + int32(0xdc00+r&0x3ff)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// KafkaAbs is Kafka's Utils.abs: the absolute value, except that
// math.MinInt32 (which has none) maps to 0.
//
// Note that this is not Utils.toPositive (n & 0x7fffffff), which Kafka uses
// for record-key partitioning: the two differ for every negative n
// (KafkaAbs(-5) = 5, toPositive(-5) = 2147483643). Group placement in Kafka
// (GroupMetadataManager.partitionFor / GroupCoordinatorService) uses Utils.abs.
func KafkaAbs(n int32) int32 {
	if n == math.MinInt32 {
		return 0
	}
	if n < 0 {
		return -n
	}
	return n
}

// GroupSlotCount is how many group-coordinator slots an assignment has:
// Kafka's default partition count of __consumer_offsets
// (offsets.topic.num.partitions) and of __transaction_state, so a group's
// slot is the partition Kafka would store it in, and the modulus never
// changes with the broker count: a broker that registers or leaves moves
// only the slots it gains or gives up (PlaceSlots).
const GroupSlotCount = 50

// PlaceSlots returns the slot list for the registered brokers names
// (ordinal order, dead rows included): GroupSlotCount slots, each broker
// serving 50/len(names) of them or one more. It keeps every slot of prev
// whose broker is still registered and within its share, the brokers
// holding the most keeping the extra ones, and gives the rest, in slot
// order, to the brokers with the fewest. prev of another length (none
// yet, or a list of one slot per broker) gives way to a round robin: slot
// i to names[i mod len(names)].
func PlaceSlots(prev, names []string) []string {
	out := make([]string, 0, GroupSlotCount)
	if len(names) == 0 {
		return out
	}
	if len(prev) != GroupSlotCount {
		for i := range GroupSlotCount {
			out = append(out, names[i%len(names)])
		}
		return out
	}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	held := make([]int, len(names)) // prev's slots of each registered broker
	for _, s := range prev {
		if i, ok := index[s]; ok {
			held[i]++
		}
	}
	// The GroupSlotCount % len(names) brokers holding the most (ties: the
	// lower ordinal) may serve one slot more than the others.
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return held[b] - held[a] })
	share := make([]int, len(names))
	for rank, i := range order {
		share[i] = GroupSlotCount / len(names)
		if rank < GroupSlotCount%len(names) {
			share[i]++
		}
	}
	count := make([]int, len(names))
	out = out[:GroupSlotCount]
	var free []int
	for s, name := range prev {
		if i, ok := index[name]; ok && count[i] < share[i] {
			out[s] = name
			count[i]++
			continue
		}
		free = append(free, s)
	}
	for _, s := range free {
		best := -1
		for i := range names {
			if count[i] < share[i] && (best < 0 || count[i] < count[best]) {
				best = i
			}
		}
		out[s] = names[best]
		count[best]++
	}
	return out
}

// SlotFor returns the group-coordinator slot of group in a ring of n slots,
// computed exactly like Kafka's __consumer_offsets partition for a group:
// Utils.abs(groupId.hashCode()) % n. It returns -1 when n <= 0.
func SlotFor(group string, n int) int {
	if n <= 0 {
		return -1
	}
	return int(KafkaAbs(JavaStringHashCode(group))) % n
}

// CoordinatorFor returns the broker that coordinates group: the broker of slot
// SlotFor(group, len(slots)); if that broker is not alive (draining, dead or
// missing), the next slot in ring order whose broker is alive. Because the
// slot list keeps dead rows, a broker's death moves only its own groups.
// It returns false when no slot has an alive broker.
func CoordinatorFor(group string, a *Assignment) (Broker, bool) {
	if a == nil {
		return Broker{}, false
	}
	i := SlotFor(group, len(a.ConsumerGroups.Slots))
	if slices.Contains(a.ConsumerGroups.Held, i) {
		return Broker{}, false // between coordinators: retriable for clients
	}
	return slotOwner(a, i)
}

// NextCoordinatorFor is CoordinatorFor, except that a slot held between
// coordinators answers the broker it goes to once granted: the broker a
// client may already be sent to, which refuses with a retriable error
// until it holds the slot.
func NextCoordinatorFor(group string, a *Assignment) (Broker, bool) {
	if a == nil {
		return Broker{}, false
	}
	return slotOwner(a, SlotFor(group, len(a.ConsumerGroups.Slots)))
}

// slotOwner walks the ring from slot i to the first slot with an alive broker.
func slotOwner(a *Assignment, i int) (Broker, bool) {
	n := len(a.ConsumerGroups.Slots)
	if i < 0 || n == 0 {
		return Broker{}, false
	}
	for k := 0; k < n; k++ {
		if b, ok := a.BrokerByName(a.ConsumerGroups.Slots[(i+k)%n]); ok && b.State == Alive {
			return b, true
		}
	}
	return Broker{}, false
}

// SlotOwners returns, for every slot index, the name of the broker that
// serves it after walking past non-alive slots ("" when none is alive).
func SlotOwners(a *Assignment) []string {
	if a == nil {
		return nil
	}
	slots := a.ConsumerGroups.Slots
	alive := make(map[string]bool, len(a.Brokers))
	for _, b := range a.Brokers {
		if b.State == Alive {
			alive[b.Name] = true
		}
	}
	owners := make([]string, len(slots))
	for i := range slots {
		for k := 0; k < len(slots); k++ {
			if s := slots[(i+k)%len(slots)]; alive[s] {
				owners[i] = s
				break
			}
		}
	}
	return owners
}
