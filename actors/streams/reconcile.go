package streams

// memberState is a member's reconciliation state (Kafka's MemberState).
type memberState int8

const (
	stateStable memberState = iota
	stateUnrevoked
	stateUnreleased
)

func (s memberState) String() string {
	switch s {
	case stateUnrevoked:
		return "UNREVOKED_TASKS"
	case stateUnreleased:
		return "UNRELEASED_TASKS"
	}
	return "STABLE"
}

// owners is who currently holds each task (assigned or pending
// revocation): the active owner's member id, and the processes holding a
// standby or warm-up copy with how many members of each.
type owners struct {
	active  map[taskID]string
	standby map[taskID]map[string]int
	warmup  map[taskID]map[string]int
}

func newOwners() owners {
	return owners{map[taskID]string{}, map[taskID]map[string]int{}, map[taskID]map[string]int{}}
}

func addCopies(m map[taskID]map[string]int, s taskSet, process string, d int) {
	for t := range s {
		c := m[t]
		if c == nil {
			c = map[string]int{}
			m[t] = c
		}
		c[process] += d
		if c[process] <= 0 {
			delete(c, process)
			if len(c) == 0 {
				delete(m, t)
			}
		}
	}
}

// add records (d = 1) or forgets (d = -1) what a member holds.
func (o owners) add(m *member, d int) {
	for _, s := range []taskSet{m.assigned.Active, m.revoking.Active} {
		for t := range s {
			if d > 0 {
				o.active[t] = m.id
			} else if o.active[t] == m.id {
				delete(o.active, t)
			}
		}
	}
	addCopies(o.standby, m.assigned.Standby, m.process, d)
	addCopies(o.standby, m.revoking.Standby, m.process, d)
	addCopies(o.warmup, m.assigned.Warmup, m.process, d)
	addCopies(o.warmup, m.revoking.Warmup, m.process, d)
}

// reconcile moves a member towards its target at epoch as Kafka's
// CurrentAssignmentBuilder does. owned is what the member reported
// holding (nil: not reported). It returns whether the member changed.
func (g *Group) reconcile(m *member, owned *tasks, target tasks, epoch int32) bool {
	if target.Active == nil {
		target = newTasks()
	}
	// stay is the epoch the member keeps if it has tasks to revoke.
	stay := m.epoch
	switch m.state {
	case stateStable:
		if m.epoch == epoch {
			return false
		}
	case stateUnrevoked:
		if owned == nil || owned.intersects(m.revoking) {
			return false
		}
		stay = m.epoch + 1
	}
	return g.nextAssignment(m, target, epoch, stay, owned)
}

// nextAssignment keeps the tasks the member has and the target keeps,
// asks it to revoke the others, and gives it the target's tasks no other
// member still holds.
func (g *Group) nextAssignment(m *member, target tasks, targetEpoch, stay int32, owned *tasks) bool {
	keep, revoke, give := newTasks(), newTasks(), newTasks()
	unreleased := false
	diff := func(cur, tgt, k, r, gv taskSet, held func(taskID) bool) {
		for t := range cur {
			if tgt.has(t) {
				k[t] = struct{}{}
			} else {
				r[t] = struct{}{}
			}
		}
		for t := range tgt {
			if cur.has(t) {
				continue
			}
			if held(t) {
				unreleased = true
				continue
			}
			gv[t] = struct{}{}
		}
	}
	onProcess := func(t taskID) bool {
		return g.owners.standby[t][m.process] > 0 || g.owners.warmup[t][m.process] > 0
	}
	diff(m.assigned.Active, target.Active, keep.Active, revoke.Active, give.Active, func(t taskID) bool {
		_, ok := g.owners.active[t]
		return ok || onProcess(t)
	})
	copyHeld := func(t taskID) bool {
		if id, ok := g.owners.active[t]; ok && g.members[id] != nil && g.members[id].process == m.process {
			return true
		}
		return onProcess(t)
	}
	diff(m.assigned.Standby, target.Standby, keep.Standby, revoke.Standby, give.Standby, copyHeld)
	diff(m.assigned.Warmup, target.Warmup, keep.Warmup, revoke.Warmup, give.Warmup, copyHeld)

	before := m.snapshot()
	g.owners.add(m, -1)
	switch {
	case !revoke.empty() && (owned == nil || owned.intersects(revoke)):
		m.state = stateUnrevoked
		m.setEpoch(stay)
		m.assigned, m.revoking = keep, revoke
	case !give.empty():
		if unreleased {
			m.state = stateUnreleased
		} else {
			m.state = stateStable
		}
		m.setEpoch(targetEpoch)
		for t := range give.Active {
			keep.Active[t] = struct{}{}
		}
		for t := range give.Standby {
			keep.Standby[t] = struct{}{}
		}
		for t := range give.Warmup {
			keep.Warmup[t] = struct{}{}
		}
		m.assigned, m.revoking = keep, newTasks()
	default:
		if unreleased {
			m.state = stateUnreleased
		} else {
			m.state = stateStable
		}
		m.setEpoch(targetEpoch)
		m.assigned, m.revoking = keep, newTasks()
	}
	g.owners.add(m, 1)
	return !before.same(m)
}
