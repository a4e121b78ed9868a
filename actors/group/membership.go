package group

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/share"
	"github.com/kaas-project/kaas/actors/streams"
)

// A group's membership is saved beside its offsets (groupstore's
// SaveMembers) so that a coordinator move or a restart is invisible to a
// stable group, as Kafka's group metadata records in __consumer_offsets
// make it: members keep their ids, the classic generation and assignments,
// the KIP-848 and share-group epochs and assignments. Deadlines are not saved: every
// member's session starts afresh when the membership is restored, so a
// member that died meanwhile is removed one session timeout later.
//
// The encoding is JSON of the types below; an unreadable membership is
// dropped (its members rejoin), never fatal.

// savedMembership is one group's saved membership.
type savedMembership struct {
	Kind string `json:"kind"` // "classic", "consumer", "share" or "streams"

	// classic: the last completed generation
	ProtocolType string         `json:"protocolType,omitempty"`
	Protocol     string         `json:"protocol,omitempty"`
	Generation   int32          `json:"generation,omitempty"`
	Leader       string         `json:"leader,omitempty"`
	Classic      []savedClassic `json:"classic,omitempty"`

	// consumer (KIP-848)
	GroupEpoch  int32           `json:"groupEpoch,omitempty"`
	AssignEpoch int32           `json:"assignEpoch,omitempty"`
	TopicsSig   []byte          `json:"topicsSig,omitempty"` // binary: topic ids
	Assignor    string          `json:"assignor,omitempty"`
	Consumers   []savedConsumer `json:"consumers,omitempty"`

	// share (KIP-932)
	Share *share.Saved `json:"share,omitempty"`

	// streams (KIP-1071)
	Streams *streams.Saved `json:"streams,omitempty"`
}

type savedClassic struct {
	ID          string          `json:"id"`
	InstanceID  *string         `json:"instanceId,omitempty"`
	ClientID    string          `json:"clientId"`
	ClientHost  string          `json:"clientHost"`
	SessionMs   int64           `json:"sessionMs"`
	RebalanceMs int64           `json:"rebalanceMs"`
	Protocols   []savedProtocol `json:"protocols"`
	Assignment  []byte          `json:"assignment,omitempty"`
}

type savedProtocol struct {
	Name     string `json:"name"`
	Metadata []byte `json:"metadata,omitempty"`
}

type savedConsumer struct {
	ID           string       `json:"id"`
	InstanceID   *string      `json:"instanceId,omitempty"`
	RackID       *string      `json:"rackId,omitempty"`
	ClientID     string       `json:"clientId"`
	ClientHost   string       `json:"clientHost"`
	Principal    string       `json:"principal,omitempty"`
	RebalanceMs  int64        `json:"rebalanceMs"`
	Names        []string     `json:"names,omitempty"`
	Regex        string       `json:"regex,omitempty"`
	Assignor     string       `json:"assignor,omitempty"`
	Topics       []string     `json:"topics,omitempty"`
	Epoch        int32        `json:"epoch"`
	PrevEpoch    int32        `json:"prevEpoch"`
	State        memberState  `json:"state"`
	Assigned     []savedTopic `json:"assigned,omitempty"`
	Revoking     []savedTopic `json:"revoking,omitempty"`
	Target       []savedTopic `json:"target,omitempty"`
	AssignEpochs []savedEpoch `json:"assignEpochs,omitempty"`
	// Classic is set for a member of the classic protocol (mixed.go).
	Classic *savedClassicMember `json:"classic,omitempty"`
}

type savedClassicMember struct {
	SessionMs int64           `json:"sessionMs"`
	Protocols []savedProtocol `json:"protocols"`
}

type savedTopic struct {
	Topic      string  `json:"topic"` // topic id, hex
	Partitions []int32 `json:"partitions"`
}

type savedEpoch struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Epoch     int32  `json:"epoch"`
}

// MembershipVersion moves whenever MembershipToSave may answer
// differently; the coordinator encodes the membership only then.
type MembershipVersion struct{ group, share, streams uint64 }

// MembershipVersion is the membership's current version.
func (g *Group) MembershipVersion() MembershipVersion {
	v := MembershipVersion{group: g.membersVersion}
	if g.share != nil {
		v.share = g.share.Version()
	}
	if g.streams != nil {
		v.streams = g.streams.Version()
	}
	return v
}

// MembershipToSave returns the membership to save now, and false when the
// saved one should stay: a classic group mid-rebalance keeps its last
// completed generation saved (one just downgraded from the consumer
// protocol saves the Stable group it started as); an Empty classic group
// that had members saves its protocol type and generation, as Kafka's
// Empty GroupMetadata record keeps them. nil (with true) removes a saved
// membership: the group has no members and no generation to keep.
func (g *Group) MembershipToSave() ([]byte, bool) {
	var s savedMembership
	switch {
	case g.state == Dead:
		return nil, false // deleted: the group's files go with it
	case g.kind == KindClassic && len(g.members) > 0:
		switch {
		case g.state == Stable:
			s = g.saveClassic()
		case g.downgraded != nil:
			s = *g.downgraded
		default:
			return nil, false
		}
	case g.kind == KindClassic && g.state == Empty && g.generation > 0:
		s = savedMembership{Kind: KindClassic.String(), ProtocolType: g.protocolType, Generation: g.generation}
	case g.kind == KindConsumer && len(g.cons.members) > 0:
		s = g.saveConsumer()
	case g.kind == KindShare:
		// Saved without members too: an empty share group lasts until
		// it is deleted, its group epoch with it.
		saved := g.share.Save()
		s = savedMembership{Kind: KindShare.String(), Share: &saved}
	case g.kind == KindStreams && g.streamsMembers() > 0:
		saved := g.streams.Save()
		s = savedMembership{Kind: KindStreams.String(), Streams: &saved}
	default:
		return nil, true
	}
	b, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("group: encode membership: %v", err)) // plain data always encodes
	}
	return b, true
}

func (g *Group) saveClassic() savedMembership {
	s := savedMembership{Kind: KindClassic.String(), ProtocolType: g.protocolType, Protocol: g.protocol,
		Generation: g.generation, Leader: g.leader}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		s.Classic = append(s.Classic, savedClassic{ID: m.id, InstanceID: m.instanceID, ClientID: m.clientID,
			ClientHost: m.clientHost, SessionMs: m.session.Milliseconds(), RebalanceMs: m.rebalance.Milliseconds(),
			Protocols: saveProtocols(m.protocols), Assignment: m.assignment})
	}
	return s
}

func (g *Group) saveConsumer() savedMembership {
	s := savedMembership{Kind: KindConsumer.String(), GroupEpoch: g.cons.groupEpoch, AssignEpoch: g.cons.assignEpoch,
		TopicsSig: []byte(g.cons.topicsSig), Assignor: g.cons.assignor}
	for _, id := range sortedKeys(g.cons.members) {
		s.Consumers = append(s.Consumers, saveConsumerMember(g.cons.members[id]))
	}
	return s
}

func saveConsumerMember(m *cmember) savedConsumer {
	sm := savedConsumer{ID: m.id, InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID,
		ClientHost: m.clientHost, Principal: m.principal, RebalanceMs: m.rebalanceTimeout.Milliseconds(), Names: m.names,
		Regex: m.regex, Assignor: m.assignor, Topics: m.topics, Epoch: m.epoch, PrevEpoch: m.prevEpoch,
		State: m.state, Assigned: saveAssignment(m.assigned), Revoking: saveAssignment(m.revoking),
		Target: saveAssignment(m.target)}
	if m.classic != nil {
		sm.Classic = &savedClassicMember{SessionMs: m.classic.session.Milliseconds(), Protocols: saveProtocols(m.classic.protocols)}
	}
	keys := make([]tpid, 0, len(m.assignEpochs))
	for k := range m.assignEpochs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return string(keys[i].topic[:]) < string(keys[j].topic[:])
		}
		return keys[i].partition < keys[j].partition
	})
	for _, k := range keys {
		sm.AssignEpochs = append(sm.AssignEpochs, savedEpoch{Topic: hex.EncodeToString(k.topic[:]), Partition: k.partition, Epoch: m.assignEpochs[k]})
	}
	return sm
}

func saveProtocols(ps []kmsg.JoinGroupRequestProtocol) []savedProtocol {
	out := make([]savedProtocol, 0, len(ps))
	for _, p := range ps {
		out = append(out, savedProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return out
}

func restoreProtocols(ps []savedProtocol) []kmsg.JoinGroupRequestProtocol {
	out := make([]kmsg.JoinGroupRequestProtocol, 0, len(ps))
	for _, p := range ps {
		out = append(out, kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: p.Metadata})
	}
	return out
}

func saveAssignment(a Assignment) []savedTopic {
	var out []savedTopic
	for _, t := range sortedIDs(a) {
		out = append(out, savedTopic{Topic: hex.EncodeToString(t[:]), Partitions: slices.Clone(a[t])})
	}
	return out
}

func parseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

func restoreAssignment(ts []savedTopic) (Assignment, error) {
	a := Assignment{}
	for _, t := range ts {
		id, err := parseTopicID(t.Topic)
		if err != nil {
			return nil, err
		}
		for _, p := range t.Partitions {
			a.add(id, p)
		}
	}
	return a, nil
}

// RestoreMembership installs a saved membership into a group just loaded
// (after Load). Every member's session starts at now. A membership that
// does not decode is an error and changes nothing: its members rejoin.
// topics names the topics a consumer group's members subscribe to.
func (g *Group) RestoreMembership(now time.Time, b []byte, topics Topics) error {
	if b == nil {
		return nil
	}
	g.membersVersion++
	var s savedMembership
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("group: decode saved membership: %w", err)
	}
	switch s.Kind {
	case KindClassic.String():
		g.restoreClassic(now, s)
	case KindConsumer.String():
		return g.restoreConsumer(now, s, topics)
	case KindShare.String():
		return g.restoreShare(now, s)
	case KindStreams.String():
		return g.restoreStreams(now, s)
	default:
		return fmt.Errorf("group: saved membership of unknown kind %q", s.Kind)
	}
	return nil
}

func (g *Group) restoreClassic(now time.Time, s savedMembership) {
	if len(s.Classic) == 0 {
		if s.Generation > 0 {
			// An Empty group: its next join starts the generation after.
			g.kind, g.protocolType, g.generation = KindClassic, s.ProtocolType, s.Generation
			if g.emptySince.IsZero() {
				g.emptySince = now
			}
		}
		return
	}
	g.kind = KindClassic
	g.protocolType, g.protocol, g.generation, g.leader = s.ProtocolType, s.Protocol, s.Generation, s.Leader
	g.members, g.static, g.supported = map[string]*member{}, map[string]string{}, map[string]int{}
	for _, sm := range s.Classic {
		m := &member{id: sm.ID, instanceID: sm.InstanceID, clientID: sm.ClientID, clientHost: sm.ClientHost,
			session: time.Duration(sm.SessionMs) * time.Millisecond, rebalance: time.Duration(sm.RebalanceMs) * time.Millisecond,
			protocols: restoreProtocols(sm.Protocols), assignment: sm.Assignment}
		m.deadline = now.Add(m.session)
		g.admit(m)
	}
	if g.members[g.leader] == nil {
		g.leader = sortedKeys(g.members)[0]
	}
	g.subscribed = g.subscribedTopics()
	g.setState(now, Stable)
	if g.cfg.ClassicMaxSize > 0 && len(g.members) > g.cfg.ClassicMaxSize {
		// group.max.size was lowered: a rebalance, in which only that
		// many members are let back in (roomToRejoin); the members
		// commit their offsets first, as on Kafka.
		g.prepareRebalance(now)
	}
}

func (g *Group) restoreConsumer(now time.Time, s savedMembership, topics Topics) error {
	if len(s.Consumers) == 0 {
		return nil
	}
	cons := newConsumerState()
	cons.groupEpoch, cons.assignEpoch, cons.topicsSig, cons.assignor = s.GroupEpoch, s.AssignEpoch, string(s.TopicsSig), s.Assignor
	static := map[string]string{}
	for _, sm := range s.Consumers {
		m := &cmember{id: sm.ID, instanceID: sm.InstanceID, rackID: sm.RackID, clientID: sm.ClientID,
			clientHost: sm.ClientHost, principal: sm.Principal, rebalanceTimeout: time.Duration(sm.RebalanceMs) * time.Millisecond,
			names: sm.Names, regex: sm.Regex, assignor: sm.Assignor, topics: sm.Topics,
			epoch: sm.Epoch, prevEpoch: sm.PrevEpoch, state: sm.State, assignEpochs: map[tpid]int32{}}
		if m.regex != "" {
			re, err := compileRegex(m.regex)
			if err != nil {
				return fmt.Errorf("group: saved member %s: regex: %w", m.id, err)
			}
			m.re = re
		}
		var err error
		if m.assigned, err = restoreAssignment(sm.Assigned); err != nil {
			return err
		}
		if m.revoking, err = restoreAssignment(sm.Revoking); err != nil {
			return err
		}
		if m.target, err = restoreAssignment(sm.Target); err != nil {
			return err
		}
		for _, e := range sm.AssignEpochs {
			id, err := parseTopicID(e.Topic)
			if err != nil {
				return err
			}
			m.assignEpochs[tpid{id, e.Partition}] = e.Epoch
		}
		claim := func(t [16]byte, p int32) { cons.owners[tpid{t, p}] = m.id }
		m.assigned.each(claim)
		m.revoking.each(claim)
		for _, t := range m.topics {
			if ti, ok := topics.ByName(t); ok {
				cons.learn(ti)
			}
		}
		if c := sm.Classic; c != nil {
			m.classic = &classicMember{session: time.Duration(c.SessionMs) * time.Millisecond, protocols: restoreProtocols(c.Protocols)}
			if len(m.classic.protocols) == 0 {
				return fmt.Errorf("group: saved classic member %s has no protocol", m.id)
			}
		}
		m.sessionDeadline = now.Add(g.sessionTimeout(m))
		if m.state == memberUnrevoked && m.classic == nil {
			m.revokeDeadline = now.Add(m.rebalanceTimeout)
		}
		cons.members[m.id] = m
		if m.instanceID != nil {
			static[*m.instanceID] = m.id
		}
	}
	g.kind, g.protocolType = KindConsumer, "consumer"
	g.cons, g.static = cons, static
	g.updateConsumerState(now)
	return nil
}

func (g *Group) restoreShare(now time.Time, s savedMembership) error {
	if s.Share == nil {
		return nil
	}
	m := share.NewMembers(g.cfg.Share)
	if err := m.Restore(now, *s.Share); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	g.kind, g.protocolType, g.share = KindShare, shareProtocolType, m
	g.updateShareState(now)
	return nil
}

func (g *Group) restoreStreams(now time.Time, s savedMembership) error {
	if s.Streams == nil {
		return nil
	}
	m := streams.New(g.cfg.Streams)
	if err := m.Restore(now, *s.Streams); err != nil {
		return fmt.Errorf("group: %w", err)
	}
	if m.Len() == 0 {
		return nil
	}
	g.kind, g.protocolType, g.streams = KindStreams, "streams", m
	g.updateStreamsState(now)
	return nil
}
