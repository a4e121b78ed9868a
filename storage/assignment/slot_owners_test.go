package assignment

import (
	"fmt"
	"testing"
)

// cluster is an assignment of n alive brokers kaas-0..kaas-n-1 with
// PlaceSlots' slots, the brokers of down dead.
func cluster(n int, down ...int) *Assignment {
	a := &Assignment{Format: 1}
	var names []string
	for i := range n {
		name := fmt.Sprintf("kaas-%d", i)
		a.Brokers = append(a.Brokers, Broker{ID: int32(i), Name: name, State: Alive})
		names = append(names, name)
	}
	a.ConsumerGroups.Slots = PlaceSlots(nil, nil, names)
	for _, d := range down {
		a.Brokers[d].State = Dead
	}
	return a
}

// A broker's slots spread evenly over the brokers left: each serves at
// most ceil(50 / alive brokers) slots; a slot whose broker is alive stays
// with it.
func TestSlotOwnersSpread(t *testing.T) {
	for n := 2; n <= 12; n++ {
		for d := range n {
			for _, down := range [][]int{{d}, {d, (d + 1) % n}, {d, (d + n/2) % n}} {
				if len(down) == 2 && (n < 3 || down[0] == down[1]) {
					continue
				}
				a := cluster(n, down...)
				owners := SlotOwners(a)
				alive := n - len(down)
				capacity := (GroupSlotCount + alive - 1) / alive
				load := map[string]int{}
				for i, o := range owners {
					b, ok := a.BrokerByName(o)
					if !ok || b.State != Alive {
						t.Fatalf("n=%d down=%v: slot %d served by %q", n, down, i, o)
					}
					if s, _ := a.BrokerByName(a.ConsumerGroups.Slots[i]); s.State == Alive && o != s.Name {
						t.Fatalf("n=%d down=%v: slot %d of alive %s served by %s", n, down, i, s.Name, o)
					}
					load[o]++
				}
				for name, l := range load {
					if l > capacity {
						t.Fatalf("n=%d down=%v: %s serves %d slots, more than %d", n, down, name, l, capacity)
					}
				}
			}
		}
	}
}

// A second broker's death moves its own slots and those that had fallen
// to it, and otherwise only slots of the first dead broker (a fallen slot
// may move when the capacity changes): never a slot of a broker alive.
func TestSlotOwnersMoveLittle(t *testing.T) {
	worst := 0
	for n := 3; n <= 12; n++ {
		for d1 := range n {
			for d2 := range n {
				if d1 == d2 {
					continue
				}
				a := cluster(n, d1, d2)
				first, second := a.Brokers[d1].Name, a.Brokers[d2].Name
				one, two := SlotOwners(cluster(n, d1)), SlotOwners(a)
				extra := 0
				for i := range one {
					if one[i] == two[i] || one[i] == second {
						continue
					}
					if a.ConsumerGroups.Slots[i] != first {
						t.Fatalf("n=%d, kaas-%d then kaas-%d dead: slot %d of alive %s moved to %s", n, d1, d2, i, one[i], two[i])
					}
					extra++
				}
				worst = max(worst, extra)
			}
		}
	}
	t.Logf("at most %d of the first dead broker's slots moved again", worst)
}

// slotRank decides where a slot falls, on every broker alike: a change to
// it splits a cluster of two versions over who coordinates a fallen slot.
func TestSlotRankIsFixed(t *testing.T) {
	for _, tc := range []struct {
		slot int
		name string
		want uint64
	}{
		{0, "kaas-0", 0xaa55e1e2239aab1b},
		{7, "kaas-1", 0x576b83fb5cd12634},
		{49, "kaas-12", 0x6312ba8b55b81732},
	} {
		if got := slotRank(tc.slot, tc.name); got != tc.want {
			t.Errorf("slotRank(%d, %q) = %#x, want %#x", tc.slot, tc.name, got, tc.want)
		}
	}
}

// Unregistering a dead broker moves few of the slots its death spread
// over the others: PlaceSlots gives each to the broker serving it while
// that one stays within its share (bounded loads may fill one broker a
// slot past its share). Without serving, PlaceSlots would hand the slots
// out afresh.
func TestUnregisterKeepsWhereSlotsFell(t *testing.T) {
	worst, kept, afresh := 0, 0, 0
	for n := 2; n <= 12; n++ {
		for d := range n {
			a := cluster(n, d)
			serving := SlotOwners(a)
			var names []string
			for _, b := range a.Brokers {
				if b.State == Alive {
					names = append(names, b.Name)
				}
			}
			moved := func(placed []string) int {
				m := 0
				for i := range placed {
					if placed[i] != serving[i] {
						m++
					}
				}
				return m
			}
			m := moved(PlaceSlots(a.ConsumerGroups.Slots, serving, names))
			if m > 3 {
				t.Errorf("n=%d, kaas-%d unregistered: %d slots moved", n, d, m)
			}
			worst, kept, afresh = max(worst, m), kept+m, afresh+moved(PlaceSlots(a.ConsumerGroups.Slots, nil, names))
		}
	}
	if kept*5 > afresh {
		t.Errorf("%d slots moved in all, %d without serving", kept, afresh)
	}
	t.Logf("at most %d slots moved; %d in all, %d without serving", worst, kept, afresh)
}

// Coordinators answers as CoordinatorFor and NextCoordinatorFor do, held
// slots and slots that fell included.
func TestCoordinatorsAgree(t *testing.T) {
	groups := make([]string, GroupSlotCount)
	for s := range groups {
		groups[s] = groupForSlot(t, s, GroupSlotCount)
	}
	for _, a := range []*Assignment{nil, cluster(3), cluster(3, 1), cluster(5, 0, 3), cluster(2, 0, 1)} {
		if a != nil {
			a.ConsumerGroups.Held = []int{1, 7}
		}
		current, next := Coordinators(a)
		for _, g := range groups {
			b1, ok1 := current(g)
			b2, ok2 := CoordinatorFor(g, a)
			n1, nok1 := next(g)
			n2, nok2 := NextCoordinatorFor(g, a)
			if b1 != b2 || ok1 != ok2 || n1 != n2 || nok1 != nok2 {
				t.Fatalf("group %s: Coordinators %v %v / %v %v, the functions %v %v / %v %v", g, b1, ok1, n1, nok1, b2, ok2, n2, nok2)
			}
		}
	}
}
