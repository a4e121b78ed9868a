package streams

import "time"

// expire runs the new group's delayed first assignment when due, and
// fences the members whose session ran out and those that did not revoke
// their tasks within their rebalance timeout.
func (g *Group) expire(now time.Time) []string {
	if !g.delay.IsZero() && !g.delay.After(now) {
		g.delay = time.Time{}
		if len(g.members) > 0 && g.epoch > g.assignmentEpoch && g.conf != nil {
			g.computeTarget()
		}
	}
	var gone []string
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		late := !m.session.After(now)
		if m.state == stateUnrevoked && !m.revoke.IsZero() && !m.revoke.After(now) {
			late = true
		}
		if late {
			g.remove(m)
			gone = append(gone, id)
		}
	}
	return gone
}

func (g *Group) nextDeadline() time.Time {
	var next time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	earlier(g.delay)
	for _, m := range g.members {
		earlier(m.session)
		if m.state == stateUnrevoked {
			earlier(m.revoke)
		}
	}
	return next
}
