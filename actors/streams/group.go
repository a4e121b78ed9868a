// Package streams is a KIP-1071 streams group (Kafka Streams' rebalance
// protocol, group.protocol=streams) as Apache Kafka 4.2's group coordinator
// keeps it: members and their epochs, the group's topology and its
// configuration against the cluster's topics (the internal topics to
// create, the statuses members are told), the sticky task assignment of
// active and standby tasks, and each member's reconciliation towards its
// target (tasks revoked before they are given to another member).
//
// It is plain data driven with an explicit clock, as share.Members is: the
// group coordinator (actors/group) owns one Group per streams group, feeds
// it heartbeats and ticks, saves what Save returns beside the group's
// offsets, and creates the internal topics a heartbeat names.
package streams

import (
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupConfig holds the streams-group settings (Kafka's names in comments).
type GroupConfig struct {
	// HeartbeatInterval is group.streams.heartbeat.interval.ms (5 s), or the
	// group's streams.heartbeat.interval.ms.
	HeartbeatInterval time.Duration
	// SessionTimeout is group.streams.session.timeout.ms (45 s), or the
	// group's streams.session.timeout.ms.
	SessionTimeout time.Duration
	// NumStandbyReplicas is group.streams.num.standby.replicas (0), or the
	// group's streams.num.standby.replicas.
	NumStandbyReplicas int
	// MaxSize is group.streams.max.size.
	MaxSize int
	// InitialRebalanceDelay is group.streams.initial.rebalance.delay.ms
	// (3 s), or the group's streams.initial.rebalance.delay.ms: a new
	// group's first assignment waits this long for more members. Negative
	// means none.
	InitialRebalanceDelay time.Duration
}

// Defaults fills zero fields with Kafka's defaults.
func (c *GroupConfig) Defaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = 5 * time.Second
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 45 * time.Second
	}
	if c.NumStandbyReplicas < 0 {
		c.NumStandbyReplicas = 0
	}
	if c.MaxSize <= 0 {
		c.MaxSize = math.MaxInt32
	}
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = 3 * time.Second
	}
}

// Topic is what the group needs to know of a topic.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics is the cluster's topic metadata (the routing view, or a map in
// tests).
type Topics interface {
	ByName(name string) (Topic, bool)
	// Names lists every topic, sorted (source topic regexes match them).
	Names() []string
}

// Client identifies the connection a heartbeat came from.
type Client struct {
	ID, Host string
}

// InternalTopic is a changelog or repartition topic the group's topology
// needs and the cluster lacks: the broker creates it.
type InternalTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // 0 or -1: the broker's default
	Configs           map[string]string
}

// State is the group state, named as Kafka names a streams group's.
type State string

const (
	Empty       State = "Empty"
	NotReady    State = "NotReady"
	Assigning   State = "Assigning"
	Reconciling State = "Reconciling"
	Stable      State = "Stable"
)

// Group is one streams group. It is not safe for concurrent use.
type Group struct {
	cfg GroupConfig
	// exists is whether a member ever joined: Kafka's group record.
	exists          bool
	epoch           int32
	assignmentEpoch int32
	topo            *topology
	// conf is the topology configured against the topics; nil until a
	// heartbeat configures it.
	conf *configured
	// validated is the topology epoch last found ready, or -1; hash is
	// the topics' metadata hash the group epoch was last bumped for.
	validated int32
	hash      uint64

	members map[string]*member
	target  map[string]tasks
	owners  owners

	// standbys is the standby replica count the target was last
	// computed with (Kafka's last assignment configs).
	standbys int

	// delay is when the new group's delayed first assignment runs; zero
	// when none is pending.
	delay time.Time

	endpointEpoch int32
	// shutdownBy is the member that asked the application to shut down.
	shutdownBy string
	version    uint64
}

// New returns an empty streams group.
func New(cfg GroupConfig) *Group {
	cfg.Defaults()
	return &Group{
		cfg:       cfg,
		validated: -1,
		members:   map[string]*member{},
		target:    map[string]tasks{},
		owners:    newOwners(),
	}
}

// SetConfig replaces the settings (the group's configs changed). A new
// standby count rebalances the group at its next heartbeat.
func (g *Group) SetConfig(cfg GroupConfig) {
	cfg.Defaults()
	g.cfg = cfg
}

func (g *Group) changed() { g.version++ }

// bumpEpoch moves the group epoch; a new group goes from 0 to 2, as in
// Kafka, where epoch 1 is the empty assignment of the initial delay.
func (g *Group) bumpEpoch() {
	if g.epoch == 0 {
		g.epoch = 2
	} else {
		g.epoch++
	}
	g.changed()
}

// Heartbeat serves a StreamsGroupHeartbeat (key 88): epoch 0 joins with the
// topology, -1 leaves, anything else heartbeats. create lists the internal
// topics the topology needs that do not exist yet.
func (g *Group) Heartbeat(now time.Time, c Client, req *kmsg.StreamsGroupHeartbeatRequest, topics Topics) (resp *kmsg.StreamsGroupHeartbeatResponse, create []InternalTopic) {
	return g.heartbeat(now, c, req, topics)
}

// Describe is the group's StreamsGroupDescribe (key 89) answer; the caller
// sets GroupID and AuthorizedOperations.
func (g *Group) Describe(now time.Time, topics Topics) kmsg.StreamsGroupDescribeResponseGroup {
	return g.describe(topics)
}

// Expire removes the members whose session timed out (or that did not
// revoke in their rebalance timeout) and returns their ids.
func (g *Group) Expire(now time.Time) []string { return g.expire(now) }

// NextDeadline is the earliest pending timer, or zero.
func (g *Group) NextDeadline() time.Time { return g.nextDeadline() }

// Len is the number of members.
func (g *Group) Len() int { return len(g.members) }

// Epoch is the group epoch.
func (g *Group) Epoch() int32 { return g.epoch }

// State is the group state.
func (g *Group) State() State { return g.state() }

// Version moves whenever Save may answer differently.
func (g *Group) Version() uint64 { return g.version }

// ValidateCommit checks an OffsetCommit (or TxnOffsetCommit) from member
// at epoch; 0 accepts it. An admin commit (epoch < 0, empty member id) is
// accepted only while the group has no members.
func (g *Group) ValidateCommit(now time.Time, memberID string, epoch int32) int16 {
	return g.validateCommit(now, memberID, epoch)
}

// ValidateFetch checks an OffsetFetch naming a member and epoch (v9+);
// an admin fetch (nil member, epoch < 0) is always accepted.
func (g *Group) ValidateFetch(memberID *string, epoch int32) int16 {
	return g.validateFetch(memberID, epoch)
}

// Topics lists the topics the group's topology reads and writes: its
// source topics and internal topics (offsets retention keeps a group's
// offsets of these while it has members).
func (g *Group) Topics() []string {
	if g.topo == nil {
		return nil
	}
	return g.topo.topicNames()
}

// Save returns the membership to persist.
func (g *Group) Save() Saved { return g.save() }

// Restore installs a saved membership into a new group; every member's
// session starts afresh at now.
func (g *Group) Restore(now time.Time, s Saved) error { return g.restore(now, s) }
