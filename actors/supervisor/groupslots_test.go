package supervisor

import (
	"slices"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

// groupSlots walks past dead slots like CoordinatorFor and shows held slots
// leaderless: the leaders __consumer_offsets is shown with.
func TestGroupSlots(t *testing.T) {
	a := &assignment.Assignment{
		Brokers: []assignment.Broker{
			{ID: 0, Name: "kaas-0", State: assignment.Alive},
			{ID: 1, Name: "kaas-1", State: assignment.Dead},
			{ID: 2, Name: "kaas-2", State: assignment.Alive},
			{ID: 3, Name: "kaas-3", State: assignment.Alive},
		},
		ConsumerGroups: assignment.ConsumerGroups{Slots: []string{"kaas-0", "kaas-1", "kaas-2", "kaas-3"}, Held: []int{3}},
	}
	if got, want := groupSlots(a), []int32{0, 2, 2, -1}; !slices.Equal(got, want) {
		t.Fatalf("groupSlots = %v, want %v", got, want)
	}
	for i, id := range groupSlots(a) {
		if id < 0 {
			continue
		}
		g := groupInSlot(t, i, len(a.ConsumerGroups.Slots))
		if b, ok := assignment.CoordinatorFor(g, a); !ok || b.ID != id {
			t.Fatalf("slot %d shown led by %d, group %q coordinated by %d", i, id, g, b.ID)
		}
	}
}

// groupInSlot finds a group name hashed to slot i of n.
func groupInSlot(t *testing.T, i, n int) string {
	for k := range 10000 {
		g := "g" + string(rune('a'+k%26)) + string(rune('a'+k/26%26)) + string(rune('a'+k/676))
		if assignment.SlotFor(g, n) == i {
			return g
		}
	}
	t.Fatalf("no group in slot %d", i)
	return ""
}
