package assignment

import (
	"cmp"
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
// holding the most (then serving the most) keeping the extra ones. The
// rest go, in slot order, to the broker serving them now (serving:
// SlotOwners of prev's file, nil if none) while it is registered and
// within its share, so that unregistering a dead broker moves few of the
// groups its death spread over the others; else to the broker with the
// fewest. prev of another length (none yet, or a list of one slot per
// broker) gives way to a round robin: slot i to names[i mod len(names)].
func PlaceSlots(prev, serving, names []string) []string {
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
	if len(serving) != len(prev) {
		serving = nil
	}
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	held := make([]int, len(names))   // prev's slots of each registered broker
	fallen := make([]int, len(names)) // slots of others it serves
	for s, name := range prev {
		if i, ok := index[name]; ok {
			held[i]++
		}
		if serving != nil && serving[s] != name {
			if i, ok := index[serving[s]]; ok {
				fallen[i]++
			}
		}
	}
	// The GroupSlotCount % len(names) brokers holding the most may serve
	// one slot more than the others; among those holding as many, those
	// serving more fallen slots, then the lower ordinal. Only ties look at
	// what is served: in a list PlaceSlots gave these brokers, the extra
	// ones are held apart by what they hold, so the list is kept as it is.
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Or(held[b]-held[a], fallen[b]-fallen[a]) })
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
	var rest []int
	for _, s := range free {
		if serving != nil {
			if i, ok := index[serving[s]]; ok && count[i] < share[i] {
				out[s] = names[i]
				count[i]++
				continue
			}
		}
		rest = append(rest, s)
	}
	for _, s := range rest {
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
// SlotFor(group, len(slots)) while it is alive; otherwise (draining, dead or
// missing) the alive broker its slot falls to (SlotOwners). Because the
// slot list keeps dead rows, a broker's death moves only its own groups.
// It returns false while the slot is held between coordinators and when no
// broker is alive.
func CoordinatorFor(group string, a *Assignment) (Broker, bool) {
	if a == nil {
		return Broker{}, false
	}
	i := SlotFor(group, len(a.ConsumerGroups.Slots))
	if slices.Contains(a.ConsumerGroups.Held, i) {
		return Broker{}, false // between coordinators: retriable for clients
	}
	return slotOwner(a, i, nil)
}

// NextCoordinatorFor is CoordinatorFor, except that a slot held between
// coordinators answers the broker it goes to once granted: the broker a
// client may already be sent to, which refuses with a retriable error
// until it holds the slot.
func NextCoordinatorFor(group string, a *Assignment) (Broker, bool) {
	if a == nil {
		return Broker{}, false
	}
	return slotOwner(a, SlotFor(group, len(a.ConsumerGroups.Slots)), nil)
}

// Coordinators returns CoordinatorFor and NextCoordinatorFor over a, with
// where the slots of brokers not alive fall computed once: for a view
// answering many requests from one file.
func Coordinators(a *Assignment) (current, next func(group string) (Broker, bool)) {
	owners := SlotOwners(a)
	next = func(group string) (Broker, bool) {
		if a == nil {
			return Broker{}, false
		}
		return slotOwner(a, SlotFor(group, len(a.ConsumerGroups.Slots)), owners)
	}
	current = func(group string) (Broker, bool) {
		if a == nil || slices.Contains(a.ConsumerGroups.Held, SlotFor(group, len(a.ConsumerGroups.Slots))) {
			return Broker{}, false
		}
		return next(group)
	}
	return current, next
}

// slotOwner returns the broker serving slot i: the slot's own broker while
// it is alive, otherwise the one it falls to (owners: SlotOwners(a), or
// nil to compute it).
func slotOwner(a *Assignment, i int, owners []string) (Broker, bool) {
	slots := a.ConsumerGroups.Slots
	if i < 0 || i >= len(slots) {
		return Broker{}, false
	}
	if b, ok := a.BrokerByName(slots[i]); ok && b.State == Alive {
		return b, true // the common case: nothing to compute
	}
	if owners == nil {
		owners = SlotOwners(a)
	}
	return a.BrokerByName(owners[i])
}

// slotRank is broker name's rank for slot i: FNV-1a over the name and the
// slot, then splitmix64's finalizer to spread close inputs. Every broker
// computes the same ranks from the same file.
func slotRank(i int, name string) uint64 {
	h := uint64(14695981039346656037)
	for k := 0; k < len(name); k++ {
		h = (h ^ uint64(name[k])) * 1099511628211
	}
	h = (h ^ uint64(i)) * 1099511628211
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// SlotOwners returns, for every slot index, the name of the broker that
// serves it ("" when no broker is alive). A slot whose broker is alive is
// served by it. The others (their broker draining, dead or missing) fall,
// in slot order, each to the alive broker ranking highest for it
// (slotRank) among those serving fewer than ceil(slots / alive brokers),
// counting their own: consistent hashing with bounded loads. So a broker's
// slots spread evenly over the brokers left, rather than piling on one,
// and a later change of which brokers are alive moves few of the slots
// that had fallen elsewhere.
func SlotOwners(a *Assignment) []string {
	if a == nil {
		return nil
	}
	slots := a.ConsumerGroups.Slots
	owners := make([]string, len(slots))
	load := map[string]int{} // slots served, per alive broker
	var alive []string
	for _, b := range a.Brokers {
		if b.State == Alive {
			if _, dup := load[b.Name]; !dup {
				alive = append(alive, b.Name)
			}
			load[b.Name] = 0
		}
	}
	if len(alive) == 0 {
		return owners
	}
	var fallen []int
	for i, s := range slots {
		if _, ok := load[s]; ok {
			owners[i] = s
			load[s]++
			continue
		}
		fallen = append(fallen, i)
	}
	capacity := (len(slots) + len(alive) - 1) / len(alive)
	for _, i := range fallen {
		best, bestRank := "", uint64(0)
		for _, name := range alive {
			if load[name] >= capacity {
				continue
			}
			if r := slotRank(i, name); best == "" || r > bestRank || r == bestRank && name < best {
				best, bestRank = name, r
			}
		}
		owners[i] = best
		load[best]++
	}
	return owners
}
