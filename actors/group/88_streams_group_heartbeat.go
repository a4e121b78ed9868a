package group

import (
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/streams"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicname"
)

// StreamsGroupHeartbeat (key 88): v0, the KIP-1071 streams group's
// heartbeat, to the group's actor.
func init() {
	serve(groupAPI{key: kmsg.StreamsGroupHeartbeat.Int16(), min: 0, max: 0, handle: (*Coordinator).handleStreamsGroupHeartbeat})
}

// handleStreamsGroupHeartbeat refuses what Kafka's broker refuses before its
// coordinator sees the heartbeat (an empty group id; a topology naming an
// internal topic or an invalid topic name), else dispatches to the group
// actor. The internal topics the group's topology lacks (changelog and
// repartition topics) are then created on the member's behalf, as Kafka's
// broker creates them, without waiting: the member is told
// MISSING_INTERNAL_TOPICS until they exist.
// The heartbeat itself: streams.go, (*Group).StreamsHeartbeat.
func (c *Coordinator) handleStreamsGroupHeartbeat(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	if req.Group == "" {
		return conn.Ready(streamsHeartbeatError(kerr.InvalidRequest.Code, "GroupId can't be empty."))
	}
	if req.Topology != nil {
		var internal, invalid []string
		for _, t := range streams.TopologyTopics(req.Topology) {
			switch {
			case routing.IsInternal(t):
				internal = append(internal, t)
			case topicname.Validate(t) != nil:
				invalid = append(invalid, t)
			}
		}
		switch {
		case len(internal) > 0:
			return conn.Ready(streamsHeartbeatError(kerr.StreamsInvalidTopology.Code,
				"Use of Kafka internal topics "+strings.Join(internal, ",")+" in a Kafka Streams topology is prohibited."))
		case len(invalid) > 0:
			return conn.Ready(streamsHeartbeatError(kerr.StreamsInvalidTopology.Code,
				"Topic names "+strings.Join(invalid, ",")+" are not valid topic names."))
		}
	}
	wait := c.call(r, req.Group, req)
	return func() kmsg.Response {
		rep := wait().(StreamsReply)
		if len(rep.Create) > 0 && rep.Response.ErrorCode == 0 {
			c.createInternalTopics(r, rep.Response, rep.Create)
		}
		return rep.Response
	}
}

// createInternalTopics asks the supervisor to create topics when the
// request's principal may create every one (CREATE on the cluster or on
// each topic); otherwise none is created and the MISSING_INTERNAL_TOPICS
// status says which it may not create, as Kafka answers. A topic being
// created is not asked for again; creations that failed in the last two
// heartbeat intervals are named in the status.
func (c *Coordinator) createInternalTopics(r *conn.Request, resp *kmsg.StreamsGroupHeartbeatResponse, topics []streams.InternalTopic) {
	var refused, names []string
	specs := make([]messages.TopicSpec, 0, len(topics))
	for _, t := range topics {
		names = append(names, t.Name)
		if !r.MayCreateTopic(t.Name) {
			refused = append(refused, t.Name)
			continue
		}
		rf := t.ReplicationFactor
		if rf <= 0 {
			rf = -1
		}
		specs = append(specs, messages.TopicSpec{Name: t.Name, Partitions: t.Partitions, ReplicationFactor: rf, Config: t.Configs})
	}
	window := 2 * time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
	var details []string
	if len(refused) == 0 {
		if specs := c.creations.start(specs, window); len(specs) > 0 {
			r.Server.Supervisor().Send(&messages.CreateTopics{Topics: specs, Reply: c.creations.record})
		}
	} else {
		details = append(details, "Unauthorized to CREATE on topics "+strings.Join(refused, ", ")+".")
	}
	if failed := c.creations.recent(names, window); failed != "" {
		details = append(details, "Creation failed: "+failed+".")
	}
	if len(details) == 0 {
		return
	}
	detail := strings.Join(details, "; ")
	for i := range resp.Status {
		if s := &resp.Status[i]; s.StatusCode == streams.StatusMissingInternalTopics {
			s.StatusDetail += "; " + detail
			return
		}
	}
	s := kmsg.NewStreamsGroupHeartbeatResponseStatus()
	s.StatusCode, s.StatusDetail = streams.StatusMissingInternalTopics, detail
	resp.Status = append(resp.Status, s)
}

// topicCreations follows the internal topics the coordinator asked to
// create: those in flight, which the members' next heartbeats do not ask
// for again, and those whose creation failed and when, so the next
// heartbeats of their group say why they are still missing (Kafka's
// broker keeps both for two heartbeat intervals).
type topicCreations struct {
	clock    clock.Clock
	mu       sync.Mutex
	inflight map[string]time.Time
	failed   map[string]creationFailure
}

type creationFailure struct {
	code int16
	at   time.Time
}

// start keeps of specs those not already being created within window and
// marks them in flight.
func (f *topicCreations) start(specs []messages.TopicSpec, window time.Duration) []messages.TopicSpec {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	if f.inflight == nil {
		f.inflight = map[string]time.Time{}
	}
	var out []messages.TopicSpec
	for _, s := range specs {
		if at, ok := f.inflight[s.Name]; ok && now.Sub(at) <= window {
			continue
		}
		f.inflight[s.Name] = now
		out = append(out, s)
	}
	return out
}

// record ends the creations of a CreateTopics: it keeps the failures and
// forgets the topics created (one that exists already is not a failure).
func (f *topicCreations) record(results []messages.TopicResult) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	for _, res := range results {
		delete(f.inflight, res.Name)
		if res.ErrorCode == 0 || res.ErrorCode == kerr.TopicAlreadyExists.Code {
			delete(f.failed, res.Name)
			continue
		}
		if f.failed == nil {
			f.failed = map[string]creationFailure{}
		}
		f.failed[res.Name] = creationFailure{code: res.ErrorCode, at: now}
	}
}

// recent names those of topics whose creation failed within window, with
// the error, as "t (ERROR), u (ERROR)"; "" for none. Older failures are
// forgotten.
func (f *topicCreations) recent(topics []string, window time.Duration) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clock.Now()
	var out []string
	for _, t := range topics {
		fail, ok := f.failed[t]
		switch {
		case !ok:
		case now.Sub(fail.at) > window:
			delete(f.failed, t)
		default:
			out = append(out, t+" ("+kerr.TypedErrorForCode(fail.code).Message+")")
		}
	}
	return strings.Join(out, ", ")
}
