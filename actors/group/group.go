// Package group is the consumer-group coordinator: one actor per group (spawned
// on demand by a manager actor), holding the group's membership and committed
// offsets, with the Kafka semantics of Apache Kafka's group coordinator:
//
//   - the classic protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup):
//     generations, eager and cooperative rebalances (cooperative is client
//     side), pending members, static membership, session and rebalance
//     timeouts, the initial rebalance delay;
//   - the KIP-848 consumer protocol (ConsumerGroupHeartbeat): group and member
//     epochs, server-side assignors ("uniform", "range"), incremental
//     reconciliation with revocation before assignment;
//   - both in one group, as a running group moves between them (mixed.go);
//   - committed offsets, persisted through storage/groupstore before they are
//     acknowledged, with Kafka's offsets-retention rules.
//
// The logic is plain data and functions (Group, the assignors) driven with an
// explicit clock; the actor (actor.go) is a thin shell that feeds it requests,
// timer ticks and completed writes.
package group

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/share"
	"github.com/kaas-project/kaas/actors/streams"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// Config holds the broker-side group settings (Kafka's names in comments).
type Config struct {
	// InitialRebalanceDelay is group.initial.rebalance.delay.ms (3 s); a
	// negative value means no delay.
	InitialRebalanceDelay time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound a classic member's
	// session timeout: group.min.session.timeout.ms (6 s) and
	// group.max.session.timeout.ms (30 min).
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// NewMemberJoinTimeout bounds how long a new classic member may wait in
	// JoinGroup (5 min, as Kafka's GroupCoordinator).
	NewMemberJoinTimeout time.Duration
	// ClassicMaxSize is group.max.size (0 = unlimited): the most members
	// a classic group takes; a new member's JoinGroup into a full group
	// is refused, and a consumer group with classic members is turned
	// back into a classic group only if they fit.
	ClassicMaxSize int
	// ConsumerMaxSize is group.consumer.max.size (0 = unlimited): the
	// most members a consumer (KIP-848) group takes, whichever protocol
	// each member speaks; a classic group is turned into a consumer group
	// only if its members fit.
	ConsumerMaxSize int
	// OffsetsRetention is offsets.retention.minutes (7 days).
	OffsetsRetention time.Duration
	// MaxMetadataSize is offset.metadata.max.bytes (4096).
	MaxMetadataSize int
	// ConsumerHeartbeatInterval is group.consumer.heartbeat.interval.ms (5 s).
	ConsumerHeartbeatInterval time.Duration
	// ConsumerSessionTimeout is group.consumer.session.timeout.ms (45 s).
	ConsumerSessionTimeout time.Duration
	// Assignors are group.consumer.assignors (uniform, range): the
	// server-side assignors members may ask for, the first the one of a
	// group whose members ask for none.
	Assignors []string
	// MigrationPolicy is group.consumer.migration.policy (bidirectional):
	// whether a group with members may switch protocol (mixed.go).
	MigrationPolicy MigrationPolicy
	// Share holds the share-group membership settings
	// (group.share.heartbeat.interval.ms, group.share.session.timeout.ms,
	// group.share.max.size).
	Share share.GroupConfig
	// Streams holds the streams-group settings
	// (group.streams.heartbeat.interval.ms, group.streams.session.timeout.ms,
	// group.streams.num.standby.replicas, group.streams.max.size).
	Streams streams.GroupConfig
	// NewID returns a fresh UUID-like string for member ids (tests may
	// make it deterministic).
	NewID func() string
	// DescribeTopic, when set (an authorizer is configured), tells whether
	// principal connecting from host may DESCRIBE topic: a KIP-848 regex
	// resolves only to such topics, as Kafka's coordinator filters a
	// resolved regex through its authorizer. Nil allows every topic.
	DescribeTopic func(principal, host, topic string) bool
}

// Defaults fills zero fields with Kafka's defaults.
func (c *Config) Defaults() {
	if c.InitialRebalanceDelay == 0 {
		c.InitialRebalanceDelay = 3 * time.Second
	}
	if c.MinSessionTimeout <= 0 {
		c.MinSessionTimeout = 6 * time.Second
	}
	if c.MaxSessionTimeout <= 0 {
		c.MaxSessionTimeout = 30 * time.Minute
	}
	if c.NewMemberJoinTimeout <= 0 {
		c.NewMemberJoinTimeout = 5 * time.Minute
	}
	if c.OffsetsRetention <= 0 {
		c.OffsetsRetention = 7 * 24 * time.Hour
	}
	if c.MaxMetadataSize <= 0 {
		c.MaxMetadataSize = 4096
	}
	if c.ConsumerHeartbeatInterval <= 0 {
		c.ConsumerHeartbeatInterval = 5 * time.Second
	}
	if c.ConsumerSessionTimeout <= 0 {
		c.ConsumerSessionTimeout = 45 * time.Second
	}
	if len(c.Assignors) == 0 {
		c.Assignors = []string{AssignorUniform, AssignorRange}
	}
	if c.MigrationPolicy == "" {
		c.MigrationPolicy = MigrationBidirectional
	}
	if c.NewID == nil {
		c.NewID = newUUID
	}
}

func (c *Config) initialDelay() time.Duration { return max(c.InitialRebalanceDelay, 0) }

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Kind is the group type.
type Kind uint8

const (
	// KindNone is a group that does not exist (yet): no members, no offsets.
	KindNone Kind = iota
	// KindClassic is a JoinGroup/SyncGroup group, or a "simple" group that
	// only stores offsets.
	KindClassic
	// KindConsumer is a KIP-848 consumer group.
	KindConsumer
	// KindShare is a KIP-932 share group (share.go).
	KindShare
	// KindStreams is a KIP-1071 streams group (streams.go).
	KindStreams
)

// String is the ListGroups group type.
func (k Kind) String() string {
	switch k {
	case KindClassic:
		return "classic"
	case KindConsumer:
		return "consumer"
	case KindShare:
		return "share"
	case KindStreams:
		return "streams"
	}
	return ""
}

// State is a group state, named as Kafka names it.
type State uint8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
	Assigning   // consumer groups: target assignment pending
	Reconciling // consumer groups: members converging to the target
	NotReady    // streams groups: the topology cannot be configured yet
)

// stateNames are the states' names, by State.
var stateNames = [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Assigning", "Reconciling", "NotReady"}

func (s State) String() string { return stateNames[s] }

// Client identifies the connection a request came from.
type Client struct {
	ID        string
	Host      string
	Principal string // authenticated principal, "User:..."
}

// TopicInfo is what the coordinator needs to know of a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics is the cluster's topic metadata (the routing view, or a map in
// tests).
type Topics interface {
	ByName(name string) (TopicInfo, bool)
	ByID(id [16]byte) (TopicInfo, bool)
	// Names lists every topic, sorted.
	Names() []string
}

// Reply answers a parked request (JoinGroup, SyncGroup); it must not block.
type Reply func(kmsg.Response)

// Summary is one group's ListGroups row plus what the manager tracks.
type Summary struct {
	Group        string
	Kind         Kind
	State        State
	ProtocolType string
	// Exists is false for a group with no members and no offsets.
	Exists bool
}

// Group is one group's coordinator state. It is not safe for concurrent use:
// its actor owns it. Every method takes the current time; deadlines that have
// passed are processed before a method returns.
type Group struct {
	ID  string
	cfg Config
	// base is the broker's settings, which the group's configs override
	// (SetGroupConfigs).
	base Config

	kind  Kind
	state State

	// classic protocol
	protocolType   string
	protocol       string
	generation     int32
	leader         string
	members        map[string]*member
	pending        map[string]time.Time // member id -> expiry (MEMBER_ID_REQUIRED issued)
	static         map[string]string    // group.instance.id -> member id (both protocols)
	supported      map[string]int       // protocol name -> members supporting it
	initialPhase   bool                 // PreparingRebalance entered from Empty
	newMemberAdded bool
	initialDelay   time.Duration
	initialRemain  time.Duration
	joinDeadline   time.Time
	pendingSync    map[string]bool
	syncDeadline   time.Time
	subscribed     map[string]bool // topics of the consumer-protocol members, per generation
	// downgraded is what to save of a group a downgrade from the consumer
	// protocol left mid-rebalance (mixed.go): its Stable start.
	downgraded *savedMembership

	// KIP-848 consumer protocol
	cons consumerState

	// share is the KIP-932 membership of a share group (nil otherwise).
	share *share.Members

	// streams is the KIP-1071 membership of a streams group (nil
	// otherwise).
	streams *streams.Group

	// offsets
	offsets    map[groupstore.TP]groupstore.Commit
	inflight   map[groupstore.TP]int
	emptySince time.Time // zero: unknown (use commit times) or not empty

	// offsetsVersion moves whenever offsets may have changed
	// (CommittedOffsets' readers republish then).
	offsetsVersion uint64
	// membersVersion moves whenever the membership to save may have
	// changed (MembershipToSave); a share group's members count their own.
	membersVersion uint64
}

// New returns a group that does not exist yet (KindNone).
func New(id string, cfg Config) *Group {
	cfg.Defaults()
	g := &Group{ID: id, cfg: cfg, base: cfg}
	g.reset()
	return g
}

func (g *Group) reset() {
	g.kind, g.state = KindNone, Empty
	g.protocolType = ""
	g.clearClassic()
	g.static = map[string]string{}
	g.cons = newConsumerState()
	g.share = nil
	g.streams = nil
	g.offsets = map[groupstore.TP]groupstore.Commit{}
	g.offsetsVersion++
	g.inflight = map[groupstore.TP]int{}
	g.emptySince = time.Time{}
	g.membersVersion++
}

// clearClassic drops the classic protocol's state: the group is new, or
// its members now speak another protocol.
func (g *Group) clearClassic() {
	g.protocol, g.leader = "", ""
	g.generation = 0
	g.members = map[string]*member{}
	g.pending = map[string]time.Time{}
	g.supported = map[string]int{}
	g.initialPhase, g.newMemberAdded = false, false
	g.joinDeadline, g.syncDeadline = time.Time{}, time.Time{}
	g.pendingSync = nil
	g.subscribed = nil
	g.downgraded = nil
}

// Load installs stored state (offsets and the persisted metadata) into a
// fresh group. now starts the retention clock of a group that had members
// when its previous coordinator stopped.
func (g *Group) Load(now time.Time, st groupstore.State) {
	for tp, c := range st.Offsets {
		g.offsets[tp] = c
	}
	g.offsetsVersion++
	g.membersVersion++
	if len(g.offsets) == 0 {
		return
	}
	g.kind = KindClassic
	if st.Meta != nil {
		switch st.Meta.Kind {
		case KindConsumer.String():
			g.kind = KindConsumer
		case KindStreams.String():
			g.kind = KindStreams
			g.streams = streams.New(g.cfg.Streams)
		}
		g.protocolType = st.Meta.ProtocolType
		if st.Meta.EmptySince > 0 {
			g.emptySince = time.UnixMilli(st.Meta.EmptySince)
		} else {
			g.emptySince = now
		}
	}
	switch g.kind {
	case KindConsumer:
		g.protocolType = "consumer"
	case KindStreams:
		g.protocolType = "streams"
	}
}

// Kind returns the group type.
func (g *Group) Kind() Kind { return g.kind }

// State returns the group state.
func (g *Group) State() State { return g.state }

// Generation returns the classic generation.
func (g *Group) Generation() int32 { return g.generation }

// Summary returns the group's ListGroups row.
func (g *Group) Summary() Summary {
	return Summary{Group: g.ID, Kind: g.kind, State: g.state, ProtocolType: g.protocolType, Exists: g.Exists()}
}

// Exists reports whether Kafka would know this group: it has a type (members
// joined or an offset was committed) or stored offsets.
func (g *Group) Exists() bool { return g.kind != KindNone || len(g.offsets) > 0 }

// HasMembers reports whether any member (or pending member) is present.
func (g *Group) HasMembers() bool {
	return len(g.members) > 0 || len(g.pending) > 0 || len(g.cons.members) > 0 || g.shareMembers() > 0 || g.streamsMembers() > 0
}

// Idle reports whether the group holds nothing worth keeping an actor for:
// no members, no offsets, no commit in flight. A share group is never
// idle: as on Kafka, where share groups do not expire, it stays until
// DeleteGroups removes it.
func (g *Group) Idle() bool {
	return !g.HasMembers() && len(g.offsets) == 0 && len(g.inflight) == 0 && g.state != Dead && g.kind != KindShare
}

// Forget drops an idle group's type so it reads as nonexistent (the
// periodic cleanup of empty groups without offsets).
func (g *Group) Forget() {
	if g.Idle() {
		g.reset()
	}
}

// Meta is what persists beside the offsets.
func (g *Group) Meta() groupstore.Meta {
	m := groupstore.Meta{Kind: g.kind.String(), ProtocolType: g.protocolType}
	if !g.emptySince.IsZero() && !g.HasMembers() {
		m.EmptySince = g.emptySince.UnixMilli()
	}
	return m
}

// HasOffsets reports whether any offset is committed or being committed.
func (g *Group) HasOffsets() bool { return len(g.offsets) > 0 || len(g.inflight) > 0 }

func (g *Group) setState(now time.Time, s State) {
	if s == Empty && (g.state != Empty || g.emptySince.IsZero()) {
		g.emptySince = now
	} else if s != Empty && s != Dead {
		g.emptySince = time.Time{}
	}
	if s != g.state {
		g.membersVersion++
	}
	if s == Stable || s == Empty {
		g.downgraded = nil // the group saves what it is now
	}
	g.state = s
}

// NextDeadline is the earliest pending timer, or zero if none.
func (g *Group) NextDeadline() time.Time {
	var next time.Time
	at := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, t := range g.pending {
		at(t)
	}
	for _, m := range g.members {
		at(m.deadline)
	}
	at(g.joinDeadline)
	at(g.syncDeadline)
	for _, m := range g.cons.members {
		at(m.sessionDeadline)
		at(m.revokeDeadline)
		if m.classic != nil {
			at(m.classic.joinDeadline)
			at(m.classic.syncDeadline)
		}
	}
	if g.share != nil {
		at(g.share.NextDeadline())
	}
	if g.streams != nil {
		at(g.streams.NextDeadline())
	}
	return next
}

// Tick processes every deadline that has passed. Most calls find none
// due, which NextDeadline tells without the sorted walks below (they cost
// a large group a sort of its members per call).
func (g *Group) Tick(now time.Time) {
	if next := g.NextDeadline(); next.IsZero() || now.Before(next) {
		return
	}
	g.classicTick(now)
	g.consumerTick(now)
	g.shareTick(now)
	g.streamsTick(now)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func ms(d time.Duration) int32 { return int32(d / time.Millisecond) }

func strp(s string) *string { return &s }
