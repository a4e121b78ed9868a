package assignment

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestJavaStringHashCode(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"Aa", 2112},
		{"BB", 2112}, // the classic collision
		{"hello", 99162322},
		{"Hello World", -862545276},
		{"polygenelubricants", math.MinInt32},
		{"é", 0xe9},
		{"😀", 0xd83d*31 + 0xde00}, // a surrogate pair in UTF-16
	} {
		if got := JavaStringHashCode(tc.s); got != tc.want {
			t.Errorf("hashCode(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestKafkaAbs(t *testing.T) {
	for in, want := range map[int32]int32{0: 0, 5: 5, -5: 5, math.MaxInt32: math.MaxInt32, -math.MaxInt32: math.MaxInt32, math.MinInt32: 0} {
		if got := KafkaAbs(in); got != want {
			t.Errorf("KafkaAbs(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestSlotFor(t *testing.T) {
	// Utils.abs("Hello World".hashCode()) % 50 == 862545276 % 50 == 26, the
	// __consumer_offsets partition Kafka would use with 50 partitions.
	if got := SlotFor("Hello World", 50); got != 26 {
		t.Fatalf("SlotFor = %d", got)
	}
	if got := SlotFor("polygenelubricants", 7); got != 0 {
		t.Fatalf("MinInt32 hash: slot %d", got)
	}
	if SlotFor("x", 0) != -1 {
		t.Fatal("no slots")
	}
	for _, g := range []string{"", "a", "group-1", "orders-consumer", "Hello World"} {
		if s := SlotFor(g, 3); s < 0 || s >= 3 {
			t.Fatalf("slot %d out of range", s)
		}
	}
}

func ring(states ...BrokerState) *Assignment {
	a := &Assignment{Format: 1, Controller: "kaas-0"}
	for i, st := range states {
		name := "kaas-" + string(rune('0'+i))
		a.Brokers = append(a.Brokers, Broker{ID: int32(i), Name: name, State: st})
		a.ConsumerGroups.Slots = append(a.ConsumerGroups.Slots, name)
	}
	return a
}

// groupForSlot finds a group id that hashes to slot i of n.
func groupForSlot(t *testing.T, i, n int) string {
	for k := 0; k < 10000; k++ {
		g := "group-" + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + string(rune('a'+k/676))
		if SlotFor(g, n) == i {
			return g
		}
	}
	t.Fatalf("no group for slot %d", i)
	return ""
}

func TestCoordinatorFor(t *testing.T) {
	a := ring(Alive, Alive, Alive)
	for i := 0; i < 3; i++ {
		if b, ok := CoordinatorFor(groupForSlot(t, i, 3), a); !ok || b.ID != int32(i) {
			t.Errorf("slot %d -> %v %v", i, b, ok)
		}
	}
	// A slot whose broker is not alive falls to an alive broker; with one
	// alive, to it.
	a = ring(Alive, Dead, Draining)
	for slot, want := range map[int]int32{0: 0, 1: 0, 2: 0} {
		if b, ok := CoordinatorFor(groupForSlot(t, slot, 3), a); !ok || b.ID != want {
			t.Errorf("slot %d -> %v, want %d", slot, b, want)
		}
	}
	a = ring(Dead, Alive, Alive)
	if b, _ := CoordinatorFor(groupForSlot(t, 0, 3), a); b.ID != 1 {
		t.Errorf("dead slot 0 -> %d, want 1 (slotRank)", b.ID)
	}
	if owners := SlotOwners(ring(Dead, Alive, Draining, Alive)); !slices.Equal(owners, []string{"kaas-3", "kaas-1", "kaas-1", "kaas-3"}) {
		t.Errorf("owners %v", owners)
	}
	if _, ok := CoordinatorFor("g", ring(Dead, Draining)); ok {
		t.Error("no alive broker, yet a coordinator")
	}
	if _, ok := CoordinatorFor("g", ring()); ok {
		t.Error("no slots, yet a coordinator")
	}
	if _, ok := CoordinatorFor("g", nil); ok {
		t.Error("nil assignment, yet a coordinator")
	}
	// A slot naming a broker missing from the rows counts as not alive:
	// it falls to kaas-1, which serves fewer slots.
	a = ring(Alive, Alive)
	a.ConsumerGroups.Slots[1] = "ghost"
	if b, _ := CoordinatorFor(groupForSlot(t, 1, 2), a); b.ID != 1 {
		t.Errorf("ghost slot -> %d", b.ID)
	}
}

func TestHeldSlotHasNoCoordinator(t *testing.T) {
	a := &Assignment{Format: 1, Controller: "kaas-0", Brokers: []Broker{{ID: 0, Name: "kaas-0", State: Alive}, {ID: 1, Name: "kaas-1", State: Alive}},
		Topics: map[string]Topic{}, ConsumerGroups: ConsumerGroups{Slots: []string{"kaas-0", "kaas-1"}}}
	g := "some-group"
	if _, ok := CoordinatorFor(g, a); !ok {
		t.Fatal("no coordinator before the hold")
	}
	a.ConsumerGroups.Held = []int{SlotFor(g, 2)}
	if _, ok := CoordinatorFor(g, a); ok {
		t.Fatal("a held slot still has a coordinator")
	}
	data, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(data)
	if err != nil || !slices.Equal(back.ConsumerGroups.Held, a.ConsumerGroups.Held) {
		t.Fatalf("held slots did not round-trip: %v %v", err, back)
	}
	a.ConsumerGroups.Held = []int{5}
	if err := a.Validate(); err == nil {
		t.Fatal("out-of-range held slot accepted")
	}
}

func TestNextCoordinatorForAHeldSlot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		a     *Assignment
		held  []int
		slot  int
		want  int32
		found bool
	}{
		{"not held", ring(Alive, Alive, Alive), nil, 1, 1, true},
		{"held: the slot's broker", ring(Alive, Alive, Alive), []int{1}, 1, 1, true},
		{"held, its broker dead: where it falls", ring(Alive, Dead, Alive), []int{1}, 1, 0, true},
		{"no alive broker", ring(Dead, Dead), []int{0}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.a.ConsumerGroups.Held = tc.held
			g := groupForSlot(t, tc.slot, len(tc.a.ConsumerGroups.Slots))
			b, ok := NextCoordinatorFor(g, tc.a)
			if ok != tc.found || (ok && b.ID != tc.want) {
				t.Fatalf("NextCoordinatorFor = %d %v, want %d %v", b.ID, ok, tc.want, tc.found)
			}
			if _, ok := CoordinatorFor(g, tc.a); ok && len(tc.held) > 0 {
				t.Fatal("CoordinatorFor answers a held slot")
			}
		})
	}
	if _, ok := NextCoordinatorFor("g", nil); ok {
		t.Error("nil assignment, yet a coordinator")
	}
}

func TestPlaceSlots(t *testing.T) {
	names := func(ids ...int) []string {
		var out []string
		for _, i := range ids {
			out = append(out, fmt.Sprintf("kaas-%d", i))
		}
		return out
	}
	upTo := func(n int) []string {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		return names(ids...)
	}
	counts := func(slots []string) map[string]int {
		c := map[string]int{}
		for _, s := range slots {
			c[s]++
		}
		return c
	}
	moved := func(a, b []string) int {
		n := 0
		for i := range a {
			if a[i] != b[i] {
				n++
			}
		}
		return n
	}
	if got := PlaceSlots(nil, nil, nil); got == nil || len(got) != 0 {
		t.Fatalf("no brokers: %v", got)
	}
	three := PlaceSlots(nil, nil, upTo(3))
	if len(three) != GroupSlotCount || three[0] != "kaas-0" || three[1] != "kaas-1" || three[2] != "kaas-2" || three[49] != "kaas-1" {
		t.Fatalf("fresh: %v", three)
	}
	if got := PlaceSlots([]string{"kaas-0", "kaas-1", "kaas-2"}, nil, upTo(3)); !slices.Equal(got, three) {
		t.Fatalf("a list of one slot per broker is not the round robin: %v", got)
	}
	if got := PlaceSlots(three, nil, upTo(3)); !slices.Equal(got, three) {
		t.Fatalf("the same brokers moved slots: %v", got)
	}

	four := PlaceSlots(three, nil, upTo(4))
	if c := counts(four); c["kaas-0"] != 13 || c["kaas-1"] != 13 || c["kaas-2"] != 12 || c["kaas-3"] != 12 {
		t.Fatalf("3 to 4 brokers: %v", c)
	}
	if m := moved(three, four); m != 12 {
		t.Fatalf("3 to 4 brokers moved %d slots, want the new broker's 12", m)
	}
	for i := range three {
		if three[i] != four[i] && four[i] != "kaas-3" {
			t.Fatalf("slot %d moved from %s to %s, not to the new broker", i, three[i], four[i])
		}
	}

	// kaas-1 unregistered: only its slots move, spread over the others.
	two := PlaceSlots(three, nil, names(0, 2))
	if c := counts(two); c["kaas-0"] != 25 || c["kaas-2"] != 25 {
		t.Fatalf("3 to 2 brokers: %v", c)
	}
	for i := range three {
		if three[i] != "kaas-1" && two[i] != three[i] {
			t.Fatalf("slot %d moved from %s, which stays", i, three[i])
		}
	}

	// More brokers than slots: one slot each for 50 of them; growing
	// further moves none.
	fifty := PlaceSlots(nil, nil, upTo(50))
	if got := PlaceSlots(fifty, nil, upTo(60)); !slices.Equal(got, fifty) {
		t.Fatalf("50 to 60 brokers moved slots: %v", got)
	}
	if c := counts(PlaceSlots(nil, nil, upTo(60))); len(c) != GroupSlotCount {
		t.Fatalf("60 brokers: %d serve a slot", len(c))
	}
}
