package streams

import (
	"fmt"
	"maps"
	"time"
)

// Saved is what the coordinator saves beside the group's offsets, so a
// coordinator move or restart does not rebalance the group. It encodes as
// JSON.
type Saved struct {
	Epoch           int32
	AssignmentEpoch int32
	Topology        *topology `json:",omitempty"`
	// ValidatedTopologyEpoch is the topology epoch last found ready
	// (-1: none); MetadataHash digests the topics it was configured
	// against. Both keep a restored group from bumping its epoch.
	ValidatedTopologyEpoch int32
	MetadataHash           uint64
	// NumStandbyReplicas is the standby count the target was computed
	// with (a different configured count rebalances the group).
	NumStandbyReplicas int
	EndpointEpoch      int32
	ShutdownBy         string        `json:",omitempty"`
	Members            []SavedMember `json:",omitempty"`
}

// SavedMember is one member of a Saved group.
type SavedMember struct {
	ID              string
	Epoch           int32
	PrevEpoch       int32
	State           int8
	RackID          *string `json:",omitempty"`
	ClientID        string
	ClientHost      string
	RebalanceMillis int64
	TopologyEpoch   int32
	ProcessID       string
	Endpoint        *endpoint         `json:",omitempty"`
	Tags            map[string]string `json:",omitempty"`
	Assigned        savedTasks
	Revoking        savedTasks
	Target          savedTasks
}

func (g *Group) save() Saved {
	s := Saved{
		Epoch:                  g.epoch,
		AssignmentEpoch:        g.assignmentEpoch,
		Topology:               g.topo,
		ValidatedTopologyEpoch: g.validated,
		MetadataHash:           g.hash,
		NumStandbyReplicas:     g.standbys,
		EndpointEpoch:          g.endpointEpoch,
		ShutdownBy:             g.shutdownBy,
	}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		sm := SavedMember{
			ID:              m.id,
			Epoch:           m.epoch,
			PrevEpoch:       m.prevEpoch,
			State:           int8(m.state),
			RackID:          cloneStr(m.rackID),
			ClientID:        m.clientID,
			ClientHost:      m.host,
			RebalanceMillis: m.rebalanceTimeout.Milliseconds(),
			TopologyEpoch:   m.topologyEpoch,
			ProcessID:       m.process,
			Endpoint:        m.endpoint,
			Assigned:        m.assigned.save(),
			Revoking:        m.revoking.save(),
		}
		if len(m.tags) > 0 {
			sm.Tags = maps.Clone(m.tags)
		}
		if t, ok := g.target[id]; ok {
			sm.Target = t.save()
		}
		s.Members = append(s.Members, sm)
	}
	return s
}

func (g *Group) restore(now time.Time, s Saved) error {
	if len(g.members) > 0 || g.exists {
		return fmt.Errorf("streams: restore into a group in use")
	}
	if len(s.Members) > 0 && s.Topology == nil {
		return fmt.Errorf("streams: saved group has members but no topology")
	}
	g.epoch, g.assignmentEpoch = s.Epoch, s.AssignmentEpoch
	g.topo = s.Topology
	g.validated, g.hash, g.standbys = s.ValidatedTopologyEpoch, s.MetadataHash, s.NumStandbyReplicas
	g.endpointEpoch, g.shutdownBy = s.EndpointEpoch, s.ShutdownBy
	g.exists = s.Epoch > 0 || s.Topology != nil
	g.conf = nil
	for _, sm := range s.Members {
		if sm.ID == "" || g.members[sm.ID] != nil {
			return fmt.Errorf("streams: saved member id %q empty or repeated", sm.ID)
		}
		m := &member{
			id:               sm.ID,
			epoch:            sm.Epoch,
			prevEpoch:        sm.PrevEpoch,
			state:            memberState(sm.State),
			rackID:           cloneStr(sm.RackID),
			clientID:         sm.ClientID,
			host:             sm.ClientHost,
			rebalanceTimeout: time.Duration(sm.RebalanceMillis) * time.Millisecond,
			topologyEpoch:    sm.TopologyEpoch,
			process:          sm.ProcessID,
			endpoint:         sm.Endpoint,
			tags:             maps.Clone(sm.Tags),
			assigned:         sm.Assigned.load(),
			revoking:         sm.Revoking.load(),
			session:          now.Add(g.cfg.SessionTimeout),
		}
		if m.tags == nil {
			m.tags = map[string]string{}
		}
		if m.state == stateUnrevoked {
			m.revoke = now.Add(m.rebalanceTimeout)
		}
		g.members[m.id] = m
		g.target[m.id] = sm.Target.load()
		g.owners.add(m, 1)
	}
	g.changed()
	return nil
}
