package streams

import (
	"time"
)

// endpoint is a member's interactive-queries endpoint.
type endpoint struct {
	Host string
	Port uint16
}

// member is one streams group member.
type member struct {
	id               string
	epoch, prevEpoch int32
	state            memberState
	rackID           *string
	clientID, host   string
	rebalanceTimeout time.Duration
	topologyEpoch    int32
	process          string
	endpoint         *endpoint
	tags             map[string]string

	// assigned is what the member holds; revoking what it must give up.
	assigned, revoking tasks

	session time.Time // the session's deadline
	revoke  time.Time // the deadline to revoke by, while unrevoked
}

func (m *member) setEpoch(e int32) { m.prevEpoch, m.epoch = m.epoch, e }

// memberSnapshot is the part of a member a reconciliation may change.
type memberSnapshot struct {
	epoch, prevEpoch   int32
	state              memberState
	assigned, revoking tasks
}

func (m *member) snapshot() memberSnapshot {
	return memberSnapshot{m.epoch, m.prevEpoch, m.state, m.assigned, m.revoking}
}

func (s memberSnapshot) same(m *member) bool {
	return s.epoch == m.epoch && s.prevEpoch == m.prevEpoch && s.state == m.state &&
		s.assigned.equal(m.assigned) && s.revoking.equal(m.revoking)
}

func cloneStr(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

func sameStr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func sameEndpoint(a, b *endpoint) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
