package group

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// AssignMember is one member as an assignor sees it.
type AssignMember struct {
	ID         string
	InstanceID string   // "" for dynamic members
	Topics     []string // subscribed topics that exist
	Current    Assignment
}

type assignPart struct {
	topic string
	id    [16]byte
	p     int32
}

func partitionsOf(topics map[string]TopicInfo) []assignPart {
	names := sortedKeys(topics)
	var out []assignPart
	for _, n := range names {
		t := topics[n]
		for p := int32(0); p < t.Partitions; p++ {
			out = append(out, assignPart{topic: n, id: t.ID, p: p})
		}
	}
	return out
}

// ParseAssignors reads group.consumer.assignors: a comma-separated list of
// the server-side assignors kaas has (uniform, range), without repeats.
func ParseAssignors(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		switch {
		case a != AssignorUniform && a != AssignorRange:
			return nil, fmt.Errorf("unknown server-side assignor %q (uniform or range)", a)
		case slices.Contains(out, a):
			return nil, fmt.Errorf("assignor %s named twice", a)
		}
		out = append(out, a)
	}
	return out, nil
}

// AssignUniform is the "uniform" server-side assignor: every partition of a
// subscribed topic goes to a subscribed member, members' counts differ by at
// most one where subscriptions allow, and partitions stay where they are
// whenever balance does not require a move (sticky). Members are processed
// in the given order, which must be deterministic.
func AssignUniform(members []AssignMember, topics map[string]TopicInfo) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	if len(members) == 0 {
		return out
	}
	subs := make(map[string]map[string]bool, len(members))
	for _, m := range members {
		out[m.ID] = Assignment{}
		s := map[string]bool{}
		for _, t := range m.Topics {
			s[t] = true
		}
		subs[m.ID] = s
	}
	parts := partitionsOf(topics)
	byKey := make(map[tpid]assignPart, len(parts))
	for _, p := range parts {
		byKey[tpid{p.id, p.p}] = p
	}
	owner := map[tpid]string{}
	count := map[string]int{}

	// 1. Keep every current partition that still exists and is still
	// subscribed, once.
	for _, m := range members {
		m.Current.each(func(t [16]byte, p int32) {
			k := tpid{t, p}
			ap, ok := byKey[k]
			if !ok || !subs[m.ID][ap.topic] || owner[k] != "" {
				return
			}
			owner[k] = m.ID
			out[m.ID].add(t, p)
			count[m.ID]++
		})
	}

	// 2. Hand each unowned partition to the least-loaded subscribed
	// member (ties: member order).
	for _, ap := range parts {
		k := tpid{ap.id, ap.p}
		if owner[k] != "" {
			continue
		}
		best := ""
		for _, m := range members {
			if subs[m.ID][ap.topic] && (best == "" || count[m.ID] < count[best]) {
				best = m.ID
			}
		}
		if best == "" {
			continue
		}
		owner[k] = best
		out[best].add(ap.id, ap.p)
		count[best]++
	}

	// 3. Even out: move a partition from the most- to the least-loaded
	// member that may take it while they differ by more than one.
	order := make(map[string]int, len(members))
	for i, m := range members {
		order[m.ID] = i
	}
	for moves := 0; moves <= len(parts); moves++ {
		ids := make([]string, 0, len(members))
		for _, m := range members {
			ids = append(ids, m.ID)
		}
		sort.SliceStable(ids, func(i, j int) bool {
			if count[ids[i]] != count[ids[j]] {
				return count[ids[i]] > count[ids[j]]
			}
			return order[ids[i]] < order[ids[j]]
		})
		moved := false
	search:
		for i := 0; i < len(ids); i++ {
			from := ids[i]
			for j := len(ids) - 1; j > i; j-- {
				to := ids[j]
				if count[from]-count[to] <= 1 {
					continue
				}
				// Move the last partition of from that to subscribes to.
				pick, ok := lastEligible(out[from], byKey, subs[to])
				if !ok {
					continue
				}
				remove(out[from], pick.id, pick.p)
				out[to].add(pick.id, pick.p)
				count[from]--
				count[to]++
				moved = true
				break search
			}
		}
		if !moved {
			break
		}
	}
	return out
}

func lastEligible(a Assignment, byKey map[tpid]assignPart, subs map[string]bool) (assignPart, bool) {
	ids := sortedIDs(a)
	for i := len(ids) - 1; i >= 0; i-- {
		ps := a[ids[i]]
		for x := len(ps) - 1; x >= 0; x-- {
			if ap := byKey[tpid{ids[i], ps[x]}]; subs[ap.topic] {
				return ap, true
			}
		}
	}
	return assignPart{}, false
}

func remove(a Assignment, t [16]byte, p int32) {
	ps := a[t]
	for i, x := range ps {
		if x == p {
			ps = append(ps[:i:i], ps[i+1:]...)
			break
		}
	}
	if len(ps) == 0 {
		delete(a, t)
	} else {
		a[t] = ps
	}
}

// AssignRange is the "range" server-side assignor: for each topic, the
// members subscribed to it (static members by instance id, then dynamic
// members by member id) get contiguous ranges of partitions, the first ones
// one extra when the count does not divide evenly. Members subscribed to the
// same co-partitioned topics get the same partition numbers.
func AssignRange(members []AssignMember, topics map[string]TopicInfo) map[string]Assignment {
	out := make(map[string]Assignment, len(members))
	sorted := make([]AssignMember, len(members))
	copy(sorted, members)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if (a.InstanceID != "") != (b.InstanceID != "") {
			return a.InstanceID != ""
		}
		if a.InstanceID != b.InstanceID {
			return a.InstanceID < b.InstanceID
		}
		return a.ID < b.ID
	})
	for _, m := range sorted {
		out[m.ID] = Assignment{}
	}
	for _, name := range sortedKeys(topics) {
		t := topics[name]
		var subs []string
		for _, m := range sorted {
			for _, mt := range m.Topics {
				if mt == name {
					subs = append(subs, m.ID)
					break
				}
			}
		}
		if len(subs) == 0 {
			continue
		}
		n := int(t.Partitions)
		quota, extra := n/len(subs), n%len(subs)
		next := 0
		for i, id := range subs {
			k := quota
			if i < extra {
				k++
			}
			for p := next; p < next+k; p++ {
				out[id].add(t.ID, int32(p))
			}
			next += k
		}
	}
	return out
}
