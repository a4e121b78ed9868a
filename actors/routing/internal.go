package routing

import (
	"crypto/sha256"
	"sort"

	"github.com/kaas-project/kaas/storage/assignment"
)

// InternalTopic is a topic Kafka keeps for its own state, which kaas keeps
// elsewhere (group offsets in the group store) but shows as Kafka does:
// Metadata lists it with IsInternal set, so regex subscriptions and admin
// tools that skip internal topics see the topic they expect. Clients cannot
// produce to it, delete it, grow it or alter its configs; kaas serves no
// reads of it (its state is not a Kafka log here).
type InternalTopic struct {
	Name       string
	Partitions int
	// Config is what DescribeConfigs reports as the topic's overrides.
	Config map[string]string
	// Leader is partition p as v shows it: its leader (-1: none now) and
	// leader epoch.
	Leader func(v *View, p int) Partition
}

// ConsumerOffsetsTopic is Kafka's group-offsets topic name.
const ConsumerOffsetsTopic = assignment.OffsetsTopic

// InternalTopics is every internal topic kaas shows. A new one (e.g.
// __transaction_state) is one more entry here.
var InternalTopics = []InternalTopic{
	{
		Name: ConsumerOffsetsTopic,
		// Kafka's offsets.topic.num.partitions default.
		Partitions: 50,
		Config: map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    "104857600",
		},
		Leader: groupSlotLeader,
	},
}

// LookupInternal returns the internal topic called name.
func LookupInternal(name string) (InternalTopic, bool) {
	for _, it := range InternalTopics {
		if it.Name == name {
			return it, true
		}
	}
	return InternalTopic{}, false
}

// IsInternal reports whether name is an internal topic.
func IsInternal(name string) bool {
	_, ok := LookupInternal(name)
	return ok
}

// groupSlotLeader shows partition p of __consumer_offsets led by the broker
// serving group-coordinator slot p (mod the slot count, for a file with
// fewer slots than assignment.GroupSlotCount): Kafka stores a group in
// partition abs(hash(group)) mod 50 and kaas coordinates it at that slot,
// so the broker shown leading partition p coordinates every group Kafka
// would store there.
func groupSlotLeader(v *View, p int) Partition {
	if v.GroupSlots == nil {
		return Partition{Leader: v.Self}
	}
	if len(v.GroupSlots) == 0 {
		return Partition{Leader: -1}
	}
	i := p % len(v.GroupSlots)
	out := Partition{Leader: v.GroupSlots[i]}
	if len(v.GroupSlotEpochs) == len(v.GroupSlots) {
		out.LeaderEpoch = v.GroupSlotEpochs[i]
	}
	return out
}

// Internal returns the routing topic of internal topic name as this view
// shows it (its partitions' leaders follow the view), or false when name is
// no internal topic.
func (v *View) Internal(name string) (*Topic, bool) {
	it, ok := LookupInternal(name)
	if !ok {
		return nil, false
	}
	t := &Topic{Name: it.Name, ID: internalTopicID(it.Name), Config: it.Config, Partitions: make([]Partition, it.Partitions)}
	for p := range t.Partitions {
		t.Partitions[p] = it.Leader(v, p)
	}
	return t, true
}

// internalTopicID is a stable UUID (version 8 layout, RFC 9562) derived from
// the name, the same on every broker and across restarts.
func internalTopicID(name string) [16]byte {
	sum := sha256.Sum256([]byte("kaas internal topic " + name))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80
	id[8] = id[8]&0x3f | 0x80
	return id
}

// InternalByID returns the internal topic whose id is id, as Internal.
func (v *View) InternalByID(id [16]byte) (*Topic, bool) {
	for _, it := range InternalTopics {
		if internalTopicID(it.Name) == id {
			return v.Internal(it.Name)
		}
	}
	return nil, false
}

// AnyTopic returns the topic called name as a client sees it: an internal
// topic (which hides a user topic of the same name), else a user topic.
func (v *View) AnyTopic(name string) (*Topic, bool) {
	if t, ok := v.Internal(name); ok {
		return t, true
	}
	t, ok := v.Topics[name]
	return t, ok
}

// AnyTopicByID returns the topic whose id is id, as AnyTopic.
func (v *View) AnyTopicByID(id [16]byte) (*Topic, bool) {
	if t, ok := v.InternalByID(id); ok {
		return t, true
	}
	t, ok := v.TopicIDs[id]
	if ok && IsInternal(t.Name) {
		return nil, false // hidden behind the internal topic
	}
	return t, ok
}

// AllTopicNames returns every topic a client sees, internal ones included,
// sorted: what Kafka's broker matches a KIP-848 regex subscription against.
func (v *View) AllTopicNames() []string {
	out := v.TopicNames()
	for _, it := range InternalTopics {
		if _, shadowed := v.Topics[it.Name]; !shadowed {
			out = append(out, it.Name)
		}
	}
	sort.Strings(out)
	return out
}

// TopicPartitionsLed counts the partitions this broker leads of topics,
// not of internal ones (those follow the group-coordinator slots).
func (v *View) TopicPartitionsLed() int {
	n := 0
	for tp := range v.Local {
		if !IsInternal(tp.Topic) {
			n++
		}
	}
	return n
}

// GroupSlotsServed counts the group-coordinator slots this broker serves
// (each one a partition of __consumer_offsets); in local-dev mode
// (GroupSlots nil), every one.
func (v *View) GroupSlotsServed() int {
	if v.GroupSlots == nil {
		return assignment.GroupSlotCount
	}
	n := 0
	for _, id := range v.GroupSlots {
		if id == v.Self {
			n++
		}
	}
	return n
}
