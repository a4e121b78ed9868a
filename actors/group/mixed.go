package group

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A consumer group may hold members of both protocols, which is how Kafka 4
// moves a running group from the classic protocol to the consumer protocol
// (KIP-848) and back, one consumer at a time:
//
//   - Upgrade: the first ConsumerGroupHeartbeat to a classic group of the
//     "consumer" protocol type turns it into a consumer group. Each classic
//     member becomes a member of the group at its generation, holding what
//     the last generation assigned it; the new member bumps the group epoch
//     and the server-side assignor takes over.
//   - Members of the classic protocol in a consumer group keep sending
//     JoinGroup, SyncGroup, Heartbeat and LeaveGroup. A JoinGroup reconciles
//     the member one step, as a heartbeat of the consumer protocol does (its
//     owned partitions come from its subscription); SyncGroup hands it its
//     current assignment, encoded as the classic consumer protocol encodes
//     it; Heartbeat answers REBALANCE_IN_PROGRESS while the member has
//     something to catch up on, which sends it back to JoinGroup.
//   - Downgrade: when the last member of the consumer protocol leaves (or
//     is fenced) and members of the classic protocol remain, the group turns
//     classic again at a generation equal to the group epoch, each member
//     holding its target assignment, and rebalances.
//
// group.consumer.migration.policy (MigrationPolicy) allows either way, both
// or neither.

// MigrationPolicy is group.consumer.migration.policy.
type MigrationPolicy string

// The migration policies, named as Kafka names them.
const (
	MigrationBidirectional MigrationPolicy = "bidirectional"
	MigrationUpgrade       MigrationPolicy = "upgrade"
	MigrationDowngrade     MigrationPolicy = "downgrade"
	MigrationDisabled      MigrationPolicy = "disabled"
)

// ParseMigrationPolicy reads a policy's name, in any case.
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	p := MigrationPolicy(strings.ToLower(s))
	switch p {
	case MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled:
		return p, nil
	}
	return "", fmt.Errorf("unknown group migration policy %q (bidirectional, upgrade, downgrade or disabled)", s)
}

func (p MigrationPolicy) upgrades() bool { return p == MigrationBidirectional || p == MigrationUpgrade }
func (p MigrationPolicy) downgrades() bool {
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// classicMember is what a consumer group keeps of a member speaking the
// classic protocol. Such a member has no revocation deadline: it has a join
// deadline (told to rejoin, it must within its rebalance timeout) and a sync
// deadline (answered in JoinGroup, it must sync within it).
type classicMember struct {
	session      time.Duration
	protocols    []kmsg.JoinGroupRequestProtocol
	joinDeadline time.Time
	syncDeadline time.Time
}

// protocol is the protocol the member is answered with: its first.
func (c *classicMember) protocol() kmsg.JoinGroupRequestProtocol { return c.protocols[0] }

func due(now, deadline time.Time) bool { return !deadline.IsZero() && !now.Before(deadline) }

// upgrade turns this classic group into a consumer group for a
// ConsumerGroupHeartbeat joining it (Kafka's convertToConsumerGroup). It
// answers the error to send instead when the group may not or cannot
// change: then it is unchanged.
func (g *Group) upgrade(now time.Time, topics Topics) *kmsg.ConsumerGroupHeartbeatResponse {
	switch {
	case !g.cfg.MigrationPolicy.upgrades(), g.protocolType != "consumer",
		g.cfg.ConsumerMaxSize > 0 && len(g.members) > g.cfg.ConsumerMaxSize:
		return cgError(kerr.GroupIDNotFound.Code, "Group "+g.ID+" is not a consumer group.")
	case g.cfg.ConsumerMaxSize > 0 && len(g.members) >= g.cfg.ConsumerMaxSize:
		return g.consumerGroupFull()
	}
	protocol := g.protocol
	if protocol == "" {
		protocol = g.selectProtocol() // the first rebalance has not completed
	}
	gen := g.generation
	cons := newConsumerState()
	cons.groupEpoch, cons.assignEpoch = gen, gen
	static := map[string]string{}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		var meta kmsg.ConsumerMemberMetadata
		var assignment kmsg.ConsumerMemberAssignment
		if err := meta.ReadFrom(m.metadataFor(protocol)); err != nil || (len(m.assignment) > 0 && assignment.ReadFrom(m.assignment) != nil) {
			return cgError(kerr.GroupIDNotFound.Code, "Cannot upgrade the classic group "+g.ID+
				" to consumer group because the embedded consumer protocol is malformed.")
		}
		assigned := Assignment{}
		for _, t := range assignment.Topics {
			ti, ok := topics.ByName(t.Topic)
			if !ok {
				continue
			}
			cons.learn(ti)
			for _, p := range t.Partitions {
				if p >= 0 && p < ti.Partitions {
					assigned.add(ti.ID, p)
				}
			}
		}
		cm := &cmember{id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeout: m.rebalance, names: subscription(meta), epoch: gen, prevEpoch: gen, state: memberStable,
			assigned: assigned, revoking: Assignment{}, target: assigned.clone(), assignEpochs: map[tpid]int32{},
			sessionDeadline: now.Add(m.session),
			classic:         &classicMember{session: m.session, protocols: m.protocols}}
		if meta.Rack != nil && *meta.Rack != "" {
			cm.rackID = meta.Rack
		}
		assigned.each(func(t [16]byte, p int32) {
			cons.owners[tpid{t, p}] = id
			cm.assignEpochs[tpid{t, p}] = gen
		})
		cons.members[id] = cm
		if cm.instanceID != nil {
			static[*cm.instanceID] = id
		}
	}
	// Members parked in a rebalance rejoin the group it now is.
	g.Abandon(kerr.RebalanceInProgress.Code)
	g.clearClassic()
	g.kind, g.protocolType = KindConsumer, "consumer"
	g.cons, g.static = cons, static
	g.resolveSubscriptions(topics)
	g.membersVersion++
	g.updateConsumerState(now)
	return nil
}

// subscription is a classic member's subscribed topics, sorted.
func subscription(meta kmsg.ConsumerMemberMetadata) []string { return sortedNames(meta.Topics) }

// mayDowngrade reports whether the group, without member leaving, may turn
// classic (Kafka's validateOnlineDowngrade*): members remain, every one of
// them speaks the classic protocol, the policy allows it and they fit.
func (g *Group) mayDowngrade(leaving string) bool {
	n := 0
	for id, m := range g.cons.members {
		if id == leaving {
			continue
		}
		if m.classic == nil {
			return false
		}
		n++
	}
	return n > 0 && g.cfg.MigrationPolicy.downgrades() && (g.cfg.ClassicMaxSize <= 0 || n <= g.cfg.ClassicMaxSize)
}

// downgrade turns this consumer group, without member leaving, into a
// classic group (Kafka's convertToClassicGroup): Stable at a generation equal
// to the group epoch, each member holding its target assignment. After a
// member left it then rebalances; after a static member was replaced it
// stays Stable.
func (g *Group) downgrade(now time.Time, leaving string, rebalance bool) {
	old := g.cons
	g.clearClassic()
	g.kind, g.protocolType = KindClassic, "consumer"
	g.cons = newConsumerState()
	g.static = map[string]string{}
	g.generation = old.groupEpoch
	for _, id := range sortedKeys(old.members) {
		cm := old.members[id]
		if id == leaving {
			continue
		}
		g.admit(&member{id: id, instanceID: cm.instanceID, clientID: cm.clientID, clientHost: cm.clientHost,
			session: cm.classic.session, rebalance: cm.rebalanceTimeout, protocols: cm.classic.protocols,
			deadline: now.Add(cm.classic.session)})
	}
	g.protocol = g.selectProtocol()
	for id, m := range g.members {
		m.assignment = encodeAssignment(old.members[id].target, old.names, m.metadataFor(g.protocol))
	}
	g.subscribed = g.subscribedTopics()
	g.membersVersion++
	g.setState(now, Stable)
	if rebalance {
		saved := g.saveClassic()
		g.downgraded = &saved // until the rebalance completes
		g.prepareRebalance(now)
	}
}

// encodeAssignment is a ConsumerMemberAssignment of a's partitions, in the
// version of the member's subscription metadata (at most 3, the highest the
// classic consumer protocol has). Partitions of topics the group has no
// name for (deleted) are left out.
func encodeAssignment(a Assignment, names map[[16]byte]string, metadata []byte) []byte {
	var version int16
	if len(metadata) >= 2 {
		version = min(max(int16(binary.BigEndian.Uint16(metadata)), 0), 3)
	}
	out := kmsg.ConsumerMemberAssignment{Version: version}
	for t, ps := range a {
		if name, ok := names[t]; ok {
			out.Topics = append(out.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: name, Partitions: slices.Clone(ps)})
		}
	}
	sort.Slice(out.Topics, func(i, j int) bool { return out.Topics[i].Topic < out.Topics[j].Topic })
	return out.AppendTo(nil)
}

// supportsClassic reports whether a classic member (joining) may join with
// these protocols: the consumer protocol type, and one protocol every other
// classic member supports.
func (g *Group) supportsClassic(joining, protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType != "consumer" || len(protocols) == 0 {
		return false
	}
	others, supported := 0, map[string]int{}
	for id, m := range g.cons.members {
		if m.classic == nil || id == joining {
			continue
		}
		others++
		for _, p := range m.classic.protocols {
			supported[p.Name]++
		}
	}
	for _, p := range protocols {
		if supported[p.Name] == others {
			return true
		}
	}
	return false
}

// joinConsumerGroup is a JoinGroup to a consumer group with members (Kafka's
// classicGroupJoinToConsumerGroup): the member joins, or rejoins, and is
// reconciled one step; the answer names no leader, so the member syncs
// without assigning.
func (g *Group) joinConsumerGroup(now time.Time, c Client, req *kmsg.JoinGroupRequest, session, rebalance time.Duration, topics Topics, reply Reply) {
	id := req.MemberID
	if id == "" {
		id = g.cfg.NewID()
	}
	var replaced *cmember // the member a static member's join takes over
	if req.InstanceID != nil {
		replaced = g.cons.members[g.static[*req.InstanceID]]
	}
	m := g.cons.members[id]
	if m == nil && replaced == nil && g.cfg.ConsumerMaxSize > 0 && len(g.cons.members) >= g.cfg.ConsumerMaxSize {
		reply(joinError(req, kerr.GroupMaxSizeReached.Code))
		return
	}
	if !g.supportsClassic(id, req.ProtocolType, req.Protocols) {
		reply(joinError(req, kerr.InconsistentGroupProtocol.Code))
		return
	}
	if req.MemberID == "" && req.InstanceID == nil && req.Version >= 4 {
		// KIP-394: the member comes back with its id.
		r := joinError(req, kerr.MemberIDRequired.Code)
		r.MemberID = id
		reply(r)
		return
	}
	var meta kmsg.ConsumerMemberMetadata
	if err := meta.ReadFrom(req.Protocols[0].Metadata); err != nil {
		reply(joinError(req, kerr.InconsistentGroupProtocol.Code))
		return
	}

	isNew, replacedConsumer := false, false
	switch {
	case replaced != nil:
		// A static member's join takes over its instance's member and
		// assignment, at epoch 0 (as Kafka replaces it, left or not).
		nm := *replaced
		nm.id, nm.epoch, nm.prevEpoch = id, 0, 0
		replacedConsumer = replaced.classic == nil
		delete(g.cons.members, replaced.id)
		g.moveOwnership(replaced.id, id)
		m = &nm
		g.cons.members[id] = m
	case m == nil:
		m = &cmember{id: id, assigned: Assignment{}, revoking: Assignment{}, target: Assignment{}, assignEpochs: map[tpid]int32{}}
		isNew = true
		g.cons.members[id] = m
	}
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
		g.static[*req.InstanceID] = id
	}
	names := subscription(meta)
	bump := isNew || !slices.Equal(names, m.names)
	m.names = names
	if meta.Rack != nil && *meta.Rack != "" {
		m.rackID = meta.Rack
	}
	m.rebalanceTimeout = rebalance
	m.clientID, m.clientHost, m.principal = c.ID, c.Host, c.Principal
	m.classic = &classicMember{session: session, protocols: req.Protocols}
	g.membersVersion++

	g.retarget(topics, bump)
	g.reconcile(now, m, g.ownedPartitions(meta, topics))
	m.revokeDeadline = time.Time{}
	m.sessionDeadline = now.Add(session)
	m.classic.syncDeadline = now.Add(rebalance)

	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID, r.Generation = m.id, m.epoch
	r.ProtocolType, r.Protocol = strp("consumer"), strp(req.Protocols[0].Name)
	if replacedConsumer && g.mayDowngrade("") {
		// The last member of the consumer protocol was replaced by this
		// one: the group turns classic, with no rebalance.
		g.downgrade(now, "", false)
		r.Generation = g.generation
		reply(r)
		return
	}
	g.updateConsumerState(now)
	reply(r)
}

// ownedPartitions is what a classic member's subscription says it owns, as
// a ConsumerGroupHeartbeat would report it (never nil: a classic member
// reports what it owns on every join; eager members own nothing then).
func (g *Group) ownedPartitions(meta kmsg.ConsumerMemberMetadata, topics Topics) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, o := range meta.OwnedPartitions {
		ti, ok := topics.ByName(o.Topic)
		if !ok {
			continue
		}
		g.cons.learn(ti)
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID, t.Partitions = ti.ID, slices.Clone(o.Partitions)
		out = append(out, t)
	}
	return out
}

// classicMemberOf finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup to a consumer group speaks for (Kafka's
// validateConsumerGroupMember).
func (g *Group) classicMemberOf(memberID string, instanceID *string) (*cmember, int16) {
	var m *cmember
	if instanceID == nil {
		m = g.cons.members[memberID]
	} else {
		m = g.cons.members[g.static[*instanceID]]
		if m != nil && m.id != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	if m == nil || m.classic == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// askRejoin tells a classic member to rejoin: it must within its rebalance
// timeout, or it is fenced.
func (g *Group) askRejoin(now time.Time, m *cmember) {
	if m.classic.joinDeadline.IsZero() {
		m.classic.joinDeadline = now.Add(m.rebalanceTimeout)
	}
}

// syncConsumerGroup is a SyncGroup to a consumer group: the member's
// current assignment.
func (g *Group) syncConsumerGroup(now time.Time, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	m, code := g.classicMemberOf(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
		return syncError(code)
	case req.Generation != m.epoch:
		return syncError(kerr.IllegalGeneration.Code)
	case req.ProtocolType != nil && *req.ProtocolType != "consumer",
		req.Protocol != nil && *req.Protocol != m.classic.protocol().Name:
		return syncError(kerr.InconsistentGroupProtocol.Code)
	case g.cons.groupEpoch > m.epoch && m.state != memberUnrevoked:
		// A new rebalance started since the join; a member revoking
		// rejoins by itself once it has.
		g.askRejoin(now, m)
		return syncError(kerr.RebalanceInProgress.Code)
	}
	m.classic.syncDeadline = time.Time{}
	m.sessionDeadline = now.Add(m.classic.session)
	r := kmsg.NewPtrSyncGroupResponse()
	r.ProtocolType, r.Protocol = req.ProtocolType, req.Protocol
	r.MemberAssignment = encodeAssignment(m.assigned, g.cons.names, m.classic.protocol().Metadata)
	return r
}

// heartbeatConsumerGroup is a Heartbeat to a consumer group: the member
// rejoins while the group epoch is ahead of its own, it has partitions to
// revoke, or partitions it waited for were released.
func (g *Group) heartbeatConsumerGroup(now time.Time, req *kmsg.HeartbeatRequest) int16 {
	m, code := g.classicMemberOf(req.MemberID, req.InstanceID)
	switch {
	case code != 0:
		return code
	case req.Generation != m.epoch:
		return kerr.IllegalGeneration.Code
	}
	m.sessionDeadline = now.Add(m.classic.session)
	if m.epoch < g.cons.groupEpoch || m.state == memberUnrevoked || (m.state == memberUnreleased && !g.waitingOnUnreleased(m)) {
		g.askRejoin(now, m)
		return kerr.RebalanceInProgress.Code
	}
	return 0
}

// waitingOnUnreleased reports whether a partition of m's target is still
// held by another member.
func (g *Group) waitingOnUnreleased(m *cmember) bool {
	waiting := false
	m.target.each(func(t [16]byte, p int32) {
		if o, ok := g.cons.owners[tpid{t, p}]; ok && o != m.id {
			waiting = true
		}
	})
	return waiting
}

// leaveConsumerGroup is a LeaveGroup to a consumer group: members of
// either protocol leave, by member id, or by instance id alone (an
// administrative removal, as kadm's and the Java admin's
// removeMembersFromConsumerGroup and the Kafka Streams resetter's --force
// send); a consumer-protocol member removed so learns it at its next
// heartbeat (UNKNOWN_MEMBER_ID) and joins again. The group epoch moves
// once for all of them. Each answer names the member as the request did,
// as Kafka's does (KAFKA-18188).
func (g *Group) leaveConsumerGroup(now time.Time, leaving []kmsg.LeaveGroupRequestMember) []kmsg.LeaveGroupResponseMember {
	var out []kmsg.LeaveGroupResponseMember
	left := false
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		m, code := g.leavingMember(lm)
		if rm.ErrorCode = code; m != nil {
			g.removeConsumerMember(m)
			left = true
		}
		out = append(out, rm)
	}
	if left {
		g.bumpAfterLeave(now)
	}
	return out
}

// leavingMember finds the consumer group's member a LeaveGroup names: by
// member id, or by instance id, whose member id, when given, must be the
// member's (FENCED_INSTANCE_ID otherwise).
func (g *Group) leavingMember(lm kmsg.LeaveGroupRequestMember) (*cmember, int16) {
	if lm.InstanceID == nil {
		if m := g.cons.members[lm.MemberID]; m != nil {
			return m, 0
		}
		return nil, kerr.UnknownMemberID.Code
	}
	m := g.cons.members[g.static[*lm.InstanceID]]
	switch {
	case m == nil:
		return nil, kerr.UnknownMemberID.Code
	case lm.MemberID != "" && m.id != lm.MemberID:
		return nil, kerr.FencedInstanceID.Code
	}
	return m, 0
}

// sessionTimeout is how long member m may stay silent.
func (g *Group) sessionTimeout(m *cmember) time.Duration {
	if m.classic != nil {
		return m.classic.session
	}
	return g.cfg.ConsumerSessionTimeout
}
