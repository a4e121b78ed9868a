package balancer

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

func (c *cluster) cordon(i int, on bool) {
	b := c.brokers[bname(i)]
	b.Cordoned = on
	c.brokers[bname(i)] = b
}

// ledBy counts the partitions each broker id leads.
func ledBy(a *assignment.Assignment) map[int32]int {
	m := map[int32]int{}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			m[p.Leader]++
		}
	}
	return m
}

// TestCordonedBroker: a cordoned broker keeps what it leads and takes
// nothing new (new topics, a dead broker's partitions, evening out); once
// uncordoned it is evened out like any other.
func TestCordonedBroker(t *testing.T) {
	c := newCluster(3)
	c.addTopic("a", 6)
	mustStep(t, c)
	c.cordon(2, true)
	if _, moves := mustStep(t, c); len(moves) != 0 {
		t.Fatalf("cordoning moved %v", moves)
	}
	c.addTopic("b", 4)
	out, _ := mustStep(t, c)
	for p, part := range out.Topics["b"].Partitions {
		if part.Leader == 2 {
			t.Fatalf("new partition b/%d placed on the cordoned kaas-2", p)
		}
	}
	if got := ledBy(out); got[0] != 4 || got[1] != 4 || got[2] != 2 {
		t.Fatalf("leaders with kaas-2 cordoned: %v, want 4/4/2", got)
	}
	c.setBroker(1, assignment.Dead)
	out, moves := mustStep(t, c)
	for _, m := range moves {
		if m.From != 1 || m.To != 0 {
			t.Fatalf("kaas-1 died, kaas-2 cordoned: move %+v", m)
		}
	}
	if got := ledBy(out); got[0] != 8 || got[2] != 2 {
		t.Fatalf("leaders with kaas-1 dead: %v, want kaas-0 8, kaas-2 2", got)
	}
	c.setBroker(1, assignment.Alive)
	c.cordon(2, false)
	out, _ = mustStep(t, c)
	if got := ledBy(out); spread(got) > 1 {
		t.Fatalf("uncordoned: leaders %v, want a spread of at most one", got)
	}
}

// TestEveryBrokerCordoned: with no uncordoned broker alive, partitions
// still get leaders (a leaderless partition is unavailable), and the
// cordoned brokers keep theirs.
func TestEveryBrokerCordoned(t *testing.T) {
	c := newCluster(2)
	c.addTopic("a", 4)
	mustStep(t, c)
	c.cordon(0, true)
	c.cordon(1, true)
	c.addTopic("b", 2)
	out, moves := mustStep(t, c)
	for _, m := range moves {
		if m.From != assignment.NoLeader {
			t.Fatalf("every broker cordoned: an existing partition moved: %+v", m)
		}
	}
	if got := ledBy(out); got[0]+got[1] != 6 {
		t.Fatalf("leaders: %v", got)
	}
}

// TestPinToCordonedBroker: an explicit pin wins over the cordon.
func TestPinToCordonedBroker(t *testing.T) {
	c := newCluster(2)
	c.addTopic("a", 2)
	c.cordon(1, true)
	spec := c.topics["a"]
	spec.Pins = []assignment.Pin{{Partition: 0, Broker: 1}}
	c.topics["a"] = spec
	out, _ := mustStep(t, c)
	if l := out.Topics["a"].Partitions; l[0].Leader != 1 || l[1].Leader != 0 {
		t.Fatalf("leaders %+v, want partition 0 on its pinned (cordoned) kaas-1, 1 on kaas-0", l)
	}
}

// TestPropertyCordonHistories: random histories with brokers cordoned and
// uncordoned. Every output: no partition newly led by a cordoned broker
// while an uncordoned one is alive; every partition an alive cordoned
// broker led stays; both spreads at most one over the uncordoned alive
// brokers (there are no pins); every partition led by an alive broker.
func TestPropertyCordonHistories(t *testing.T) {
	for seed := 0; seed < scale(300, 40); seed++ {
		r := rand.New(rand.NewSource(int64(seed)))
		const maxBrokers = 6
		c := newCluster(1 + r.Intn(maxBrokers))
		for step := 0; step < 30; step++ {
			ev := "cordon"
			if r.Intn(3) == 0 {
				i := r.Intn(maxBrokers)
				if _, ok := c.brokers[bname(i)]; ok {
					c.cordon(i, r.Intn(2) == 0)
				}
			} else {
				ev = c.randomEvent(r, maxBrokers, 6, 12)
			}
			in := c.input()
			out, moves, err := c.step()
			if err == nil {
				err = checkCordons(in, out, moves)
			}
			if err != nil {
				t.Fatalf("seed %d step %d (%s): %v", seed, step, ev, err)
			}
		}
	}
}

func checkCordons(in Input, out *assignment.Assignment, moves Moves) error {
	if _, err := assignment.Encode(out); err != nil {
		return fmt.Errorf("output does not validate: %w", err)
	}
	alive, cordoned, open := map[int32]bool{}, map[int32]bool{}, map[int32]bool{}
	for _, b := range out.Brokers {
		alive[b.ID] = b.State == assignment.Alive
	}
	for _, b := range in.Brokers {
		id, _ := BrokerID(b.Name)
		cordoned[id] = b.Cordoned
	}
	for id, a := range alive {
		if a && !cordoned[id] {
			open[id] = true
		}
	}
	for _, m := range moves {
		if len(open) > 0 && cordoned[m.To] {
			return fmt.Errorf("move %+v onto a cordoned broker", m)
		}
		if m.From != assignment.NoLeader && alive[m.From] && cordoned[m.From] {
			if p := in.Previous.Topics[m.Topic]; p.ID == in.Topics[m.Topic].ID {
				return fmt.Errorf("move %+v off an alive cordoned broker", m)
			}
		}
	}
	total, perTopic := map[int32]int{}, map[string]map[int32]int{}
	for id := range open {
		total[id] = 0
	}
	for name, t := range out.Topics {
		perTopic[name] = map[int32]int{}
		for id := range open {
			perTopic[name][id] = 0
		}
		for p, part := range t.Partitions {
			if !alive[part.Leader] {
				return fmt.Errorf("%s/%d led by %d, not alive", name, p, part.Leader)
			}
			if open[part.Leader] {
				total[part.Leader]++
				perTopic[name][part.Leader]++
			}
		}
	}
	if s := spread(total); s > 1 {
		return fmt.Errorf("cluster-wide spread %d over the uncordoned brokers %v", s, total)
	}
	for name, m := range perTopic {
		if s := spread(m); s > 1 {
			return fmt.Errorf("topic %s: spread %d over the uncordoned brokers %v", name, s, m)
		}
	}
	return nil
}

func mustStep(t *testing.T, c *cluster) (*assignment.Assignment, Moves) {
	t.Helper()
	out, moves, err := c.step()
	if err != nil {
		t.Fatal(err)
	}
	return out, moves
}
