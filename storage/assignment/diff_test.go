package assignment

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// doc builds a document over brokers kaas-0..n-1 (all alive unless listed
// in dead) with topics given as name -> "id:leader/epoch,leader/epoch,...".
func doc(n int, dead []int, topics map[string]string) *Assignment {
	a := &Assignment{Format: 1, Controller: "kaas-0", Topics: map[string]Topic{}}
	var names []string
	for i := 0; i < n; i++ {
		st := Alive
		for _, d := range dead {
			if d == i {
				st = Dead
			}
		}
		name := fmt.Sprintf("kaas-%d", i)
		a.Brokers = append(a.Brokers, Broker{ID: int32(i), Name: name, State: st})
		if st == Alive && a.Controller == "kaas-0" && i > 0 && a.Brokers[0].State != Alive {
			a.Controller = name
		}
		names = append(names, name)
	}
	a.ConsumerGroups.Slots = PlaceSlots(nil, nil, names)
	for name, spec := range topics {
		id, list, _ := strings.Cut(spec, ":")
		var parts []Partition
		for _, p := range strings.Split(list, ",") {
			l, e, _ := strings.Cut(p, "/")
			li, err1 := strconv.Atoi(l)
			ei, err2 := strconv.Atoi(e)
			if err1 != nil || err2 != nil {
				panic("bad partition spec " + p)
			}
			parts = append(parts, Partition{Leader: int32(li), LeaderEpoch: int32(ei)})
		}
		a.Topics[name] = Topic{ID: id, Partitions: parts}
	}
	if err := a.Validate(); err != nil {
		panic(err)
	}
	return a
}

// withSlots is a with its slot list replaced.
func withSlots(a *Assignment, slots []string) *Assignment {
	a.ConsumerGroups.Slots = slots
	return a
}

// roundRobin lists the slots PlaceSlots gives broker i of n first.
func roundRobin(n, i int) string {
	var out []int
	for s := i; s < GroupSlotCount; s += n {
		out = append(out, s)
	}
	return fmt.Sprint(out)
}

func refs(rs []PartitionRef) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("%s(%s)/%d@%d ", r.Topic, r.TopicID, r.Partition, r.LeaderEpoch)
	}
	return s
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		old, new               *Assignment
		take, relinquish, kept string
		gained, lost           string
		reset                  bool
	}{
		{
			name: "nothing before", old: nil,
			new:  doc(2, nil, map[string]string{"a": "A:1/0,0/0,1/0", "b": "B:1/0"}),
			take: "a(A)/0@0 a(A)/2@0 b(B)/0@0 ", gained: roundRobin(2, 1), reset: true,
		},
		{
			name: "identical",
			old:  doc(2, nil, map[string]string{"a": "A:1/0,0/0"}),
			new:  doc(2, nil, map[string]string{"a": "A:1/0,0/0"}),
		},
		{
			name:       "moves both ways",
			old:        doc(3, nil, map[string]string{"a": "A:1/0,2/0,1/4"}),
			new:        doc(3, nil, map[string]string{"a": "A:2/1,1/1,1/4"}),
			take:       "a(A)/1@1 ",
			relinquish: "a(A)/0@0 ",
		},
		{
			name: "epoch change on a kept partition",
			old:  doc(2, nil, map[string]string{"a": "A:1/3"}),
			new:  doc(2, nil, map[string]string{"a": "A:1/5"}),
			kept: "a(A)/0@5 ",
		},
		{
			name:       "topic recreated with a new id",
			old:        doc(2, nil, map[string]string{"a": "A:1/3"}),
			new:        doc(2, nil, map[string]string{"a": "A2:1/0"}),
			take:       "a(A2)/0@0 ",
			relinquish: "a(A)/0@3 ",
		},
		{
			name:       "topic deleted, leader -1",
			old:        doc(2, nil, map[string]string{"a": "A:1/3", "b": "B:1/1"}),
			new:        doc(2, nil, map[string]string{"b": "B:-1/1"}),
			relinquish: "a(A)/0@3 b(B)/0@1 ",
		},
		{
			name: "partitions added",
			old:  doc(2, nil, map[string]string{"a": "A:1/0"}),
			new:  doc(2, nil, map[string]string{"a": "A:1/0,0/0,1/0"}),
			take: "a(A)/2@0 ",
		},
		{
			name:       "nothing after",
			old:        doc(2, nil, map[string]string{"a": "A:1/0"}),
			new:        nil,
			relinquish: "a(A)/0@0 ",
			lost:       roundRobin(2, 1), reset: true,
		},
		{
			// kaas-0's other 9 slots fall to kaas-2 (SlotOwners).
			name:   "slots of a dead broker fall to us and the other survivor",
			old:    doc(3, nil, nil),
			new:    doc(3, []int{0}, nil),
			gained: "[0 3 6 9 21 24 27 42]",
		},
		{
			name: "we die: our slots go",
			old:  doc(3, nil, nil),
			new:  doc(3, []int{1}, nil),
			lost: roundRobin(3, 1),
		},
		{
			// Shares 17, 17, 16: kaas-1 keeps its first 17 slots.
			name: "a broker registers: we give up only the slots it takes",
			old:  doc(2, nil, nil),
			new:  withSlots(doc(3, nil, nil), PlaceSlots(doc(2, nil, nil).ConsumerGroups.Slots, nil, []string{"kaas-0", "kaas-1", "kaas-2"})),
			lost: "[35 37 39 41 43 45 47 49]",
		},
		{
			name:   "a list of one slot per broker becomes GroupSlotCount slots",
			old:    withSlots(doc(2, nil, nil), []string{"kaas-0", "kaas-1"}),
			new:    doc(2, nil, nil),
			gained: roundRobin(2, 1), lost: "[1]", reset: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(tc.old, tc.new, 1, "kaas-1")
			if got := refs(d.Take); got != tc.take {
				t.Errorf("take %q, want %q", got, tc.take)
			}
			if got := refs(d.Relinquish); got != tc.relinquish {
				t.Errorf("relinquish %q, want %q", got, tc.relinquish)
			}
			if got := refs(d.EpochChanged); got != tc.kept {
				t.Errorf("epoch changed %q, want %q", got, tc.kept)
			}
			if got := fmt.Sprint(d.SlotsGained); tc.gained != "" && got != tc.gained || tc.gained == "" && d.SlotsGained != nil {
				t.Errorf("gained %v, want %s", d.SlotsGained, tc.gained)
			}
			if got := fmt.Sprint(d.SlotsLost); tc.lost != "" && got != tc.lost || tc.lost == "" && d.SlotsLost != nil {
				t.Errorf("lost %v, want %s", d.SlotsLost, tc.lost)
			}
			if d.SlotsReset != tc.reset {
				t.Errorf("reset %v", d.SlotsReset)
			}
			empty := tc.take == "" && tc.relinquish == "" && tc.kept == "" && tc.gained == "" && tc.lost == "" && !tc.reset
			if d.Empty() != empty {
				t.Errorf("Empty() = %v", d.Empty())
			}
		})
	}
}

func TestDiffIsSorted(t *testing.T) {
	next := doc(2, nil, map[string]string{"z": "Z:1/0,1/0", "a": "A:1/0", "m": "M:0/0,1/0"})
	d := Diff(nil, next, 1, "kaas-1")
	if got := refs(d.Take); got != "a(A)/0@0 m(M)/1@0 z(Z)/0@0 z(Z)/1@0 " {
		t.Fatalf("take %q", got)
	}
}
