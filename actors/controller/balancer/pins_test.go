package balancer

import (
	"slices"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

func pin(c *cluster, topic string, pins ...assignment.Pin) {
	t := c.topics[topic]
	t.Pins = pins
	c.topics[topic] = t
}

// A pinned partition goes to its broker and stays there; the others even
// out around it; a pin to a broker that is not alive is placed like any
// other partition until the broker is back.
func TestPinnedPartitions(t *testing.T) {
	c := newCluster(3)
	c.addTopic("orders", 6)
	c.addTopic("events", 3)
	if _, _, err := c.step(); err != nil {
		t.Fatal(err)
	}
	// Pin every orders partition to broker 2: a reassignment of all of them.
	all := make([]assignment.Pin, 6)
	for p := range all {
		all[p] = assignment.Pin{Partition: int32(p), Broker: 2}
	}
	pin(c, "orders", all...)
	out, moves, err := c.step()
	if err != nil {
		t.Fatal(err)
	}
	for p, part := range out.Topics["orders"].Partitions {
		if part.Leader != 2 {
			t.Fatalf("orders-%d led by %d, pinned to 2", p, part.Leader)
		}
	}
	if !slices.Equal(out.Topics["orders"].Pins, all) {
		t.Fatalf("pins in the assignment: %v", out.Topics["orders"].Pins)
	}
	// events evens out around them: broker 2 leads none of it.
	for p, part := range out.Topics["events"].Partitions {
		if part.Leader == 2 {
			t.Fatalf("events-%d on the broker leading 6 pinned partitions (moves %v)", p, moves)
		}
	}
	if err := out.Validate(); err != nil {
		t.Fatal(err)
	}
	// Stable: a recompute moves nothing.
	if _, again, err := c.step(); err != nil || len(again) != 0 {
		t.Fatalf("recompute moved %v (%v)", again, err)
	}

	// Broker 2 dies: its pinned partitions are placed elsewhere, the pins
	// kept; when it returns they go back.
	c.setBroker(2, assignment.Dead)
	out, _, err = c.step()
	if err != nil {
		t.Fatal(err)
	}
	for p, part := range out.Topics["orders"].Partitions {
		if part.Leader == 2 || part.Leader < 0 {
			t.Fatalf("orders-%d led by %d with broker 2 dead", p, part.Leader)
		}
	}
	if len(out.Topics["orders"].Pins) != 6 {
		t.Fatalf("pins dropped while the broker is dead: %v", out.Topics["orders"].Pins)
	}
	c.setBroker(2, assignment.Alive)
	out, _, err = c.step()
	if err != nil {
		t.Fatal(err)
	}
	for p, part := range out.Topics["orders"].Partitions {
		if part.Leader != 2 {
			t.Fatalf("orders-%d led by %d after broker 2 returned", p, part.Leader)
		}
	}

	// Unpinned (cancelled): the balancer evens the topic out again.
	pin(c, "orders")
	out, _, err = c.step()
	if err != nil {
		t.Fatal(err)
	}
	_, total, per := counts(out)
	if spread(total) > 1 || spread(per["orders"]) > 1 || out.Topics["orders"].Pins != nil {
		t.Fatalf("after unpinning: totals %v, orders %v, pins %v", total, per["orders"], out.Topics["orders"].Pins)
	}
}

func TestPinsIn(t *testing.T) {
	got := pinsIn([]assignment.Pin{{Partition: 3, Broker: 1}, {Partition: 0, Broker: 2}, {Partition: 9, Broker: 0}, {Partition: 3, Broker: 0}, {Partition: -1, Broker: 0}}, 4)
	want := []assignment.Pin{{Partition: 0, Broker: 2}, {Partition: 3, Broker: 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("pinsIn = %v, want %v", got, want)
	}
	if pinsIn(nil, 4) != nil {
		t.Fatal("no pins is nil")
	}
}
