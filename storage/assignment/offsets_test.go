package assignment

import (
	"fmt"
	"slices"
	"testing"
)

// SlotLeaders shows a dead broker's slot led where it falls, like CoordinatorFor, and shows held
// slots leaderless: the leaders __consumer_offsets is shown with.
func TestSlotLeaders(t *testing.T) {
	a := &Assignment{
		Brokers: []Broker{
			{ID: 0, Name: "kaas-0", State: Alive},
			{ID: 1, Name: "kaas-1", State: Dead},
			{ID: 2, Name: "kaas-2", State: Alive},
			{ID: 3, Name: "kaas-3", State: Alive},
		},
		ConsumerGroups: ConsumerGroups{Slots: []string{"kaas-0", "kaas-1", "kaas-2", "kaas-3"}, Held: []int{3}},
	}
	if got, want := SlotLeaders(a), []int32{0, 0, 2, -1}; !slices.Equal(got, want) {
		t.Fatalf("SlotLeaders = %v, want %v", got, want)
	}
	for i, id := range SlotLeaders(a) {
		if id < 0 {
			continue
		}
		g := groupForSlot(t, i, len(a.ConsumerGroups.Slots))
		if b, ok := CoordinatorFor(g, a); !ok || b.ID != id {
			t.Fatalf("slot %d shown led by %d, group %q coordinated by %d", i, id, g, b.ID)
		}
	}
}

func TestSetSlotEpochs(t *testing.T) {
	first := doc(3, nil, nil)
	SetSlotEpochs(nil, first)
	if e := first.ConsumerGroups.Epochs; len(e) != GroupSlotCount || slices.ContainsFunc(e, func(x int32) bool { return x != 1 }) {
		t.Fatalf("first file: epochs %v, want 1 each", e)
	}
	// kaas-1 dies: its slots' partitions go to the brokers they fall to
	// (epoch 2); the others keep theirs.
	next := doc(3, []int{1}, nil)
	SetSlotEpochs(first, next)
	for i, e := range next.ConsumerGroups.Epochs {
		if want := int32(1 + btoi(i%3 == 1)); e != want {
			t.Fatalf("slot %d: epoch %d, want %d", i, e, want)
		}
	}
	// Slot 4 held: leaderless, a new epoch; granted again, another.
	held := doc(3, []int{1}, nil)
	held.ConsumerGroups.Held = []int{4}
	SetSlotEpochs(next, held)
	granted := doc(3, []int{1}, nil)
	SetSlotEpochs(held, granted)
	if h, g := held.ConsumerGroups.Epochs[4], granted.ConsumerGroups.Epochs[4]; h != 3 || g != 4 || granted.ConsumerGroups.Epochs[0] != 1 {
		t.Fatalf("held %d, granted %d, slot 0 %d", h, g, granted.ConsumerGroups.Epochs[0])
	}
	// Encoded and decoded with the file.
	b, err := Encode(granted)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil || !slices.Equal(back.ConsumerGroups.Epochs, granted.ConsumerGroups.Epochs) {
		t.Fatalf("round trip: %v %v", back.ConsumerGroups.Epochs, err)
	}
	granted.ConsumerGroups.Epochs = granted.ConsumerGroups.Epochs[:3]
	if err := granted.Validate(); err == nil {
		t.Fatal("3 epochs for 50 slots validated")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Diff takes, relinquishes and re-epochs the slots' partitions of
// __consumer_offsets with their slots, sorted among the user topics'.
func TestDiffOffsetsPartitions(t *testing.T) {
	withEpochs := func(a, prev *Assignment) *Assignment {
		SetSlotEpochs(prev, a)
		return a
	}
	old := withEpochs(doc(3, nil, map[string]string{"a": "A:1/0", "z": "Z:1/0"}), nil)
	next := withEpochs(doc(3, []int{0}, map[string]string{"a": "A:1/0", "z": "Z:1/0"}), old)
	d := Diff(old, next, 1, "kaas-1")
	var want string
	for _, i := range []int{0, 3, 6, 9, 21, 24, 27, 42} { // kaas-0's slots falling to kaas-1
		want += fmt.Sprintf("%s(%s)/%d@2 ", OffsetsTopic, OffsetsTopicID, i)
	}
	if got := refs(d.Take); got != want {
		t.Fatalf("take %q, want the partitions of kaas-0's slots falling to kaas-1, at epoch 2: %q", got, want)
	}
	if d.Relinquish != nil || d.EpochChanged != nil {
		t.Fatalf("relinquish %v, epoch changed %v", d.Relinquish, d.EpochChanged)
	}
	// Without epochs (a list of one slot per broker) no partition of it is led.
	if d := Diff(nil, doc(3, nil, nil), 1, "kaas-1"); d.Take != nil {
		t.Fatalf("take %v from a file without slot epochs", refs(d.Take))
	}
	// A user topic of that name is hidden: never taken.
	hidden := withEpochs(doc(2, nil, map[string]string{OffsetsTopic: "U:1/0"}), nil)
	for _, r := range Diff(nil, hidden, 1, "kaas-1").Take {
		if r.TopicID != OffsetsTopicID {
			t.Fatalf("took the user topic's partition %+v", r)
		}
	}
	// Taken on one side, relinquished on the other.
	back := withEpochs(doc(3, nil, map[string]string{"a": "A:1/0", "z": "Z:1/0"}), next)
	d = Diff(next, back, 1, "kaas-1")
	if len(d.Relinquish) != 8 || d.Relinquish[0].Topic != OffsetsTopic || d.Relinquish[0].LeaderEpoch != 2 {
		t.Fatalf("relinquish %q", refs(d.Relinquish))
	}
	d = Diff(next, back, 0, "kaas-0")
	if len(d.Take) != 17 || d.Take[0].LeaderEpoch != 3 {
		t.Fatalf("kaas-0 takes back %q", refs(d.Take))
	}
}
