package group

import (
	"bytes"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// A classic group's GroupMetadata record in __consumer_offsets, as Kafka's
// coordinator keeps it: key version 2 (the group id), and a value naming the
// protocol type, generation, protocol, leader and every member with its
// client id, client host, timeouts, subscription and assignment. Kafka
// writes it when a generation's assignment is stored (SyncGroup completing,
// a consumer group converted back to a classic one) and when the group
// becomes Empty, and a tombstone when the group is deleted, expires or
// becomes a KIP-848 consumer group. KIP-848 consumer, share and streams
// groups have records of their own in Kafka (keys version 3 and up), which
// kaas does not write.

// groupMetadataValueVersion is the value version kaas writes: 1, not the 3
// Kafka 4 writes, because LinkedIn Burrow up to 1.2.x decodes only values
// 0 and 1 (it logs "failed to decode" for any other and learns no owner),
// and Kafka's GroupMetadataManager and OffsetsMessageFormatter read versions
// 0 to 4. Version 1 lacks the current-state timestamp (v2) and the members'
// group.instance.id (v3).
const groupMetadataValueVersion = 1

// metadataWant is what a group's GroupMetadata record should become.
type metadataWant uint8

const (
	// metadataKeep: leave it as it is (a rebalance in progress writes
	// nothing, as in Kafka).
	metadataKeep metadataWant = iota
	// metadataWrite: the group's current record.
	metadataWrite
	// metadataTombstone: no record (the group is gone, or not classic).
	metadataTombstone
)

// GroupMetadata returns what the group's GroupMetadata record should be:
// a Stable classic group's generation with its members' assignments (or the
// Stable group a downgrade from the consumer protocol started as, until its
// rebalance completes), an Empty classic group that had members (its
// generation, no members), a tombstone for a group deleted, forgotten or of
// another kind. A classic group mid-rebalance keeps its record, and so does
// an Empty one at generation 0: a group that only stores offsets (Kafka
// writes it no record), or one loaded without its generation.
func (g *Group) GroupMetadata() (metadataWant, *savedMembership) {
	switch {
	case g.state == Dead || g.kind != KindClassic:
		return metadataTombstone, nil
	case g.state == Stable:
		s := g.saveClassic()
		return metadataWrite, &s
	case g.downgraded != nil:
		return metadataWrite, g.downgraded
	case g.state == Empty && g.generation > 0:
		return metadataWrite, &savedMembership{Kind: KindClassic.String(), ProtocolType: g.protocolType, Generation: g.generation}
	}
	return metadataKeep, nil
}

// metadataMayBeHeld reports whether a group just loaded may have a
// GroupMetadata record that an earlier coordinator wrote: a classic group
// that had members (a group that only stores offsets has no protocol type).
func (g *Group) metadataMayBeHeld() bool {
	return g.kind == KindClassic && g.protocolType != ""
}

// groupMetadataValue encodes s as a GroupMetadataValue (version
// groupMetadataValueVersion): an Empty group's protocol and leader are
// null, as Kafka writes them; each member's subscription is its metadata
// for the group's protocol.
func groupMetadataValue(s *savedMembership) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = groupMetadataValueVersion, s.ProtocolType, s.Generation
	if s.Protocol != "" {
		v.Protocol = strp(s.Protocol)
	}
	if s.Leader != "" {
		v.Leader = strp(s.Leader)
	}
	for _, m := range s.Classic {
		vm := kmsg.NewGroupMetadataValueMember()
		vm.MemberID, vm.ClientID, vm.ClientHost = m.ID, m.ClientID, conn.MemberHost(m.ClientHost) // version 1 has no instance id; a host saved before the Kafka form
		vm.RebalanceTimeoutMillis, vm.SessionTimeoutMillis = int32(m.RebalanceMs), int32(m.SessionMs)
		for _, p := range m.Protocols {
			if p.Name == s.Protocol {
				vm.Subscription = p.Metadata
				break
			}
		}
		vm.Assignment = m.Assignment
		v.Members = append(v.Members, vm)
	}
	return v.AppendTo(nil)
}

// groupMetadataKey encodes the group's GroupMetadataKey (version 2).
func groupMetadataKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version, k.Group = 2, group
	return k.AppendTo(nil)
}

// metadataRecord is a GroupMetadata record to write: a value, or a
// tombstone (nil value).
type metadataRecord struct{ value []byte }

// metadataHeld is what the topic holds under the group's GroupMetadata
// key, as far as the coordinator knows.
type metadataHeld struct {
	// unknown: the group was loaded, and an earlier coordinator may have
	// written a record that no later write of this one replaced.
	unknown bool
	value   []byte // nil: none (or a tombstone)
}

// metadataChange returns the record that takes the group's GroupMetadata
// key from what it holds (written, then in flight, then pending on top) to
// want (value for metadataWrite), or nil when none is needed.
func metadataChange(held []*metadataRecord, written metadataHeld, want metadataWant, value []byte) *metadataRecord {
	cur := written
	for _, h := range held {
		if h != nil {
			cur = metadataHeld{value: h.value}
		}
	}
	switch want {
	case metadataWrite:
		if !cur.unknown && cur.value != nil && bytes.Equal(cur.value, value) {
			return nil
		}
		return &metadataRecord{value: value}
	case metadataTombstone:
		if !cur.unknown && cur.value == nil {
			return nil
		}
		return &metadataRecord{}
	}
	return nil
}
