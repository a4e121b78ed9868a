package group

import (
	"bytes"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// member is a classic-protocol member.
type member struct {
	id         string
	instanceID *string
	clientID   string
	clientHost string
	session    time.Duration
	rebalance  time.Duration
	protocols  []kmsg.JoinGroupRequestProtocol
	assignment []byte

	join Reply // parked JoinGroup
	sync Reply // parked SyncGroup

	// isNew is set from the member's first JoinGroup until its join
	// completes: a new member may be expired while it waits in JoinGroup.
	isNew    bool
	deadline time.Time // session (or new-member join) expiry; zero = none
}

func (m *member) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(m.protocols) != len(protocols) {
		return false
	}
	for i := range protocols {
		if m.protocols[i].Name != protocols[i].Name || !bytes.Equal(m.protocols[i].Metadata, protocols[i].Metadata) {
			return false
		}
	}
	return true
}

func (m *member) metadataFor(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// emptyConsumerAssignment is a serialized empty ConsumerMemberAssignment: sent
// instead of zero bytes to "consumer" members the leader assigned nothing,
// because some clients cannot decode an empty assignment.
var emptyConsumerAssignment = (&kmsg.ConsumerMemberAssignment{}).AppendTo(nil)

func joinError(req *kmsg.JoinGroupRequest, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.ErrorCode = code
	r.MemberID = req.MemberID
	r.Generation = -1
	return r
}

func syncError(code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode = code
	return r
}

// JoinGroup handles a JoinGroup request; reply is called once, possibly
// later (the request parks until the rebalance's join phase completes). A
// consumer group with members takes the member in as a member of the
// classic protocol (mixed.go).
func (g *Group) JoinGroup(now time.Time, c Client, req *kmsg.JoinGroupRequest, topics Topics, reply Reply) {
	g.membersVersion++
	g.Tick(now)
	defer g.Tick(now)
	if g.state == Dead {
		reply(joinError(req, kerr.CoordinatorNotAvailable.Code))
		return
	}
	if g.kind == KindShare || g.streamsMembers() > 0 {
		reply(joinError(req, kerr.InconsistentGroupProtocol.Code))
		return
	}
	if g.kind == KindStreams {
		g.streamsToClassic(now)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < g.cfg.MinSessionTimeout || session > g.cfg.MaxSessionTimeout {
		reply(joinError(req, kerr.InvalidSessionTimeout.Code))
		return
	}
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.RebalanceTimeoutMillis < 0 {
		rebalance = session
	}
	if req.Version < 5 {
		req.InstanceID = nil
	}
	if g.kind == KindConsumer && len(g.cons.members) > 0 {
		g.joinConsumerGroup(now, c, req, session, rebalance, topics, reply)
		return
	}
	if !g.supportsProtocols(req.ProtocolType, req.Protocols) {
		reply(joinError(req, kerr.InconsistentGroupProtocol.Code))
		return
	}
	if g.kind != KindClassic {
		// A new group, or an empty consumer group switching protocol
		// (its offsets stay).
		g.kind = KindClassic
		g.cons = newConsumerState()
		g.static = map[string]string{}
		g.setState(now, Empty)
	}
	if req.MemberID == "" {
		g.joinNewMember(now, c, req, session, rebalance, reply)
		return
	}
	g.joinExistingMember(now, c, req, session, rebalance, reply)
}

// full reports whether a new member is refused: members and pending
// members (KIP-394 ids handed out, each holding a place) reach
// group.max.size.
func (g *Group) full() bool {
	return g.cfg.ClassicMaxSize > 0 && len(g.members)+len(g.pending) >= g.cfg.ClassicMaxSize
}

// roomToRejoin reports whether a member may rejoin a rebalancing group:
// the members that already rejoined, with the pending ones (they join the
// next generation too), are fewer than group.max.size. Below the limit a
// member always has room; over it, the last to rejoin are left out.
func (g *Group) roomToRejoin() bool {
	if g.cfg.ClassicMaxSize <= 0 {
		return true
	}
	n := len(g.pending)
	for _, m := range g.members {
		if m.join != nil {
			n++
		}
	}
	return n < g.cfg.ClassicMaxSize
}

func (g *Group) joinNewMember(now time.Time, c Client, req *kmsg.JoinGroupRequest, session, rebalance time.Duration, reply Reply) {
	prefix := c.ID
	if req.InstanceID != nil {
		prefix = *req.InstanceID
		if old, ok := g.static[*req.InstanceID]; ok {
			if m := g.members[old]; m != nil {
				g.replaceStaticMember(now, m, prefix+"-"+g.cfg.NewID(), c, req, session, rebalance, reply)
				return
			}
		}
	}
	if g.full() {
		reply(joinError(req, kerr.GroupMaxSizeReached.Code))
		return
	}
	id := prefix + "-" + g.cfg.NewID()
	if req.InstanceID == nil && req.Version >= 4 {
		// KIP-394: hand out the member id and expect the member back
		// with it before it takes part in a rebalance.
		g.pending[id] = now.Add(session)
		r := joinError(req, kerr.MemberIDRequired.Code)
		r.MemberID = id
		reply(r)
		return
	}
	g.addMember(now, id, c, req, session, rebalance, reply)
}

func (g *Group) joinExistingMember(now time.Time, c Client, req *kmsg.JoinGroupRequest, session, rebalance time.Duration, reply Reply) {
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		g.addMember(now, req.MemberID, c, req, session, rebalance, reply)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		reply(joinError(req, code))
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		if m.join == nil && !g.roomToRejoin() {
			// A group over group.max.size (restored after the limit
			// was lowered) keeps its first members to rejoin; the
			// rest are removed, as Kafka's coordinator does.
			g.removeAndRebalance(now, m)
			r := joinError(req, kerr.GroupMaxSizeReached.Code)
			r.MemberID = ""
			reply(r)
			return
		}
		g.updateMember(now, m, req, session, rebalance, reply)
	case CompletingRebalance:
		if m.matches(req.Protocols) {
			// The member missed our JoinGroup response: answer again.
			reply(g.joinResponse(m))
			return
		}
		g.updateMember(now, m, req, session, rebalance, reply)
	case Stable:
		if m.id == g.leader || !m.matches(req.Protocols) {
			// A rejoining leader forces a rebalance (it may have seen
			// metadata changes the metadata does not show).
			g.updateMember(now, m, req, session, rebalance, reply)
			return
		}
		m.deadline = now.Add(m.session)
		reply(g.joinResponse(m))
	default:
		reply(joinError(req, kerr.UnknownMemberID.Code))
	}
}

func (g *Group) addMember(now time.Time, id string, c Client, req *kmsg.JoinGroupRequest, session, rebalance time.Duration, reply Reply) {
	m := &member{
		id: id, instanceID: req.InstanceID, clientID: c.ID, clientHost: c.Host,
		session: session, rebalance: rebalance, protocols: req.Protocols,
		join: reply, isNew: true, deadline: now.Add(g.cfg.NewMemberJoinTimeout),
	}
	if g.state == PreparingRebalance && g.initialPhase {
		g.newMemberAdded = true
	}
	if len(g.members) == 0 {
		g.protocolType = req.ProtocolType
	}
	g.admit(m)
	g.maybeRebalance(now)
}

// admit adds m to the members: its protocols counted, its instance id
// mapped, the leader if there is none.
func (g *Group) admit(m *member) {
	g.members[m.id] = m
	for _, p := range m.protocols {
		g.supported[p.Name]++
	}
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if g.leader == "" {
		g.leader = m.id
	}
}

func (g *Group) updateMember(now time.Time, m *member, req *kmsg.JoinGroupRequest, session, rebalance time.Duration, reply Reply) {
	for _, p := range m.protocols {
		g.supported[p.Name]--
	}
	m.protocols = req.Protocols
	for _, p := range m.protocols {
		g.supported[p.Name]++
	}
	m.session, m.rebalance = session, rebalance
	if m.join != nil {
		// A resent JoinGroup replaces the parked one.
		m.join(joinError(req, kerr.RebalanceInProgress.Code))
	}
	m.join = reply
	g.maybeRebalance(now)
}

// replaceStaticMember gives a known group.instance.id a new member id
// (KIP-345): the old member is fenced, its assignment carries over, and a
// stable group whose protocol would not change does not rebalance.
func (g *Group) replaceStaticMember(now time.Time, old *member, newID string, c Client, req *kmsg.JoinGroupRequest, session, rebalance time.Duration, reply Reply) {
	if old.join != nil {
		old.join(joinError(req, kerr.FencedInstanceID.Code))
		old.join = nil
	}
	if old.sync != nil {
		old.sync(syncError(kerr.FencedInstanceID.Code))
		old.sync = nil
	}
	m := *old
	m.id, m.clientID, m.clientHost = newID, c.ID, c.Host
	delete(g.members, old.id)
	g.members[newID] = &m
	g.static[*req.InstanceID] = newID
	if g.leader == old.id {
		g.leader = newID
	}
	if g.pendingSync[old.id] {
		delete(g.pendingSync, old.id)
		g.pendingSync[newID] = true
	}
	for _, p := range m.protocols {
		g.supported[p.Name]--
	}
	m.protocols = req.Protocols
	for _, p := range m.protocols {
		g.supported[p.Name]++
	}
	m.session, m.rebalance = session, rebalance
	m.deadline = now.Add(session)
	switch g.state {
	case Stable:
		if g.selectProtocol() == g.protocol {
			r := g.joinResponse(&m)
			if m.id == g.leader {
				r.SkipAssignment = true // KIP-814: keep the current assignment
			}
			reply(r)
			return
		}
		m.join = reply
		g.prepareRebalance(now)
	case CompletingRebalance:
		// The leader may already hold the old member id: rebalance.
		m.join = reply
		g.prepareRebalance(now)
	default: // PreparingRebalance
		m.join = reply
		g.maybeCompleteJoin(now)
	}
}

// validateMember checks a member id (and instance id) against the group.
func (g *Group) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		known, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID.Code
		}
		if known != memberID {
			return kerr.FencedInstanceID.Code
		}
		return 0
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID.Code
	}
	return 0
}

func (g *Group) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if len(g.members) == 0 {
		return protocolType != "" && len(protocols) > 0
	}
	if protocolType != g.protocolType {
		return false
	}
	for _, p := range protocols {
		if g.supported[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol every member supports that most members
// prefer (Kafka's vote).
func (g *Group) selectProtocol() string {
	votes := map[string]int{}
	for _, id := range sortedKeys(g.members) {
		for _, p := range g.members[id].protocols {
			if g.supported[p.Name] == len(g.members) {
				votes[p.Name]++
				break
			}
		}
	}
	best, n := "", -1
	for _, name := range sortedKeys(votes) {
		if votes[name] > n {
			best, n = name, votes[name]
		}
	}
	return best
}

func (g *Group) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalance)
	}
	return d
}

func (g *Group) allJoined() bool {
	if len(g.pending) > 0 {
		return false
	}
	for _, m := range g.members {
		if m.join == nil {
			return false
		}
	}
	return true
}

func (g *Group) maybeRebalance(now time.Time) {
	switch g.state {
	case Stable, CompletingRebalance, Empty:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.maybeCompleteJoin(now)
	}
}

func (g *Group) prepareRebalance(now time.Time) {
	if g.state == CompletingRebalance {
		g.resetAssignments(now, kerr.RebalanceInProgress.Code)
	}
	g.pendingSync, g.syncDeadline = nil, time.Time{}
	if g.state == Empty {
		// A new group: give other members time to join
		// (group.initial.rebalance.delay.ms, extended while members
		// keep coming, up to the rebalance timeout).
		g.initialPhase, g.newMemberAdded = true, false
		g.initialDelay = g.cfg.initialDelay()
		g.initialRemain = max(g.rebalanceTimeout()-g.initialDelay, 0)
		g.joinDeadline = now.Add(g.initialDelay)
		g.setState(now, PreparingRebalance)
		return
	}
	g.initialPhase = false
	g.setState(now, PreparingRebalance)
	g.joinDeadline = now.Add(g.rebalanceTimeout())
	g.maybeCompleteJoin(now)
}

func (g *Group) maybeCompleteJoin(now time.Time) {
	if g.state == PreparingRebalance && !g.initialPhase && g.allJoined() {
		g.completeJoin(now)
	}
}

// resetAssignments answers parked SyncGroups with code and clears the
// assignments (a rebalance started while members were syncing).
func (g *Group) resetAssignments(now time.Time, code int16) {
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		m.assignment = nil
		if m.sync != nil {
			m.sync(syncError(code))
			m.sync = nil
			m.deadline = now.Add(m.session)
		}
	}
}

// completeJoin ends the join phase: members that did not rejoin leave, the
// generation advances and every joined member gets its JoinGroup response.
func (g *Group) completeJoin(now time.Time) {
	g.joinDeadline, g.initialPhase = time.Time{}, false
	for _, id := range sortedKeys(g.members) {
		if m := g.members[id]; m.join == nil && m.instanceID == nil {
			g.remove(m)
		}
	}
	if !g.electJoinedLeader() && len(g.members) > 0 {
		// Only static members that have not rejoined remain: wait for
		// them (or for their sessions to expire).
		g.joinDeadline = now.Add(g.rebalanceTimeout())
		return
	}
	g.generation++
	if len(g.members) == 0 {
		g.protocol = ""
		g.subscribed = nil
		g.setState(now, Empty)
		return
	}
	g.protocol = g.selectProtocol()
	g.subscribed = g.subscribedTopics()
	g.setState(now, CompletingRebalance)
	g.pendingSync = map[string]bool{}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		if m.join != nil {
			m.join(g.joinResponse(m))
			m.join = nil
		}
		m.deadline = now.Add(m.session)
		m.isNew = false
		g.pendingSync[id] = true
	}
	g.syncDeadline = now.Add(g.rebalanceTimeout())
}

func (g *Group) electJoinedLeader() bool {
	if l := g.members[g.leader]; l != nil && l.join != nil {
		return true
	}
	for _, id := range sortedKeys(g.members) {
		if g.members[id].join != nil {
			g.leader = id
			return true
		}
	}
	return false
}

func (g *Group) joinResponse(m *member) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.Generation = g.generation
	r.ProtocolType = strp(g.protocolType)
	r.Protocol = strp(g.protocol)
	r.LeaderID = g.leader
	r.MemberID = m.id
	if m.id == g.leader {
		for _, id := range sortedKeys(g.members) {
			o := g.members[id]
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = o.id, o.instanceID, o.metadataFor(g.protocol)
			r.Members = append(r.Members, jm)
		}
	}
	return r
}

// subscribedTopics reads the topics of members speaking the consumer
// protocol (for offset expiration and OffsetDelete), or nil if unknown.
func (g *Group) subscribedTopics() map[string]bool {
	if g.protocolType != "consumer" {
		return nil
	}
	out := map[string]bool{}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			out[t] = true
		}
	}
	return out
}

// remove drops a member without triggering a rebalance.
func (g *Group) remove(m *member) {
	g.membersVersion++
	for _, p := range m.protocols {
		g.supported[p.Name]--
		if g.supported[p.Name] <= 0 {
			delete(g.supported, p.Name)
		}
	}
	delete(g.members, m.id)
	delete(g.pendingSync, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	if g.leader == m.id {
		g.leader = ""
		if ids := sortedKeys(g.members); len(ids) > 0 {
			g.leader = ids[0]
		}
	}
}

// removeAndRebalance removes a failed or leaving member and moves the group
// on: a rebalance, or completing the join phase without it.
func (g *Group) removeAndRebalance(now time.Time, m *member) {
	if m.join != nil {
		r := kmsg.NewPtrJoinGroupResponse()
		r.ErrorCode, r.Generation = kerr.UnknownMemberID.Code, -1
		m.join(r)
		m.join = nil
	}
	if m.sync != nil {
		m.sync(syncError(kerr.UnknownMemberID.Code))
		m.sync = nil
	}
	g.remove(m)
	switch g.state {
	case Stable, CompletingRebalance:
		g.prepareRebalance(now)
	case PreparingRebalance:
		g.maybeCompleteJoin(now)
	}
}

// SyncGroup handles a SyncGroup request; reply may be called later (members
// wait for the leader's assignment).
func (g *Group) SyncGroup(now time.Time, req *kmsg.SyncGroupRequest, reply Reply) {
	g.membersVersion++
	g.Tick(now)
	defer g.Tick(now)
	if g.state == Dead {
		reply(syncError(kerr.CoordinatorNotAvailable.Code))
		return
	}
	if req.Version < 3 {
		req.InstanceID = nil
	}
	if g.kind == KindConsumer {
		reply(g.syncConsumerGroup(now, req))
		return
	}
	if g.kind != KindClassic {
		reply(syncError(kerr.UnknownMemberID.Code))
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		reply(syncError(code))
		return
	}
	if req.Generation != g.generation {
		reply(syncError(kerr.IllegalGeneration.Code))
		return
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) || (req.Protocol != nil && *req.Protocol != g.protocol) {
		reply(syncError(kerr.InconsistentGroupProtocol.Code))
		return
	}
	m := g.members[req.MemberID]
	switch g.state {
	case PreparingRebalance:
		reply(syncError(kerr.RebalanceInProgress.Code))
	case CompletingRebalance:
		if m.sync != nil {
			m.sync(syncError(kerr.RebalanceInProgress.Code))
		}
		m.sync = reply
		delete(g.pendingSync, m.id)
		if m.id == g.leader {
			g.propagateAssignment(now, req.GroupAssignment)
		}
	case Stable:
		delete(g.pendingSync, m.id)
		m.deadline = now.Add(m.session)
		reply(g.syncResponse(m))
	default:
		reply(syncError(kerr.UnknownMemberID.Code))
	}
}

func (g *Group) syncResponse(m *member) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ProtocolType = strp(g.protocolType)
	r.Protocol = strp(g.protocol)
	r.MemberAssignment = m.assignment
	return r
}

// propagateAssignment installs the leader's assignment, answers every
// parked SyncGroup and stabilizes the group.
func (g *Group) propagateAssignment(now time.Time, assignments []kmsg.SyncGroupRequestGroupAssignment) {
	for _, m := range g.members {
		m.assignment = nil
	}
	for _, a := range assignments {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = a.MemberAssignment
		}
	}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		if len(m.assignment) == 0 && g.protocolType == "consumer" {
			m.assignment = emptyConsumerAssignment
		}
		if m.sync != nil {
			m.sync(g.syncResponse(m))
			m.sync = nil
			m.deadline = now.Add(m.session)
		}
	}
	g.setState(now, Stable)
}

// Heartbeat handles a classic Heartbeat.
func (g *Group) Heartbeat(now time.Time, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	g.Tick(now)
	defer g.Tick(now)
	r := kmsg.NewPtrHeartbeatResponse()
	if req.Version < 3 {
		req.InstanceID = nil
	}
	switch {
	case g.state == Dead:
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
	case g.kind == KindConsumer:
		r.ErrorCode = g.heartbeatConsumerGroup(now, req)
	case g.kind != KindClassic:
		r.ErrorCode = kerr.UnknownMemberID.Code
	default:
		if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
			r.ErrorCode = code
			break
		}
		if req.Generation != g.generation {
			r.ErrorCode = kerr.IllegalGeneration.Code
			break
		}
		m := g.members[req.MemberID]
		switch g.state {
		case PreparingRebalance:
			m.deadline = now.Add(m.session)
			r.ErrorCode = kerr.RebalanceInProgress.Code
		case CompletingRebalance, Stable:
			m.deadline = now.Add(m.session)
		default:
			r.ErrorCode = kerr.UnknownMemberID.Code
		}
	}
	return r
}

// LeaveGroup handles a LeaveGroup (one member before v3, a batch after).
func (g *Group) LeaveGroup(now time.Time, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	g.membersVersion++
	g.Tick(now)
	defer g.Tick(now)
	r := kmsg.NewPtrLeaveGroupResponse()
	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	if g.state == Dead {
		r.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return r
	}
	if g.kind == KindConsumer {
		r.Members = g.leaveConsumerGroup(now, leaving)
	} else {
		for _, lm := range leaving {
			rm := kmsg.NewLeaveGroupResponseMember()
			rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
			rm.ErrorCode = g.leave(now, lm)
			r.Members = append(r.Members, rm)
		}
	}
	if req.Version < 3 {
		r.ErrorCode = r.Members[0].ErrorCode
		r.Members = nil
	}
	return r
}

func (g *Group) leave(now time.Time, lm kmsg.LeaveGroupRequestMember) int16 {
	if g.kind != KindClassic {
		return kerr.UnknownMemberID.Code
	}
	id := lm.MemberID
	if lm.InstanceID != nil {
		known, ok := g.static[*lm.InstanceID]
		switch {
		case !ok:
			return kerr.UnknownMemberID.Code
		case id == "":
			id = known
		case id != known:
			return kerr.FencedInstanceID.Code
		}
	}
	if _, ok := g.pending[id]; ok {
		delete(g.pending, id)
		g.maybeCompleteJoin(now)
		return 0
	}
	m := g.members[id]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	g.removeAndRebalance(now, m)
	return 0
}

func (g *Group) classicTick(now time.Time) {
	for _, id := range sortedKeys(g.pending) {
		if !now.Before(g.pending[id]) {
			delete(g.pending, id)
			g.maybeCompleteJoin(now)
		}
	}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		if m == nil || m.deadline.IsZero() || now.Before(m.deadline) {
			continue
		}
		if !m.isNew && (m.join != nil || m.sync != nil) {
			// Members waiting in a rebalance satisfy the heartbeat; the
			// rebalance reschedules them.
			m.deadline = time.Time{}
			continue
		}
		g.removeAndRebalance(now, m)
	}
	for g.state == PreparingRebalance && !g.joinDeadline.IsZero() && !now.Before(g.joinDeadline) {
		if g.initialPhase && g.newMemberAdded && g.initialRemain > 0 {
			// Members kept joining during the initial delay: wait
			// another delay (bounded by the rebalance timeout).
			g.newMemberAdded = false
			delay := min(g.cfg.initialDelay(), g.initialRemain)
			g.initialRemain = max(g.initialRemain-g.initialDelay, 0)
			g.initialDelay = delay
			g.joinDeadline = g.joinDeadline.Add(delay)
			continue
		}
		g.completeJoin(now)
		break
	}
	if (g.state == CompletingRebalance || g.state == Stable) && !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
		g.syncDeadline = time.Time{}
		if len(g.pendingSync) > 0 {
			for _, id := range sortedKeys(g.pendingSync) {
				if m := g.members[id]; m != nil {
					g.remove(m)
				}
			}
			g.pendingSync = nil
			g.prepareRebalance(now)
		}
	}
}

// validateClassicCommit checks an OffsetCommit (txn: a TxnOffsetCommit)
// against a classic group. As in Kafka, a TxnOffsetCommit without member and
// generation (v0-2, or a producer that sends only the group id) is accepted
// whatever the group's state, and no transactional commit waits out a
// rebalance: the transaction, not the group, decides whether it lands.
func (g *Group) validateClassicCommit(now time.Time, txn bool, generation int32, memberID string, instanceID *string) int16 {
	if g.state == Dead {
		return kerr.CoordinatorNotAvailable.Code
	}
	if generation < 0 && g.state == Empty {
		return 0 // a simple or admin commit to an empty group
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return kerr.IllegalGeneration.Code
		}
	} else if !txn && g.state != Empty {
		return kerr.UnknownMemberID.Code
	}
	if !txn && g.state == CompletingRebalance {
		return kerr.RebalanceInProgress.Code
	}
	if m := g.members[memberID]; m != nil {
		m.deadline = now.Add(m.session) // a commit is as good as a heartbeat
	}
	return 0
}

// Abandon answers every parked JoinGroup and SyncGroup with code: the
// coordinator is going away (the group moved, or the broker stops).
func (g *Group) Abandon(code int16) {
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		if m.join != nil {
			r := kmsg.NewPtrJoinGroupResponse()
			r.ErrorCode, r.Generation, r.MemberID = code, -1, m.id
			m.join(r)
			m.join = nil
		}
		if m.sync != nil {
			m.sync(syncError(code))
			m.sync = nil
		}
	}
}
