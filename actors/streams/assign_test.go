package streams

import (
	"fmt"
	"testing"
)

// checkBalanced fails unless every task of counts is active on exactly
// one member and members differ by at most one active task.
func checkBalanced(t *testing.T, out map[string]tasks, counts map[string]int32) {
	t.Helper()
	seen := map[taskID]string{}
	lo, hi := 1<<30, -1
	for id, ts := range out {
		for task := range ts.Active {
			if prev, ok := seen[task]; ok {
				t.Fatalf("task %v active on %s and %s", task, prev, id)
			}
			seen[task] = id
		}
		lo, hi = min(lo, len(ts.Active)), max(hi, len(ts.Active))
	}
	want := 0
	for _, n := range counts {
		want += int(n)
	}
	if len(seen) != want {
		t.Fatalf("%d tasks active, want %d", len(seen), want)
	}
	if hi-lo > 1 {
		t.Fatalf("unbalanced: %d to %d active tasks", lo, hi)
	}
}

func TestAssignSplitsTasks(t *testing.T) {
	for _, tc := range []struct {
		members int
		counts  map[string]int32
	}{
		{1, map[string]int32{"0": 4}},
		{2, map[string]int32{"0": 4}},
		{3, map[string]int32{"0": 4}},
		{3, map[string]int32{"0": 4, "1": 3}},
		{4, map[string]int32{"0": 2}}, // a member without tasks
	} {
		t.Run(fmt.Sprintf("%d-members-%v", tc.members, tc.counts), func(t *testing.T) {
			var as []assignee
			for i := 0; i < tc.members; i++ {
				as = append(as, assignee{id: fmt.Sprintf("m%d", i), process: fmt.Sprintf("p%d", i), prev: newTasks()})
			}
			checkBalanced(t, assign(as, tc.counts, nil, 0), tc.counts)
		})
	}
}

func TestAssignIsSticky(t *testing.T) {
	counts := map[string]int32{"0": 6}
	as := []assignee{{id: "a", process: "pa", prev: newTasks()}, {id: "b", process: "pb", prev: newTasks()}}
	first := assign(as, counts, nil, 0)
	// A third member takes tasks from both, and both keep the rest.
	as = []assignee{{id: "a", process: "pa", prev: first["a"]}, {id: "b", process: "pb", prev: first["b"]}, {id: "c", process: "pc", prev: newTasks()}}
	second := assign(as, counts, nil, 0)
	checkBalanced(t, second, counts)
	for _, id := range []string{"a", "b"} {
		if lost := first[id].Active.minus(second[id].Active); len(lost) != 1 {
			t.Errorf("%s lost %v, want one task", id, lost.sorted())
		}
	}
	// A member that leaves gives its tasks to the others, who keep theirs.
	as = []assignee{{id: "a", process: "pa", prev: second["a"]}, {id: "b", process: "pb", prev: second["b"]}}
	third := assign(as, counts, nil, 0)
	for _, id := range []string{"a", "b"} {
		if lost := second[id].Active.minus(third[id].Active); len(lost) != 0 {
			t.Errorf("%s lost %v", id, lost.sorted())
		}
	}
	// A previous standby becomes the active when the active is gone.
	as = []assignee{{id: "a", process: "pa", prev: tasks{taskSet{}, taskSet{{"0", 5}: {}}, taskSet{}}}, {id: "b", process: "pb", prev: newTasks()}}
	if got := assign(as, map[string]int32{"0": 6}, nil, 0); !got["a"].Active.has(taskID{"0", 5}) {
		t.Errorf("previous standby of 0_5 did not get it: %v", got["a"].Active.sorted())
	}
}

func TestAssignStandbys(t *testing.T) {
	for _, tc := range []struct {
		name      string
		processes []string // one member each, named by index
		standbys  int
		want      int // standby copies per task
	}{
		{"one process gets none", []string{"p", "p", "p"}, 1, 0},
		{"two processes one each", []string{"p1", "p2"}, 1, 1},
		{"asked two, one other process", []string{"p1", "p1", "p2"}, 2, 1},
		{"three processes two each", []string{"p1", "p2", "p3"}, 2, 2},
		{"none asked", []string{"p1", "p2"}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := map[string]int32{"0": 4, "1": 2, "2": 3} // 2 is stateless
			var as []assignee
			proc := map[string]string{}
			for i, p := range tc.processes {
				id := fmt.Sprintf("m%d", i)
				as = append(as, assignee{id: id, process: p, prev: newTasks()})
				proc[id] = p
			}
			out := assign(as, counts, map[string]bool{"0": true, "1": true, "2": false}, tc.standbys)
			checkBalanced(t, out, counts)
			copies := map[taskID][]string{}
			active := map[taskID]string{}
			for id, ts := range out {
				for task := range ts.Active {
					active[task] = proc[id]
				}
				for task := range ts.Standby {
					copies[task] = append(copies[task], proc[id])
				}
			}
			for task, p := range active {
				if task.Sub == "2" {
					if len(copies[task]) != 0 {
						t.Errorf("stateless task %v has standbys", task)
					}
					continue
				}
				if len(copies[task]) != tc.want {
					t.Errorf("task %v has %d standbys, want %d", task, len(copies[task]), tc.want)
				}
				seen := map[string]bool{p: true}
				for _, sp := range copies[task] {
					if seen[sp] {
						t.Errorf("task %v: a second copy on process %s", task, sp)
					}
					seen[sp] = true
				}
			}
		})
	}
}
