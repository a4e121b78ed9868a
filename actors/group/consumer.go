package group

import (
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Server-side assignors (KIP-848).
const (
	AssignorUniform = "uniform"
	AssignorRange   = "range"
)

// Member epochs with a meaning (KIP-848).
const (
	epochJoin        = 0
	epochLeave       = -1
	epochStaticLeave = -2
)

// tpid names a partition by topic id.
type tpid struct {
	topic     [16]byte
	partition int32
}

// Assignment maps topic ids to sorted partitions.
type Assignment map[[16]byte][]int32

func (a Assignment) clone() Assignment {
	out := make(Assignment, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (a Assignment) has(t [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

func (a Assignment) add(t [16]byte, p int32) {
	ps := a[t]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		a[t] = slices.Insert(ps, i, p)
	}
}

func (a Assignment) count() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a Assignment) equal(b Assignment) bool {
	if a.count() != b.count() {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

func (a Assignment) each(fn func(t [16]byte, p int32)) {
	for t, ps := range a {
		for _, p := range ps {
			fn(t, p)
		}
	}
}

// memberState is a consumer member's reconciliation state.
type memberState uint8

const (
	memberStable memberState = iota
	memberUnrevoked
	memberUnreleased
)

// cmember is a KIP-848 consumer-protocol member.
type cmember struct {
	id               string
	instanceID       *string
	rackID           *string
	clientID         string
	clientHost       string
	principal        string // of the last heartbeat: its regex resolves to what it may describe
	rebalanceTimeout time.Duration
	names            []string // subscribed topic names, sorted
	regex            string
	re               *regexp.Regexp
	assignor         string
	topics           []string // resolved subscription at the last heartbeat

	epoch, prevEpoch int32
	state            memberState
	assigned         Assignment
	revoking         Assignment
	assignEpochs     map[tpid]int32 // KIP-1251: epoch a partition was assigned at
	target           Assignment

	sessionDeadline time.Time
	revokeDeadline  time.Time

	// classic is set while the member speaks the classic protocol
	// (JoinGroup, SyncGroup, Heartbeat) in this consumer group (mixed.go).
	classic *classicMember
}

// savedHead is the group-wide part of a consumer group's saved membership.
type savedHead struct {
	groupEpoch, assignEpoch int32
	topicsSig, assignor     string
}

func (s *consumerState) savedHead() savedHead {
	return savedHead{s.groupEpoch, s.assignEpoch, s.topicsSig, s.assignor}
}

type consumerState struct {
	members     map[string]*cmember
	groupEpoch  int32
	assignEpoch int32
	owners      map[tpid]string // partition -> member holding it (assigned or revoking)
	topicsSig   string          // subscribed topics' metadata at the last target assignment
	assignor    string
	// names are the topics' names the group has seen by id: what a classic
	// member's assignment names them by (mixed.go).
	names map[[16]byte]string
}

func newConsumerState() consumerState {
	return consumerState{members: map[string]*cmember{}, owners: map[tpid]string{}, names: map[[16]byte]string{}}
}

func (s *consumerState) learn(ti TopicInfo) { s.names[ti.ID] = ti.Name }

// consumerGroupFull is the answer to a new member of a group at
// group.consumer.max.size, with Kafka's message.
func (g *Group) consumerGroupFull() *kmsg.ConsumerGroupHeartbeatResponse {
	return cgError(kerr.GroupMaxSizeReached.Code,
		"The consumer group has reached its maximum capacity of "+strconv.Itoa(g.cfg.ConsumerMaxSize)+" members.")
}

func cgError(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.ErrorCode = code
	if msg != "" {
		r.ErrorMessage = &msg
	}
	return r
}

// compileRegex compiles a subscription regex the way Kafka matches it: the
// whole topic name must match.
func compileRegex(s string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + s + ")$")
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat (KIP-848): join
// (epoch 0), heartbeat, leave (-1) or static leave (-2).
func (g *Group) ConsumerHeartbeat(now time.Time, c Client, req *kmsg.ConsumerGroupHeartbeatRequest, topics Topics) *kmsg.ConsumerGroupHeartbeatResponse {
	g.Tick(now)
	defer g.Tick(now)
	if r := g.validateConsumerHeartbeat(req); r != nil {
		return r
	}
	if g.state == Dead {
		return cgError(kerr.CoordinatorNotAvailable.Code, "")
	}
	if req.MemberEpoch == epochLeave || req.MemberEpoch == epochStaticLeave {
		return g.consumerLeave(now, req)
	}
	classicMembers := g.kind == KindClassic && len(g.members) > 0
	if g.kind == KindShare || g.kind == KindStreams || (classicMembers && req.MemberEpoch != epochJoin) {
		return cgError(kerr.GroupIDNotFound.Code, "Group "+g.ID+" is not a consumer group.")
	}
	if classicMembers {
		if r := g.upgrade(now, topics); r != nil {
			return r
		}
	}
	if g.kind != KindConsumer {
		if req.MemberEpoch != epochJoin {
			return cgError(kerr.UnknownMemberID.Code, "Consumer group "+g.ID+" not found.")
		}
		g.kind = KindConsumer
		g.protocolType = "consumer"
		g.clearClassic() // members only told their id (MEMBER_ID_REQUIRED) are dropped
		g.static = map[string]string{}
		g.cons = newConsumerState()
		g.setState(now, Empty)
	}

	m, isNew, replaced, r := g.consumerMember(req)
	if r != nil {
		return r
	}
	if isNew && !replaced && g.cfg.ConsumerMaxSize > 0 && len(g.cons.members) >= g.cfg.ConsumerMaxSize {
		return g.consumerGroupFull()
	}
	// A heartbeat changes the saved membership through the group's epochs
	// and signature, this member, or other members' resolved topics.
	wasGroup, wasMember := g.cons.savedHead(), saveConsumerMember(m)
	defer func() {
		if isNew || replaced || wasGroup != g.cons.savedHead() || !reflect.DeepEqual(wasMember, saveConsumerMember(m)) {
			g.membersVersion++
		}
	}()

	// Update the member from the request; a changed subscription bumps the
	// group epoch.
	bump := g.cons.groupEpoch == 0 || (isNew && !replaced)
	if req.RebalanceTimeoutMillis >= 0 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.RackID != nil {
		m.rackID = req.RackID
	}
	if req.InstanceID != nil {
		m.instanceID = req.InstanceID
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor = *req.ServerAssignor
		bump = true
	}
	if req.SubscribedTopicNames != nil {
		if names := sortedNames(req.SubscribedTopicNames); !slices.Equal(names, m.names) {
			m.names = names
			bump = true
		}
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != m.regex {
		re, err := compileRegex(*req.SubscribedTopicRegex)
		if err != nil {
			return cgError(kerr.InvalidRegularExpression.Code, err.Error())
		}
		m.regex, m.re = *req.SubscribedTopicRegex, re
		bump = true
	}
	m.clientID, m.clientHost, m.principal = c.ID, c.Host, c.Principal
	m.classic = nil // a member heartbeating speaks the consumer protocol
	if isNew {
		g.cons.members[m.id] = m
		if m.instanceID != nil {
			g.static[*m.instanceID] = m.id
		}
	}

	g.retarget(topics, bump)

	before := m.assigned
	g.reconcile(now, m, req.Topics)
	m.sessionDeadline = now.Add(g.cfg.ConsumerSessionTimeout)
	g.updateConsumerState(now)

	r = kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.MemberID = strp(m.id)
	r.MemberEpoch = m.epoch
	r.HeartbeatIntervalMillis = ms(g.cfg.ConsumerHeartbeatInterval)
	full := req.MemberEpoch == epochJoin ||
		(req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !before.equal(m.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, t := range sortedIDs(m.assigned) {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = t, slices.Clone(m.assigned[t])
			a.Topics = append(a.Topics, at)
		}
		r.Assignment = &a
	}
	return r
}

func (g *Group) validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	bad := func(msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		return cgError(kerr.InvalidRequest.Code, msg)
	}
	switch {
	case req.Group == "":
		return bad("GroupId can't be empty.")
	case req.Version >= 1 && req.MemberID == "":
		return bad("MemberId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return bad("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return bad("RackId can't be empty.")
	case req.MemberEpoch < epochStaticLeave:
		return bad("MemberEpoch is invalid.")
	}
	switch req.MemberEpoch {
	case epochJoin:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return bad("RebalanceTimeoutMs must be provided in first request.")
		case req.Topics == nil || len(req.Topics) > 0:
			return bad("TopicPartitions must be empty when (re-)joining.")
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case epochStaticLeave:
		if req.InstanceID == nil {
			return bad("InstanceId can't be null.")
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(g.cfg.Assignors, *req.ServerAssignor) {
		return cgError(kerr.UnsupportedAssignor.Code, "ServerAssignor "+*req.ServerAssignor+" is not supported. Supported assignors: "+
			strings.Join(g.cfg.Assignors, ", ")+".")
	}
	if req.SubscribedTopicRegex != nil {
		if _, err := compileRegex(*req.SubscribedTopicRegex); err != nil {
			return cgError(kerr.InvalidRegularExpression.Code, err.Error())
		}
	}
	return nil
}

// consumerMember finds (or creates) the member a heartbeat speaks for.
func (g *Group) consumerMember(req *kmsg.ConsumerGroupHeartbeatRequest) (m *cmember, isNew, replaced bool, fail *kmsg.ConsumerGroupHeartbeatResponse) {
	newMember := func() *cmember {
		id := req.MemberID
		if id == "" {
			id = g.cfg.NewID()
		}
		return &cmember{id: id, assigned: Assignment{}, revoking: Assignment{}, target: Assignment{}, assignEpochs: map[tpid]int32{}}
	}
	if req.InstanceID == nil {
		m = g.cons.members[req.MemberID]
		if m == nil {
			if req.MemberEpoch != epochJoin {
				return nil, false, false, cgError(kerr.UnknownMemberID.Code, "")
			}
			return newMember(), true, false, nil
		}
		if code := checkMemberEpoch(m, req.MemberEpoch, req.Topics); code != 0 {
			return nil, false, false, cgError(code, "")
		}
		return m, false, false, nil
	}
	old := g.cons.members[g.static[*req.InstanceID]]
	if req.MemberEpoch == epochJoin {
		switch {
		case old == nil:
			return newMember(), true, false, nil
		case old.id == req.MemberID && old.epoch != epochStaticLeave:
			return old, false, false, nil // a rejoin in place
		case old.epoch != epochStaticLeave && old.classic == nil:
			// (A member of the classic protocol is replaced without
			// leaving first, as Kafka replaces it.)
			return nil, false, false, cgError(kerr.UnreleasedInstanceID.Code,
				"Static member "+old.id+" with instance id "+*req.InstanceID+" is still active; it must leave first.")
		}
		// The static member left with epoch -2 and comes back under a
		// new member id: it takes over its old assignment.
		nm := *old
		nm.id = req.MemberID
		if nm.id == "" {
			nm.id = g.cfg.NewID()
		}
		nm.epoch, nm.prevEpoch = 0, 0
		delete(g.cons.members, old.id)
		g.moveOwnership(old.id, nm.id)
		return &nm, true, true, nil
	}
	if old == nil {
		return nil, false, false, cgError(kerr.UnknownMemberID.Code, "")
	}
	if old.id != req.MemberID {
		return nil, false, false, cgError(kerr.FencedInstanceID.Code, "")
	}
	if code := checkMemberEpoch(old, req.MemberEpoch, req.Topics); code != 0 {
		return nil, false, false, cgError(code, "")
	}
	return old, false, false, nil
}

// sortedNames is a subscription's topic names, sorted, each once.
func sortedNames(names []string) []string {
	out := slices.Clone(names)
	sort.Strings(out)
	return slices.Compact(out)
}

// checkMemberEpoch fences a member whose epoch is ahead of ours, or behind
// it unless it is the previous epoch and the member owns only partitions it
// still holds (the response with the new epoch was lost). Epoch 0 from a
// known member is a rejoin and always accepted (KAFKA-19233).
func checkMemberEpoch(m *cmember, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) int16 {
	if epoch == epochJoin || epoch == m.epoch {
		return 0
	}
	if epoch > m.epoch || epoch != m.prevEpoch || owned == nil {
		return kerr.FencedMemberEpoch.Code
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !m.assigned.has(t.TopicID, p) {
				return kerr.FencedMemberEpoch.Code
			}
		}
	}
	return 0
}

func (g *Group) moveOwnership(from, to string) {
	for k, owner := range g.cons.owners {
		if owner == from {
			g.cons.owners[k] = to
		}
	}
}

func (g *Group) consumerLeave(now time.Time, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	g.membersVersion++
	if g.kind != KindConsumer {
		return cgError(kerr.UnknownMemberID.Code, "")
	}
	var m *cmember
	if req.InstanceID == nil {
		m = g.cons.members[req.MemberID]
		if m == nil {
			return cgError(kerr.UnknownMemberID.Code, "")
		}
	} else {
		m = g.cons.members[g.static[*req.InstanceID]]
		if m == nil {
			return cgError(kerr.UnknownMemberID.Code, "")
		}
		if m.id != req.MemberID {
			return cgError(kerr.FencedInstanceID.Code, "")
		}
	}
	r := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	r.MemberID = strp(m.id)
	r.HeartbeatIntervalMillis = ms(g.cfg.ConsumerHeartbeatInterval)
	if req.MemberEpoch == epochStaticLeave {
		// The static member will be back: keep its assignment reserved
		// until it rejoins or its session expires.
		g.releaseOwnership(m, m.revoking)
		m.revoking = Assignment{}
		m.epoch = epochStaticLeave
		m.revokeDeadline = time.Time{}
		r.MemberEpoch = epochStaticLeave
		g.updateConsumerState(now)
		return r
	}
	g.fence(now, m)
	r.MemberEpoch = epochLeave
	return r
}

// fence removes a member (left, session expired, or too slow to revoke)
// and bumps the group epoch; the new target is computed at the next
// heartbeat. When the last member of the consumer protocol goes and members
// of the classic protocol remain, the group may turn classic instead
// (mixed.go).
func (g *Group) fence(now time.Time, m *cmember) {
	if m.classic == nil && g.mayDowngrade(m.id) {
		g.downgrade(now, m.id, true)
		return
	}
	g.removeConsumerMember(m)
	g.bumpAfterLeave(now)
}

// removeConsumerMember drops a member and releases its partitions.
func (g *Group) removeConsumerMember(m *cmember) {
	g.membersVersion++
	g.releaseOwnership(m, m.assigned)
	g.releaseOwnership(m, m.revoking)
	delete(g.cons.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
}

// bumpAfterLeave moves the group epoch on after members left.
func (g *Group) bumpAfterLeave(now time.Time) {
	g.cons.groupEpoch++
	if len(g.cons.members) == 0 {
		g.cons.assignEpoch = g.cons.groupEpoch
	}
	g.updateConsumerState(now)
}

func (g *Group) releaseOwnership(m *cmember, a Assignment) {
	a.each(func(t [16]byte, p int32) {
		k := tpid{t, p}
		if g.cons.owners[k] == m.id {
			delete(g.cons.owners, k)
		}
	})
}

// resolve is the member's subscription against the topics: the names it
// subscribes to that exist, and the topics its regex matches that its
// principal may describe (describe nil: every one). Named topics are not
// filtered: a name the principal may not describe is refused at the
// heartbeat (TOPIC_AUTHORIZATION_FAILED, the connection's authorization).
func (m *cmember) resolve(topics Topics, describe func(principal, host, topic string) bool) []string {
	var out []string
	for _, n := range m.names {
		if _, ok := topics.ByName(n); ok {
			out = append(out, n)
		}
	}
	if m.re != nil {
		for _, n := range topics.Names() {
			if m.re.MatchString(n) && !slices.Contains(m.names, n) && (describe == nil || describe(m.principal, m.clientHost, n)) {
				out = append(out, n)
			}
		}
		sort.Strings(out)
	}
	return out
}

// retarget moves the group epoch on when a member's change asks for it
// (bump) or the subscribed topics' metadata changed, and computes the target
// assignment when it is behind the group epoch.
func (g *Group) retarget(topics Topics, bump bool) {
	if g.resolveSubscriptions(topics) || bump {
		g.cons.groupEpoch++
	}
	if g.cons.groupEpoch > g.cons.assignEpoch {
		g.computeTarget(topics)
	}
}

// resolveSubscriptions resolves every member's subscription against the
// topics and reports whether the subscribed topics' metadata changed
// (created, deleted, partitions added), which bumps the group epoch.
func (g *Group) resolveSubscriptions(topics Topics) bool {
	for _, cm := range g.cons.members {
		if resolved := cm.resolve(topics, g.cfg.DescribeTopic); !slices.Equal(resolved, cm.topics) {
			cm.topics = resolved
			g.membersVersion++
		}
	}
	sig := g.topicsSignature(topics)
	if sig == g.cons.topicsSig {
		return false
	}
	g.cons.topicsSig = sig
	return true
}

// topicsSignature describes the subscribed topics' metadata.
func (g *Group) topicsSignature(topics Topics) string {
	set := map[string]bool{}
	for _, m := range g.cons.members {
		for _, t := range m.topics {
			set[t] = true
		}
	}
	var b strings.Builder
	for _, n := range sortedKeys(set) {
		ti, _ := topics.ByName(n)
		b.WriteString(n)
		b.WriteByte(0)
		b.Write(ti.ID[:])
		b.WriteString(strconv.Itoa(int(ti.Partitions)))
		b.WriteByte(0)
	}
	return b.String()
}

// preferredAssignor is the assignor most members ask for.
func (g *Group) preferredAssignor() string {
	votes := map[string]int{}
	for _, m := range g.cons.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best, n := g.cfg.Assignors[0], 0
	for _, a := range sortedKeys(votes) {
		if votes[a] > n {
			best, n = a, votes[a]
		}
	}
	return best
}

// computeTarget runs the assignor over every member (static members away
// with epoch -2 included: their partitions stay reserved for them).
func (g *Group) computeTarget(topics Topics) {
	g.cons.assignor = g.preferredAssignor()
	ids := sortedKeys(g.cons.members)
	in := make([]AssignMember, 0, len(ids))
	tops := map[string]TopicInfo{}
	for _, id := range ids {
		m := g.cons.members[id]
		am := AssignMember{ID: id, Topics: m.topics, Current: m.target}
		if m.instanceID != nil {
			am.InstanceID = *m.instanceID
		}
		in = append(in, am)
		for _, t := range m.topics {
			if ti, ok := topics.ByName(t); ok {
				tops[t] = ti
				g.cons.learn(ti)
			}
		}
	}
	var out map[string]Assignment
	if g.cons.assignor == AssignorRange {
		out = AssignRange(in, tops)
	} else {
		out = AssignUniform(in, tops)
	}
	for _, id := range ids {
		a := out[id]
		if a == nil {
			a = Assignment{}
		}
		g.cons.members[id].target = a
	}
	g.cons.assignEpoch = g.cons.groupEpoch
}

// reconcile moves a member one step towards its target assignment (Kafka's
// CurrentAssignmentBuilder): partitions leave before new ones arrive, and a
// partition is handed out only once its previous owner has released it.
func (g *Group) reconcile(now time.Time, m *cmember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) {
	if m.epoch == epochStaticLeave {
		return
	}
	switch m.state {
	case memberStable:
		if m.epoch == g.cons.assignEpoch {
			return
		}
	case memberUnrevoked:
		if ownsAny(m.revoking, owned) {
			return
		}
	}
	g.nextAssignment(now, m, owned)
}

// ownsAny reports whether the member still reports any of a's partitions;
// a keepalive heartbeat (owned == nil) reports nothing new, so it still
// owns them.
func ownsAny(a Assignment, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) bool {
	if owned == nil {
		return a.count() > 0
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if a.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

func (g *Group) nextAssignment(now time.Time, m *cmember, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) {
	kept, revoke, assign := Assignment{}, Assignment{}, Assignment{}
	unreleased := false
	m.assigned.each(func(t [16]byte, p int32) {
		if m.target.has(t, p) {
			kept.add(t, p)
		} else {
			revoke.add(t, p)
		}
	})
	m.target.each(func(t [16]byte, p int32) {
		if kept.has(t, p) {
			return
		}
		if o, ok := g.cons.owners[tpid{t, p}]; ok && o != m.id {
			unreleased = true
			return
		}
		assign.add(t, p)
	})

	oldAssigned, oldRevoking := m.assigned, m.revoking
	switch {
	case revoke.count() > 0 && ownsAny(revoke, owned):
		// Revoke first; the epoch stays until the member confirms.
		m.state = memberUnrevoked
		m.prevEpoch = m.epoch
		m.assigned, m.revoking = kept, revoke
		m.revokeDeadline = now.Add(m.rebalanceTimeout)
	default:
		m.state = memberStable
		if unreleased {
			m.state = memberUnreleased
		}
		m.prevEpoch, m.epoch = m.epoch, g.cons.assignEpoch
		assign.each(func(t [16]byte, p int32) { kept.add(t, p) })
		m.assigned, m.revoking = kept, Assignment{}
		m.revokeDeadline = time.Time{}
	}

	g.releaseOwnership(m, oldAssigned)
	g.releaseOwnership(m, oldRevoking)
	epochs := map[tpid]int32{}
	claim := func(t [16]byte, p int32) {
		k := tpid{t, p}
		g.cons.owners[k] = m.id
		if e, ok := m.assignEpochs[k]; ok {
			epochs[k] = e
		} else {
			epochs[k] = m.epoch
		}
	}
	m.assigned.each(claim)
	m.revoking.each(claim)
	m.assignEpochs = epochs
}

func (g *Group) updateConsumerState(now time.Time) {
	if g.kind != KindConsumer {
		return
	}
	switch {
	case len(g.cons.members) == 0:
		g.setState(now, Empty)
	case g.cons.groupEpoch > g.cons.assignEpoch:
		g.setState(now, Assigning)
	default:
		for _, m := range g.cons.members {
			if m.state != memberStable || m.epoch != g.cons.assignEpoch {
				g.setState(now, Reconciling)
				return
			}
		}
		g.setState(now, Stable)
	}
}

func (g *Group) consumerTick(now time.Time) {
	for _, id := range sortedKeys(g.cons.members) {
		m := g.cons.members[id]
		if m == nil {
			continue
		}
		if !m.sessionDeadline.IsZero() && !now.Before(m.sessionDeadline) {
			g.fence(now, m)
			continue
		}
		if c := m.classic; c != nil && (due(now, c.joinDeadline) || due(now, c.syncDeadline)) {
			g.fence(now, m) // asked to rejoin, or answered, and silent since
			continue
		}
		if m.state == memberUnrevoked && !m.revokeDeadline.IsZero() && !now.Before(m.revokeDeadline) {
			g.fence(now, m)
		}
	}
}

// validateConsumerCommit checks an OffsetCommit against a consumer group.
// It returns a group-wide code, or a per-partition check (KIP-1251: a
// member may commit with an older epoch for partitions it has held since).
func (g *Group) validateConsumerCommit(now time.Time, version int16, txn bool, epoch int32, memberID string) (int16, func(t [16]byte, p int32) int16) {
	active := 0
	for _, m := range g.cons.members {
		if m.epoch != epochStaticLeave {
			active++
		}
	}
	if epoch < 0 && active == 0 {
		return 0, nil // an admin commit to an empty group
	}
	m := g.cons.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code, nil
	}
	if m.classic != nil {
		// A classic member commits with its generation, its member epoch.
		if epoch != m.epoch {
			return kerr.IllegalGeneration.Code, nil
		}
		m.sessionDeadline = now.Add(m.classic.session)
		return 0, nil
	}
	if version < 9 && !txn {
		return kerr.UnsupportedVersion.Code, nil
	}
	if epoch > m.epoch {
		return kerr.StaleMemberEpoch.Code, nil
	}
	m.sessionDeadline = now.Add(g.cfg.ConsumerSessionTimeout)
	if epoch == m.epoch {
		return 0, nil
	}
	return 0, func(t [16]byte, p int32) int16 {
		if e, ok := m.assignEpochs[tpid{t, p}]; ok && e <= epoch {
			return 0
		}
		return kerr.StaleMemberEpoch.Code
	}
}

// validateConsumerFetch checks a member's OffsetFetch (admin fetches carry
// no member id and a negative epoch).
func (g *Group) validateConsumerFetch(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	if memberID == nil {
		return kerr.UnknownMemberID.Code
	}
	m := g.cons.members[*memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	switch {
	case epoch == m.epoch:
		return 0
	case m.classic != nil:
		return kerr.IllegalGeneration.Code
	default:
		// Any other epoch, older or newer, as Kafka's coordinator answers:
		// consumers retry it once their heartbeat has the member's epoch.
		return kerr.StaleMemberEpoch.Code
	}
}

// consumerSubscribed is every topic a consumer-group member subscribes to.
func (g *Group) consumerSubscribed() map[string]bool {
	out := map[string]bool{}
	for _, m := range g.cons.members {
		for _, t := range m.names {
			out[t] = true
		}
		for _, t := range m.topics {
			out[t] = true
		}
	}
	return out
}

func sortedIDs(a Assignment) [][16]byte {
	out := make([][16]byte, 0, len(a))
	for t := range a {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i][:]) < string(out[j][:]) })
	return out
}
