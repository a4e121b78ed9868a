package streams

import (
	"fmt"
	"maps"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// hbError is a heartbeat refused with an error code and message.
type hbError struct {
	code int16
	msg  string
}

func errf(e *kerr.Error, format string, args ...any) *hbError {
	return &hbError{e.Code, fmt.Sprintf(format, args...)}
}

func errorResponse(req *kmsg.StreamsGroupHeartbeatRequest, e *hbError) *kmsg.StreamsGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.ErrorCode = e.code
	msg := e.msg
	resp.ErrorMessage = &msg
	return resp
}

// validateRequest checks the request alone, in the order Kafka's group
// coordinator service does before the request reaches the group.
func validateRequest(req *kmsg.StreamsGroupHeartbeatRequest) *hbError {
	joining := req.MemberEpoch == 0
	switch {
	case req.InstanceID != nil:
		return errf(kerr.InvalidRequest, "Static membership is not yet supported.")
	case req.TaskOffsets != nil:
		return errf(kerr.InvalidRequest, "TaskOffsets are not supported yet.")
	case req.TaskEndOffsets != nil:
		return errf(kerr.InvalidRequest, "TaskEndOffsets are not supported yet.")
	case len(req.WarmupTasks) > 0:
		return errf(kerr.InvalidRequest, "WarmupTasks are not supported yet.")
	}
	if req.Topology != nil {
		for _, s := range req.Topology.Subtopologies {
			if len(s.SourceTopicRegex) > 0 {
				return errf(kerr.InvalidRequest, "Regular expressions for source topics are not supported yet.")
			}
		}
	}
	// The client names its member, on its first join too.
	if req.MemberID == "" {
		return errf(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	if req.Group == "" {
		return errf(kerr.InvalidRequest, "GroupId can't be empty.")
	}
	if req.RackID != nil && *req.RackID == "" {
		return errf(kerr.InvalidRequest, "RackId can't be empty.")
	}
	switch {
	case joining:
		if req.RebalanceTimeoutMillis == -1 {
			return errf(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		}
		if len(req.ActiveTasks) > 0 {
			return errf(kerr.InvalidRequest, "ActiveTasks must be empty when (re-)joining.")
		}
		if len(req.StandbyTasks) > 0 {
			return errf(kerr.InvalidRequest, "StandbyTasks must be empty when (re-)joining.")
		}
		if req.Topology == nil {
			return errf(kerr.InvalidRequest, "Topology must be non-null when (re-)joining.")
		}
		for _, s := range req.Topology.Subtopologies {
			for _, t := range s.StateChangelogTopics {
				if t.NumPartitions != 0 {
					return errf(kerr.StreamsInvalidTopology, "Changelog topic %s must have an undefined partition count, but it is set to %d.", t.Topic, t.NumPartitions)
				}
			}
		}
	case req.MemberEpoch == -2:
		// Only a static member leaves with -2, and none passes above.
		return errf(kerr.InvalidRequest, "InstanceId can't be null.")
	case req.MemberEpoch < -2:
		return errf(kerr.InvalidRequest, "MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	}
	if req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
			return errf(kerr.InvalidRequest, "If one task-type is non-null, all must be non-null.")
		}
	}
	if !joining && req.Topology != nil {
		return errf(kerr.InvalidRequest, "Topology can only be provided when (re-)joining.")
	}
	return nil
}

// owned is the tasks the member reports, or nil when it did not say.
func owned(req *kmsg.StreamsGroupHeartbeatRequest) *tasks {
	if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
		return nil
	}
	return &tasks{fromTaskIDs(req.ActiveTasks), fromTaskIDs(req.StandbyTasks), fromTaskIDs(req.WarmupTasks)}
}

func (g *Group) heartbeat(now time.Time, c Client, req *kmsg.StreamsGroupHeartbeatRequest, topics Topics) (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic) {
	if e := validateRequest(req); e != nil {
		return errorResponse(req, e), nil
	}
	if req.MemberEpoch < 0 {
		resp, e := g.leave(req)
		if e != nil {
			return errorResponse(req, e), nil
		}
		return resp, nil
	}
	resp, create, e := g.join(now, c, req, topics)
	if e != nil {
		return errorResponse(req, e), nil
	}
	return resp, create
}

// leave removes a member that sent epoch -1.
func (g *Group) leave(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, *hbError) {
	if !g.exists {
		return nil, errf(kerr.GroupIDNotFound, "Streams group %s not found.", req.Group)
	}
	g.requestShutdown(req.ShutdownApplication, req.MemberID)
	m := g.members[req.MemberID]
	if m == nil {
		return nil, errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, req.Group)
	}
	g.remove(m)
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.MemberID, resp.MemberEpoch = req.MemberID, req.MemberEpoch
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	return resp, nil
}

// requestShutdown keeps the first member that asked the application to
// shut down; every member is told until the group empties.
func (g *Group) requestShutdown(asked bool, id string) {
	if asked && g.shutdownBy == "" {
		g.shutdownBy = id
		g.changed()
	}
}

// remove fences a member: its tasks are free at once and the group epoch
// moves so the others are reassigned.
func (g *Group) remove(m *member) {
	g.owners.add(m, -1)
	delete(g.members, m.id)
	delete(g.target, m.id)
	if len(g.members) == 0 {
		g.shutdownBy = ""
	}
	g.bumpEpoch()
}

// join serves a heartbeat of epoch 0 (a join) or above.
func (g *Group) join(now time.Time, c Client, req *kmsg.StreamsGroupHeartbeatRequest, topics Topics) (*kmsg.StreamsGroupHeartbeatResponse, []InternalTopic, *hbError) {
	joining := req.MemberEpoch == 0
	created := !g.exists
	if !joining && !g.exists {
		return nil, nil, errf(kerr.GroupIDNotFound, "Streams group %s not found.", req.Group)
	}
	if joining && len(g.members) >= g.cfg.MaxSize {
		return nil, nil, errf(kerr.GroupMaxSizeReached, "The streams group has reached its maximum capacity of %d members.", g.cfg.MaxSize)
	}
	id := req.MemberID
	old := g.members[id]
	reported := owned(req)
	if old == nil && !joining {
		return nil, nil, errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, req.Group)
	}
	// Kafka checks a known member's epoch on a join too: a member it
	// still holds at a later epoch is fenced unless it comes back from
	// epoch 0 with none of its tasks.
	if old != nil {
		if e := epochError(old, req.MemberEpoch, reported); e != nil {
			return nil, nil, e
		}
	}

	// Everything that may refuse the heartbeat is decided before the
	// group changes.
	topo := g.topo
	var fresh *topology
	if req.Topology != nil {
		fresh = fromRequest(req.Topology)
		switch {
		case topo == nil:
			if msg := checkTopology(fresh); msg != "" {
				return nil, nil, errf(kerr.StreamsInvalidTopology, "%s", msg)
			}
			topo = fresh
		case topo.Epoch > fresh.Epoch:
			// A stale member keeps the group's topology and is told so.
		case !topo.equal(fresh):
			return nil, nil, errf(kerr.InvalidRequest, "Topology updates are not supported yet.")
		}
	}
	conf := g.conf
	bump := false
	if hash := topo.hash(topics); conf == nil || topo != g.topo || hash != g.hash {
		if hash != g.hash || topo != g.topo {
			bump = true
		}
		conf = topo.configure(topics)
		if conf.invalid != "" {
			return nil, nil, errf(kerr.StreamsInvalidTopology, "%s", conf.invalid)
		}
	}
	validated := int32(-1)
	if conf.ready() {
		validated = topo.Epoch
		if reported != nil {
			for _, s := range []taskSet{reported.Active, reported.Standby, reported.Warmup} {
				if msg := invalidTask(s, conf.tasks); msg != "" {
					return nil, nil, errf(kerr.InvalidRequest, "%s", msg)
				}
			}
		}
	}

	// The heartbeat is accepted: apply it.
	g.exists = true
	if topo != g.topo {
		g.topo = topo
		g.changed()
	}
	g.conf = conf
	if conf.hash != g.hash {
		g.hash = conf.hash
		g.changed()
	}
	if validated != g.validated {
		g.validated = validated
		bump = true
	}
	m := old
	if m == nil {
		m = &member{id: id, assigned: newTasks(), revoking: newTasks(), tags: map[string]string{}}
		g.members[id] = m
		bump = true
	}
	if g.updateMember(m, c, req) {
		bump = true
	}
	if !bump && g.standbys != g.cfg.NumStandbyReplicas {
		bump = true
	}
	isNew := g.epoch == 0
	if bump {
		g.bumpEpoch()
		if g.standbys != g.cfg.NumStandbyReplicas {
			g.standbys = g.cfg.NumStandbyReplicas
			g.changed()
		}
	}
	if isNew && g.cfg.InitialRebalanceDelay > 0 && g.delay.IsZero() {
		g.delay = now.Add(g.cfg.InitialRebalanceDelay)
	}
	target, targetEpoch := g.target[id], g.assignmentEpoch
	switch {
	case g.epoch > g.assignmentEpoch && !g.delay.IsZero() && g.assignmentEpoch == 0:
		// The initial delay: members wait at epoch 1 with no tasks.
		target, targetEpoch = newTasks(), 1
	case g.epoch > g.assignmentEpoch:
		g.computeTarget()
		target, targetEpoch = g.target[id], g.assignmentEpoch
	}
	before := m.assigned.clone()
	if g.reconcile(m, reported, target, targetEpoch) {
		g.changed()
		if m.state == stateUnrevoked {
			m.revoke = now.Add(m.rebalanceTimeout)
		}
	}
	if m.state != stateUnrevoked {
		m.revoke = time.Time{}
	}
	m.session = now.Add(g.cfg.SessionTimeout)
	g.requestShutdown(req.ShutdownApplication, id)
	return g.response(req, m, joining, !before.equal(m.assigned), created, topics), conf.create, nil
}

// epochError is Kafka's member epoch check: a member ahead of the group,
// or behind it other than by the one epoch whose response it may have
// lost, is fenced.
func epochError(m *member, epoch int32, reported *tasks) *hbError {
	if epoch > m.epoch {
		return errf(kerr.FencedMemberEpoch, "The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	}
	if epoch < m.epoch {
		if epoch != m.prevEpoch || reported == nil ||
			len(reported.Active.minus(m.assigned.Active)) > 0 ||
			len(reported.Standby.minus(m.assigned.Standby)) > 0 ||
			len(reported.Warmup.minus(m.assigned.Warmup)) > 0 {
			return errf(kerr.FencedMemberEpoch, "The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
		}
	}
	return nil
}

// invalidTask names a reported task the configured topology lacks.
func invalidTask(s taskSet, counts map[string]int32) string {
	for _, t := range s.sorted() {
		n, ok := counts[t.Sub]
		if !ok {
			return fmt.Sprintf("Subtopology %s does not exist in the topology.", t.Sub)
		}
		if t.Part < 0 || t.Part >= n {
			return fmt.Sprintf("Task %d for subtopology %s is invalid. Number of tasks for this subtopology: %d", t.Part, t.Sub, n)
		}
	}
	return ""
}

// updateMember applies the heartbeat's member metadata (null fields keep
// their value) and reports whether it changed.
func (g *Group) updateMember(m *member, c Client, req *kmsg.StreamsGroupHeartbeatRequest) bool {
	changed := false
	set := func(cond bool, apply func()) {
		if cond {
			apply()
			changed = true
		}
	}
	set(req.RackID != nil && !sameStr(req.RackID, m.rackID), func() { m.rackID = cloneStr(req.RackID) })
	if req.RebalanceTimeoutMillis >= 0 {
		d := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
		set(d != m.rebalanceTimeout, func() { m.rebalanceTimeout = d })
	}
	if req.Topology != nil {
		set(req.Topology.Epoch != m.topologyEpoch, func() { m.topologyEpoch = req.Topology.Epoch })
	}
	set(c.ID != m.clientID, func() { m.clientID = c.ID })
	set(c.Host != m.host, func() { m.host = c.Host })
	set(req.ProcessID != nil && *req.ProcessID != m.process, func() {
		// The copies a member holds are counted by its process.
		g.owners.add(m, -1)
		m.process = *req.ProcessID
		g.owners.add(m, 1)
	})
	if req.ClientTags != nil {
		tags := map[string]string{}
		for _, t := range req.ClientTags {
			tags[t.Key] = t.Value
		}
		set(!maps.Equal(tags, m.tags), func() { m.tags = tags })
	}
	if req.UserEndpoint != nil {
		ep := &endpoint{req.UserEndpoint.Host, req.UserEndpoint.Port}
		set(!sameEndpoint(ep, m.endpoint), func() { m.endpoint = ep })
	}
	if changed {
		g.changed()
	}
	return changed
}

// computeTarget runs the assignor for the group epoch (every member gets
// no tasks while the topology is not ready).
func (g *Group) computeTarget() {
	var counts map[string]int32
	if g.conf.ready() {
		counts = g.conf.tasks
	}
	var as []assignee
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		prev := g.target[id]
		if prev.Active == nil {
			prev = newTasks()
		}
		as = append(as, assignee{id: id, process: m.process, prev: prev})
	}
	stateful := map[string]bool{}
	for _, s := range g.topo.Subs {
		stateful[s.ID] = len(s.Changelogs) > 0
	}
	g.target = assign(as, counts, stateful, g.standbys)
	g.assignmentEpoch = g.epoch
	g.changed()
}

// response fills the heartbeat's answer as Kafka does.
func (g *Group) response(req *kmsg.StreamsGroupHeartbeatRequest, m *member, joining, tasksChanged, created bool, topics Topics) *kmsg.StreamsGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.MemberID = m.id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = int32(g.cfg.HeartbeatInterval.Milliseconds())
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if joining || tasksChanged {
		resp.ActiveTasks = m.assigned.Active.taskIDs()
		resp.StandbyTasks = m.assigned.Standby.taskIDs()
		resp.WarmupTasks = m.assigned.Warmup.taskIDs()
		if m.endpoint != nil {
			g.endpointEpoch++
			g.changed()
		}
	}
	if g.endpointEpoch != req.EndpointInformationEpoch {
		resp.PartitionsByUserEndpoint = g.endpointPartitions(m, topics)
	}
	if !created {
		// Kafka answers 0 to the heartbeat that created the group.
		resp.EndpointInformationEpoch = g.endpointEpoch
	}
	if g.topo != nil && m.topologyEpoch < g.topo.Epoch {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{
			StatusCode:   StatusStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, g.topo.Epoch),
		})
	}
	if g.conf != nil && g.conf.status >= 0 {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: g.conf.status, StatusDetail: g.conf.detail})
	}
	if g.shutdownBy != "" {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{
			StatusCode:   StatusShutdownApplication,
			StatusDetail: fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", g.shutdownBy),
		})
	}
	return resp
}
