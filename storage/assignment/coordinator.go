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
