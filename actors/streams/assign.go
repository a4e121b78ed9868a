package streams

import "sort"

// assignee is what the assignor knows of a member.
type assignee struct {
	id, process string
	prev        tasks // the member's previous target
}

// assign is the sticky task assignor: active tasks stay with their
// previous owner (or a previous standby) while the members stay balanced
// (no member more than one task above another), the rest go to the least
// loaded process and its least loaded member. Standby tasks of stateful
// subtopologies go to processes holding no copy of the task, preferring
// the previous active owner, then a previous standby. Kafka 4.2 gives no
// warm-up tasks.
func assign(members []assignee, taskCounts map[string]int32, stateful map[string]bool, standbys int) map[string]tasks {
	out := make(map[string]tasks, len(members))
	if len(members) == 0 {
		return out
	}
	sort.Slice(members, func(i, j int) bool { return members[i].id < members[j].id })
	for _, m := range members {
		out[m.id] = newTasks()
	}
	var all []taskID
	for _, sub := range sortedKeys(taskCounts) {
		for p := int32(0); p < taskCounts[sub]; p++ {
			all = append(all, taskID{sub, p})
		}
	}
	n := len(members)
	floor, extra := len(all)/n, len(all)%n
	// quota lets exactly extra members take floor+1 tasks.
	atCeil := 0
	underQuota := func(id string) bool {
		have := len(out[id].Active)
		if have < floor {
			return true
		}
		return have == floor && atCeil < extra
	}
	give := func(id string, t taskID) {
		out[id].Active[t] = struct{}{}
		if len(out[id].Active) == floor+1 {
			atCeil++
		}
	}
	processLoad := map[string]int{}
	processSize := map[string]int{}
	for _, m := range members {
		processSize[m.process]++
	}
	owned := map[taskID]bool{}
	take := func(m assignee, t taskID) {
		give(m.id, t)
		owned[t] = true
		processLoad[m.process]++
	}
	// Sticky, in Kafka's order (by partition, then subtopology): a task
	// stays with its previous active owner, else goes to the least loaded
	// of its previous standby owners, while their quota allows.
	byPartition := append([]taskID{}, all...)
	sort.Slice(byPartition, func(i, j int) bool {
		a, b := byPartition[i], byPartition[j]
		if a.Part != b.Part {
			return a.Part < b.Part
		}
		return a.Sub < b.Sub
	})
	// A task has one previous active owner (targets never share one), so
	// it is found by task, not by asking every member.
	prevActive := make(map[taskID]int, len(all))
	for i, m := range members {
		for t := range m.prev.Active {
			prevActive[t] = i
		}
	}
	for _, t := range byPartition {
		if i, ok := prevActive[t]; ok && underQuota(members[i].id) {
			take(members[i], t)
		}
	}
	for _, t := range byPartition {
		if owned[t] {
			continue
		}
		best := -1
		for i, m := range members {
			if m.prev.Standby.has(t) && (best < 0 || lessLoaded(m, members[best], out, processLoad, processSize)) {
				best = i
			}
		}
		if best >= 0 && underQuota(members[best].id) {
			take(members[best], t)
		}
	}
	for _, t := range all {
		if owned[t] {
			continue
		}
		best := -1
		for i, m := range members {
			if !underQuota(m.id) {
				continue
			}
			if best < 0 || lessLoaded(m, members[best], out, processLoad, processSize) {
				best = i
			}
		}
		take(members[best], t)
	}
	if standbys > 0 {
		var withState []taskID
		for _, t := range all {
			if stateful[t.Sub] {
				withState = append(withState, t)
			}
		}
		assignStandbys(members, withState, standbys, out)
	}
	return out
}

// lessLoaded orders members by their process's load per member, then
// their own tasks, then id.
func lessLoaded(a, b assignee, out map[string]tasks, load, size map[string]int) bool {
	// load[a]/size[a] < load[b]/size[b]
	la, lb := load[a.process]*size[b.process], load[b.process]*size[a.process]
	if la != lb {
		return la < lb
	}
	ta, tb := len(out[a.id].Active), len(out[b.id].Active)
	if ta != tb {
		return ta < tb
	}
	return a.id < b.id
}

// assignStandbys places up to standbys copies of each task, never on a
// process that holds the task already.
func assignStandbys(members []assignee, all []taskID, standbys int, out map[string]tasks) {
	holders := func(t taskID) map[string]bool {
		h := map[string]bool{}
		for _, m := range members {
			if out[m.id].Active.has(t) || out[m.id].Standby.has(t) {
				h[m.process] = true
			}
		}
		return h
	}
	load := func(id string) int { return len(out[id].Active) + len(out[id].Standby) }
	for _, t := range all {
		for r := 0; r < standbys; r++ {
			h := holders(t)
			best := -1
			// The previous active owner keeps a copy, else a previous
			// standby owner.
			for _, prev := range []func(assignee) bool{
				func(m assignee) bool { return m.prev.Active.has(t) },
				func(m assignee) bool { return m.prev.Standby.has(t) },
			} {
				for i, m := range members {
					if best < 0 && !h[m.process] && prev(m) {
						best = i
					}
				}
			}
			if best < 0 {
				for i, m := range members {
					if h[m.process] {
						continue
					}
					if best < 0 || load(m.id) < load(members[best].id) {
						best = i
					}
				}
			}
			if best < 0 {
				break // every process holds a copy
			}
			out[members[best].id].Standby[t] = struct{}{}
		}
	}
}
