package controller

import (
	"cmp"
	"slices"
	"strings"

	"github.com/kaas-project/kaas/storage/assignment"
)

// TP names a partition in a heartbeat's list of partitions led.
type TP struct {
	Topic     string
	Partition int32
}

// Position orders assignment files (assignment.Position).
type Position = assignment.Position

// Reports qualifies brokers' heartbeat lists for two-phase moves: a list is
// only current for the files its broker had applied. A broker that has not
// applied the file that last granted a partition (or slot) to someone may
// still be about to take it from there, so its silence about it confirms
// nothing. One that has applied it cannot take it from any file it has not
// seen yet (no later file granted it), so its list is enough. Nil fields
// treat every report as current.
type Reports struct {
	Applied       map[string]Position // per broker: the file its latest ping reflects
	GrantedAt     map[TP]Position     // per partition: the file that last gave it a leader
	SlotGrantedAt map[int]Position    // per consumer-group slot: the file that last gave it an owner or a hold
}

func (r Reports) currentFor(broker string, since Position, ok bool) bool {
	if r.Applied == nil || !ok {
		return true
	}
	return r.Applied[broker].AtLeast(since)
}

// HoldUnreleased makes every leadership move two-phase (invariant 1: one
// writer per partition). A partition the balancer gives to broker N is held
// leaderless (leader -1) instead when
//   - its previous leader L != N is still running (alive or draining): the
//     file first takes it away from L, or
//   - any running broker other than N still lists it in its latest
//     heartbeat: the release has not been confirmed yet, or
//   - it is leaderless already and some running broker other than N has not
//     sent a heartbeat yet (a controller elected in the middle of a move
//     cannot know who is still closing it).
//
// A partition already held stays exactly as it was (same epoch), so waiting
// for a release writes nothing new. Dead brokers are not waited for: they stopped heartbeating for dead-after
// and have fenced themselves. The leader epoch the balancer chose is kept, so
// epochs only rise. next is modified in place; it returns how many
// partitions are held.
func HoldUnreleased(prev, next *assignment.Assignment, states map[string]assignment.BrokerState, listed map[string]map[TP]bool, reports Reports) int {
	running := runningIn(states)
	names := brokerNames(next)
	held := 0
	for topic, t := range next.Topics {
		pt := partitionsBefore(prev, topic, t.ID)
		for i, p := range t.Partitions {
			if p.Leader < 0 {
				continue
			}
			target := names[p.Leader]
			hold := false
			if i < len(pt) && pt[i].Leader >= 0 && pt[i].Leader != p.Leader && running(names[pt[i].Leader]) {
				hold = true
			}
			for name, parts := range listed {
				if name != target && running(name) && parts[TP{Topic: topic, Partition: int32(i)}] {
					hold = true
				}
			}
			if i < len(pt) && pt[i].Leader == assignment.NoLeader {
				// Someone may still be releasing it: every running broker
				// other than the target must have reported, on the file
				// that last granted it or a later one (a controller elected
				// mid-move has not heard from everyone yet).
				tp := TP{Topic: topic, Partition: int32(i)}
				since, ok := reports.GrantedAt[tp]
				for name, st := range states {
					_, heard := listed[name]
					if name != target && st != assignment.Dead && (!heard || !reports.currentFor(name, since, ok)) {
						hold = true
					}
				}
			}
			if hold {
				t.Partitions[i].Leader = assignment.NoLeader
				if i < len(pt) && pt[i].Leader == assignment.NoLeader {
					// Still waiting: nothing changes, not even the epoch.
					t.Partitions[i].LeaderEpoch = pt[i].LeaderEpoch
				}
				held++
			}
		}
	}
	return held
}

// HoldSlots makes group-coordinator moves two-phase, like HoldUnreleased
// for partitions. Slot i (the home slot of the groups whose hash lands
// there) is held when its serving broker changes from a broker that is
// still running, when a running broker other than the new owner still
// reports a group of that slot or lists its partition of
// assignment.OffsetsTopic (its close not finished), or when it was held
// already and a running broker other than the new owner has not reported
// yet. A broker that
// registers or is unregistered changes only the slots PlaceSlots moves; a
// file whose slot count differs from prev's (a list of one slot per broker
// replaced by GroupSlotCount slots) changes the modulus, so any group may change
// coordinator, including one created since its coordinator's last report:
// it holds every slot, and the slots are released once every running
// broker has applied it (Reports from the file on: trackGrants) and reports
// no group of a slot it does not own.
// Held slots are written to consumer_groups.held; their groups have no
// coordinator (clients retry COORDINATOR_NOT_AVAILABLE) until the release
// is confirmed. next is modified in place; it returns how many slots are
// held.
func HoldSlots(prev, next *assignment.Assignment, states map[string]assignment.BrokerState, groups map[string][]string, listed map[string]map[TP]bool, reports Reports) int {
	running := runningIn(states)
	n := len(next.ConsumerGroups.Slots)
	reset := prev != nil && len(prev.ConsumerGroups.Slots) != n
	nextOwners := assignment.SlotOwners(next)
	var prevOwners []string
	var prevHeld []int
	if prev != nil && len(prev.ConsumerGroups.Slots) == n {
		prevOwners = assignment.SlotOwners(prev)
		prevHeld = prev.ConsumerGroups.Held
	}
	reported := make([]map[string]bool, n) // slot -> brokers reporting a group there
	for name, gs := range groups {
		for _, g := range gs {
			i := assignment.SlotFor(g, n)
			if i < 0 {
				continue
			}
			if reported[i] == nil {
				reported[i] = map[string]bool{}
			}
			reported[i][name] = true
		}
	}
	for name, parts := range listed {
		for tp := range parts {
			if i := int(tp.Partition); tp.Topic == assignment.OffsetsTopic && i >= 0 && i < n {
				if reported[i] == nil {
					reported[i] = map[string]bool{}
				}
				reported[i][name] = true
			}
		}
	}
	var held []int
	for i := 0; i < n; i++ {
		target := nextOwners[i]
		hold := reset
		if prevOwners != nil && prevOwners[i] != "" && prevOwners[i] != target && running(prevOwners[i]) {
			hold = true
		}
		for name := range reported[i] {
			if name != target && running(name) {
				hold = true
			}
		}
		if slices.Contains(prevHeld, i) {
			since, ok := reports.SlotGrantedAt[i]
			for name, st := range states {
				_, heard := groups[name]
				if name != target && st != assignment.Dead && (!heard || !reports.currentFor(name, since, ok)) {
					hold = true
				}
			}
		}
		if hold {
			held = append(held, i)
		}
	}
	next.ConsumerGroups.Held = held
	return len(held)
}

// partitionsBefore is topic's partitions in prev if prev holds the same
// incarnation (topic id) of it, else nil.
func partitionsBefore(prev *assignment.Assignment, topic, id string) []assignment.Partition {
	if prev == nil {
		return nil
	}
	if t, ok := prev.Topics[topic]; ok && t.ID == id {
		return t.Partitions
	}
	return nil
}

// LimitMoves bounds the leadership moves in motion at once to budget (no
// bound if budget <= 0), so that a drain of a thousand partitions runs as
// waves: a partition waits for its own wave's releases, grants and opens,
// not for the whole batch's. A move is in motion from the file that holds
// it leaderless until its new leader has opened it:
//   - held leaderless in prev (waiting for its release, or granted now);
//   - granted to a running broker that has not yet applied the file that
//     granted it, or that still reports it opening;
//   - a partition new in next (its leader has to open it too).
//
// A move the balancer starts beyond the budget (a partition whose leader in
// prev is running and that next gives to another broker) is deferred: next
// keeps prev's leader and epoch for it, and a later recompute starts it as
// opens finish. The moves started are taken round robin over their new
// leaders, so that every receiver opens in every wave. A partition whose
// leader is dead is never deferred (failover has no release to wait for).
// next is modified in place, before HoldUnreleased; it returns the moves
// deferred and the partitions counted in motion, those started included.
func LimitMoves(prev, next *assignment.Assignment, states map[string]assignment.BrokerState, opening map[string]map[TP]bool, reports Reports, budget int) (deferred, moving int) {
	if budget <= 0 || prev == nil {
		return 0, 0
	}
	running := runningIn(states)
	names := brokerNames(next)
	type move struct {
		tp   TP
		prev assignment.Partition
	}
	byTarget := map[int32][]move{}
	for topic, t := range next.Topics {
		pt := partitionsBefore(prev, topic, t.ID)
		for i, p := range t.Partitions {
			if p.Leader < 0 {
				continue
			}
			tp := TP{Topic: topic, Partition: int32(i)}
			target := names[p.Leader]
			switch {
			case i >= len(pt):
				if running(target) {
					moving++
				}
			case pt[i].Leader == assignment.NoLeader:
				moving++
			case pt[i].Leader != p.Leader && running(names[pt[i].Leader]):
				byTarget[p.Leader] = append(byTarget[p.Leader], move{tp: tp, prev: pt[i]})
			case running(target):
				since, ok := reports.GrantedAt[tp]
				if !reports.currentFor(target, since, ok) || opening[target][tp] {
					moving++
				}
			}
		}
	}
	targets := make([]int32, 0, len(byTarget))
	for id, ms := range byTarget {
		targets = append(targets, id)
		slices.SortFunc(ms, func(a, b move) int {
			return cmp.Or(strings.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
		})
	}
	slices.Sort(targets)
	room := budget - moving
	for round := 0; ; round++ {
		left := false
		for _, id := range targets {
			ms := byTarget[id]
			if round >= len(ms) {
				continue
			}
			left = true
			if room > 0 {
				room--
				moving++
				continue
			}
			m := ms[round]
			next.Topics[m.tp.Topic].Partitions[m.tp.Partition] = m.prev
			deferred++
		}
		if !left {
			return deferred, moving
		}
	}
}

// runningIn reports, by name, the brokers that states has alive or draining.
func runningIn(states map[string]assignment.BrokerState) func(string) bool {
	return func(name string) bool {
		s, ok := states[name]
		return ok && s != assignment.Dead
	}
}

// brokerNames maps a's broker ids to their names.
func brokerNames(a *assignment.Assignment) map[int32]string {
	names := make(map[int32]string, len(a.Brokers))
	for _, b := range a.Brokers {
		names[b.ID] = b.Name
	}
	return names
}
