package share

import (
	"encoding/hex"
	"fmt"
	"slices"
	"time"
)

// Saved is a share group's membership as the group coordinator saves it
// beside the group's offsets (the group package's membership file), so a
// coordinator move keeps the members, their epochs and assignments.
// Session deadlines are not saved: restored sessions start afresh.
type Saved struct {
	Epoch   int32         `json:"epoch"`
	Sig     []byte        `json:"sig,omitempty"` // binary: topic ids
	Members []SavedMember `json:"members"`
}

// SavedMember is one member of a Saved membership.
type SavedMember struct {
	ID         string       `json:"id"`
	ClientID   string       `json:"clientId"`
	ClientHost string       `json:"clientHost"`
	Rack       *string      `json:"rack,omitempty"`
	Epoch      int32        `json:"epoch"`
	PrevEpoch  int32        `json:"prevEpoch"`
	Topics     []string     `json:"topics,omitempty"`
	Assignment []SavedTopic `json:"assignment,omitempty"`
}

// SavedTopic is one topic's assigned partitions, by topic id (hex).
type SavedTopic struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// Save returns the membership to save, members sorted by id and topics
// by id (the same membership saves the same bytes).
func (g *Members) Save() Saved {
	s := Saved{Epoch: g.epoch, Sig: []byte(g.sig)}
	for _, m := range g.List() {
		sm := SavedMember{ID: m.ID, ClientID: m.ClientID, ClientHost: m.ClientHost, Rack: m.Rack,
			Epoch: m.Epoch, PrevEpoch: m.prevEpoch, Topics: slices.Clone(m.Topics)}
		ids := make([][16]byte, 0, len(m.Assignment))
		for id := range m.Assignment {
			ids = append(ids, id)
		}
		slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
		for _, id := range ids {
			sm.Assignment = append(sm.Assignment, SavedTopic{Topic: hex.EncodeToString(id[:]), Partitions: slices.Clone(m.Assignment[id])})
		}
		s.Members = append(s.Members, sm)
	}
	return s
}

// Restore installs a saved membership into an empty group; every member's
// session starts at now. A topic id that does not decode is an error and
// changes nothing.
func (g *Members) Restore(now time.Time, s Saved) error {
	members := map[string]*Member{}
	for _, sm := range s.Members {
		m := &Member{ID: sm.ID, ClientID: sm.ClientID, ClientHost: sm.ClientHost, Rack: sm.Rack,
			Epoch: sm.Epoch, prevEpoch: sm.PrevEpoch, Topics: slices.Clone(sm.Topics),
			Assignment: map[[16]byte][]int32{}, expires: now.Add(g.cfg.SessionTimeout)}
		for _, t := range sm.Assignment {
			b, err := hex.DecodeString(t.Topic)
			if err != nil || len(b) != 16 {
				return fmt.Errorf("share: saved member %s: bad topic id %q", sm.ID, t.Topic)
			}
			m.Assignment[[16]byte(b)] = slices.Clone(t.Partitions)
		}
		members[m.ID] = m
	}
	g.epoch, g.sig, g.members = s.Epoch, string(s.Sig), members
	g.version++
	return nil
}
