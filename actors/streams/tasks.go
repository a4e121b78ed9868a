package streams

import (
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// taskID is one task: a subtopology and one partition of its inputs.
type taskID struct {
	Sub  string
	Part int32
}

// taskSet is a set of tasks.
type taskSet map[taskID]struct{}

func (s taskSet) has(t taskID) bool { _, ok := s[t]; return ok }

func (s taskSet) clone() taskSet {
	c := make(taskSet, len(s))
	for t := range s {
		c[t] = struct{}{}
	}
	return c
}

// minus is the tasks of s not in o.
func (s taskSet) minus(o taskSet) taskSet {
	c := taskSet{}
	for t := range s {
		if !o.has(t) {
			c[t] = struct{}{}
		}
	}
	return c
}

// intersects reports whether s and o share a task.
func (s taskSet) intersects(o taskSet) bool {
	for t := range s {
		if o.has(t) {
			return true
		}
	}
	return false
}

func (s taskSet) equal(o taskSet) bool {
	if len(s) != len(o) {
		return false
	}
	for t := range s {
		if !o.has(t) {
			return false
		}
	}
	return true
}

// sorted lists the tasks by subtopology, then partition.
func (s taskSet) sorted() []taskID {
	out := make([]taskID, 0, len(s))
	for t := range s {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Sub != out[j].Sub {
			return out[i].Sub < out[j].Sub
		}
		return out[i].Part < out[j].Part
	})
	return out
}

// taskIDs is the wire form, one entry per subtopology; never nil, so a
// response sends an empty array rather than null.
func (s taskSet) taskIDs() []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range s.sorted() {
		if n := len(out); n > 0 && out[n-1].SubtopologyID == t.Sub {
			out[n-1].Partitions = append(out[n-1].Partitions, t.Part)
			continue
		}
		out = append(out, kmsg.TaskIDs{SubtopologyID: t.Sub, Partitions: []int32{t.Part}})
	}
	return out
}

func fromTaskIDs(ids []kmsg.TaskIDs) taskSet {
	s := taskSet{}
	for _, id := range ids {
		for _, p := range id.Partitions {
			s[taskID{id.SubtopologyID, p}] = struct{}{}
		}
	}
	return s
}

// tasks is a member's active, standby and warm-up tasks.
type tasks struct {
	Active, Standby, Warmup taskSet
}

func newTasks() tasks { return tasks{taskSet{}, taskSet{}, taskSet{}} }

func (t tasks) empty() bool { return len(t.Active)+len(t.Standby)+len(t.Warmup) == 0 }

func (t tasks) clone() tasks { return tasks{t.Active.clone(), t.Standby.clone(), t.Warmup.clone()} }

func (t tasks) equal(o tasks) bool {
	return t.Active.equal(o.Active) && t.Standby.equal(o.Standby) && t.Warmup.equal(o.Warmup)
}

func (t tasks) intersects(o tasks) bool {
	return t.Active.intersects(o.Active) || t.Standby.intersects(o.Standby) || t.Warmup.intersects(o.Warmup)
}

// assignment is the describe form.
func (t tasks) assignment() kmsg.StreamsAssignment {
	return kmsg.StreamsAssignment{ActiveTasks: t.Active.taskIDs(), StandbyTasks: t.Standby.taskIDs(), WarmupTasks: t.Warmup.taskIDs()}
}

// savedTasks is tasks as JSON: subtopology to sorted partitions.
type savedTasks struct {
	Active  map[string][]int32 `json:",omitempty"`
	Standby map[string][]int32 `json:",omitempty"`
	Warmup  map[string][]int32 `json:",omitempty"`
}

func saveSet(s taskSet) map[string][]int32 {
	if len(s) == 0 {
		return nil
	}
	m := map[string][]int32{}
	for _, t := range s.sorted() {
		m[t.Sub] = append(m[t.Sub], t.Part)
	}
	return m
}

func loadSet(m map[string][]int32) taskSet {
	s := taskSet{}
	for sub, ps := range m {
		for _, p := range ps {
			s[taskID{sub, p}] = struct{}{}
		}
	}
	return s
}

func (t tasks) save() savedTasks {
	return savedTasks{saveSet(t.Active), saveSet(t.Standby), saveSet(t.Warmup)}
}

func (s savedTasks) load() tasks {
	return tasks{loadSet(s.Active), loadSet(s.Standby), loadSet(s.Warmup)}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
