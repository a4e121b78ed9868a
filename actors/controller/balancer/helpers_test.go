package balancer

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strconv"

	"github.com/kaas-project/kaas/storage/assignment"
)

// cluster is a mutable model of the controller's inputs, for building
// histories in tests.
type cluster struct {
	controller string
	epoch      int64
	brokers    map[string]BrokerInfo
	topics     map[string]TopicSpec
	prev       *assignment.Assignment
	nextID     int
}

func newCluster(brokers int) *cluster {
	c := &cluster{controller: "kaas-0", epoch: 1, brokers: map[string]BrokerInfo{}, topics: map[string]TopicSpec{}}
	for i := 0; i < brokers; i++ {
		c.setBroker(i, assignment.Alive)
	}
	return c
}

func bname(i int) string { return "kaas-" + strconv.Itoa(i) }

func (c *cluster) setBroker(i int, st assignment.BrokerState) {
	c.brokers[bname(i)] = BrokerInfo{Name: bname(i), Host: bname(i) + ".kaas.ns.svc", Port: 9092, State: st}
}

func (c *cluster) addTopic(name string, parts int) {
	c.nextID++
	c.topics[name] = TopicSpec{ID: fmt.Sprintf("id-%d", c.nextID), Partitions: parts, Config: map[string]string{"retention.ms": "1000"}}
}

func (c *cluster) input() Input {
	in := Input{Previous: c.prev, Controller: c.controller, ControllerEpoch: c.epoch,
		ControllerHeartbeat: c.controller + ".kaas.ns.svc:9094", Topics: map[string]TopicSpec{}}
	names := make([]string, 0, len(c.brokers))
	for n := range c.brokers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		in.Brokers = append(in.Brokers, c.brokers[n])
	}
	for n, t := range c.topics {
		in.Topics[n] = t
	}
	return in
}

// step computes from the current inputs and makes the result the previous.
func (c *cluster) step() (*assignment.Assignment, Moves, error) {
	out, moves, err := Compute(c.input())
	if err == nil {
		c.prev = out
	}
	return out, moves, err
}

// randomEvent mutates c like a cluster's life would: brokers join, die,
// drain, return, leave the input; topics are created, grown, deleted and
// recreated; the controller changes.
func (c *cluster) randomEvent(r *rand.Rand, maxBrokers, maxTopics, maxParts int) string {
	switch k := r.Intn(12); {
	case k < 2: // broker joins or returns
		i := r.Intn(maxBrokers)
		c.setBroker(i, assignment.Alive)
		return "alive " + bname(i)
	case k < 4: // broker dies, drains or disappears from the input
		i := r.Intn(maxBrokers)
		switch r.Intn(3) {
		case 0:
			c.setBroker(i, assignment.Dead)
			return "dead " + bname(i)
		case 1:
			c.setBroker(i, assignment.Draining)
			return "draining " + bname(i)
		default:
			delete(c.brokers, bname(i))
			return "gone " + bname(i)
		}
	case k < 7: // new topic
		name := "t" + strconv.Itoa(r.Intn(maxTopics))
		if _, ok := c.topics[name]; ok {
			return "noop"
		}
		c.addTopic(name, 1+r.Intn(maxParts))
		return "create " + name
	case k < 8: // grow
		for _, n := range sortedTopicNames(c.topics) {
			if r.Intn(2) == 0 {
				t := c.topics[n]
				t.Partitions += 1 + r.Intn(maxParts/2+1)
				c.topics[n] = t
				return "grow " + n
			}
		}
		return "noop"
	case k < 9: // delete
		for _, n := range sortedTopicNames(c.topics) {
			if r.Intn(3) == 0 {
				delete(c.topics, n)
				return "delete " + n
			}
		}
		return "noop"
	case k < 10: // recreate (same name, new id)
		for _, n := range sortedTopicNames(c.topics) {
			if r.Intn(3) == 0 {
				c.addTopic(n, 1+r.Intn(maxParts))
				return "recreate " + n
			}
		}
		return "noop"
	case k < 11: // controller change
		c.epoch++
		c.controller = bname(r.Intn(maxBrokers))
		return "controller " + c.controller
	default: // config change
		for _, n := range sortedTopicNames(c.topics) {
			t := c.topics[n]
			t.Config = map[string]string{"retention.ms": strconv.Itoa(r.Intn(5))}
			c.topics[n] = t
			return "config " + n
		}
		return "noop"
	}
}

func sortedTopicNames(m map[string]TopicSpec) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// counts returns per alive broker id the partitions led, overall and per
// topic.
func counts(a *assignment.Assignment) (alive []int32, total map[int32]int, perTopic map[string]map[int32]int) {
	total = map[int32]int{}
	perTopic = map[string]map[int32]int{}
	for _, b := range a.Brokers {
		if b.State == assignment.Alive {
			alive = append(alive, b.ID)
			total[b.ID] = 0
		}
	}
	for name, t := range a.Topics {
		pt := map[int32]int{}
		for _, id := range alive {
			pt[id] = 0
		}
		for _, p := range t.Partitions {
			total[p.Leader]++
			pt[p.Leader]++
		}
		perTopic[name] = pt
	}
	return alive, total, perTopic
}

func spread(m map[int32]int) int {
	lo, hi, first := 0, 0, true
	for _, v := range m {
		if first || v < lo {
			lo = v
		}
		if first || v > hi {
			hi = v
		}
		first = false
	}
	return hi - lo
}

// checkOutput verifies every invariant that holds for any single recompute.
func checkOutput(in Input, out *assignment.Assignment, moves Moves) error {
	prev := in.Previous
	data, err := assignment.Encode(out)
	if err != nil {
		return fmt.Errorf("output does not validate: %w", err)
	}
	if out.ControllerEpoch != in.ControllerEpoch || out.Controller != in.Controller {
		return fmt.Errorf("controller/epoch not taken from input")
	}

	// Broker rows: the registered set, states resolved, controller alive.
	want := map[int32]assignment.Broker{}
	if prev != nil {
		for _, b := range prev.Brokers {
			b.State = assignment.Dead
			want[b.ID] = b
		}
	}
	for _, b := range in.Brokers {
		id, _ := BrokerID(b.Name)
		want[id] = assignment.Broker{ID: id, Name: b.Name, Host: b.Host, Port: b.Port, Rack: b.Rack, Listeners: b.Listeners, State: b.State}
	}
	cid, _ := BrokerID(in.Controller)
	cb := want[cid]
	cb.ID, cb.Name, cb.State = cid, in.Controller, assignment.Alive
	want[cid] = cb
	if len(out.Brokers) != len(want) {
		return fmt.Errorf("broker rows: got %d, want %d", len(out.Brokers), len(want))
	}
	for i, b := range out.Brokers {
		if i > 0 && out.Brokers[i-1].ID >= b.ID {
			return fmt.Errorf("broker rows not sorted by id")
		}
		if want[b.ID] != b {
			return fmt.Errorf("broker row %+v, want %+v", b, want[b.ID])
		}
	}
	if err := checkSlots(prev, out); err != nil {
		return err
	}

	// Topics: exactly the input's, never shrunk.
	if len(out.Topics) != len(in.Topics) {
		return fmt.Errorf("topics: got %d, want %d", len(out.Topics), len(in.Topics))
	}
	parts := 0
	for name, spec := range in.Topics {
		t, ok := out.Topics[name]
		if !ok || t.ID != spec.ID {
			return fmt.Errorf("topic %q missing or wrong id", name)
		}
		n := spec.Partitions
		if prev != nil {
			if pt, ok := prev.Topics[name]; ok && pt.ID == spec.ID && len(pt.Partitions) > n {
				n = len(pt.Partitions)
			}
		}
		if len(t.Partitions) != n {
			return fmt.Errorf("topic %q: %d partitions, want %d", name, len(t.Partitions), n)
		}
		parts += n
		for p, part := range t.Partitions {
			if part.Leader == assignment.NoLeader {
				return fmt.Errorf("topic %q partition %d has no leader", name, p)
			}
		}
	}
	if parts > 0 && len(out.Topics) == 0 {
		return fmt.Errorf("empty assignment")
	}

	// Balance.
	_, total, perTopic := counts(out)
	if s := spread(total); s > 1 {
		return fmt.Errorf("cluster-wide spread %d: %v", s, total)
	}
	for name, pt := range perTopic {
		if s := spread(pt); s > 1 {
			return fmt.Errorf("topic %q spread %d: %v", name, s, pt)
		}
	}

	// Epochs and moves.
	var wantMoves Moves
	for _, name := range out.TopicNames() {
		t := out.Topics[name]
		var pp []assignment.Partition
		if prev != nil {
			if pt, ok := prev.Topics[name]; ok && pt.ID == t.ID {
				pp = pt.Partitions
			}
		}
		for p, part := range t.Partitions {
			switch {
			case p >= len(pp):
				if part.LeaderEpoch != 0 {
					return fmt.Errorf("new partition %s/%d has epoch %d", name, p, part.LeaderEpoch)
				}
				wantMoves = append(wantMoves, Move{name, int32(p), -1, part.Leader})
			case pp[p].Leader == part.Leader:
				if part.LeaderEpoch != pp[p].LeaderEpoch {
					return fmt.Errorf("%s/%d: epoch %d -> %d without a leader change", name, p, pp[p].LeaderEpoch, part.LeaderEpoch)
				}
			default:
				if part.LeaderEpoch != pp[p].LeaderEpoch+1 {
					return fmt.Errorf("%s/%d: leader change with epoch %d -> %d", name, p, pp[p].LeaderEpoch, part.LeaderEpoch)
				}
				wantMoves = append(wantMoves, Move{name, int32(p), pp[p].Leader, part.Leader})
			}
		}
	}
	if fmt.Sprint(wantMoves) != fmt.Sprint(moves) {
		return fmt.Errorf("moves %v, want %v", moves, wantMoves)
	}

	// Version.
	switch {
	case prev == nil:
		if out.AssignmentVersion != 1 {
			return fmt.Errorf("first version %d", out.AssignmentVersion)
		}
	case assignment.SameContent(prev, out):
		if out.AssignmentVersion != prev.AssignmentVersion || len(moves) != 0 {
			return fmt.Errorf("unchanged content but version %d -> %d, %d moves", prev.AssignmentVersion, out.AssignmentVersion, len(moves))
		}
	default:
		if out.AssignmentVersion != prev.AssignmentVersion+1 {
			return fmt.Errorf("changed content but version %d -> %d", prev.AssignmentVersion, out.AssignmentVersion)
		}
	}

	// Idempotent: the same inputs again change nothing.
	again := in
	again.Previous = out
	out2, moves2, err := Compute(again)
	if err != nil {
		return fmt.Errorf("recompute: %w", err)
	}
	data2, _ := assignment.Encode(out2)
	if !bytes.Equal(data, data2) || len(moves2) != 0 {
		return fmt.Errorf("recompute with unchanged input changed something (%d moves)", len(moves2))
	}

	// Deterministic: input order does not matter.
	shuffled := in
	shuffled.Brokers = append([]BrokerInfo(nil), in.Brokers...)
	for i := len(shuffled.Brokers) - 1; i > 0; i-- {
		j := (i*7 + 3) % (i + 1)
		shuffled.Brokers[i], shuffled.Brokers[j] = shuffled.Brokers[j], shuffled.Brokers[i]
	}
	out3, _, err := Compute(shuffled)
	if err != nil {
		return fmt.Errorf("shuffled: %w", err)
	}
	data3, _ := assignment.Encode(out3)
	if !bytes.Equal(data, data3) {
		return fmt.Errorf("output depends on input order")
	}
	return nil
}

// inheritedMoves counts moves of partitions whose previous leader is still
// alive (the moves that cost a takeover without being forced by a death).
func inheritedMoves(out *assignment.Assignment, moves Moves) int {
	alive := map[int32]bool{}
	for _, b := range out.Brokers {
		if b.State == assignment.Alive {
			alive[b.ID] = true
		}
	}
	n := 0
	for _, m := range moves {
		if m.From >= 0 && alive[m.From] {
			n++
		}
	}
	return n
}

// minInheritedMoves is the exhaustive minimum number of inherited
// partitions (previous leader still alive) that any assignment with
// cluster-wide and per-topic spread <= 1 must move. Partitions of a topic on
// a broker are interchangeable, so it searches per-topic count vectors:
// x[t][b] in {floor(p_t/n), ceil(p_t/n)} with row sums p_t; the cost is
// sum max(0, kept[t][b] - x[t][b]). Small inputs only.
// It returns -1 if no such assignment exists.
func minInheritedMoves(out *assignment.Assignment, prev *assignment.Assignment) int {
	var alive []int32
	for _, b := range out.Brokers {
		if b.State == assignment.Alive {
			alive = append(alive, b.ID)
		}
	}
	n := len(alive)
	idx := map[int32]int{}
	for i, id := range alive {
		idx[id] = i
	}
	type topic struct {
		p    int
		kept []int
	}
	var topics []topic
	for _, name := range out.TopicNames() {
		t := out.Topics[name]
		tp := topic{p: len(t.Partitions), kept: make([]int, n)}
		if prev != nil {
			if pt, ok := prev.Topics[name]; ok && pt.ID == t.ID {
				for _, part := range pt.Partitions {
					if i, ok := idx[part.Leader]; ok {
						tp.kept[i]++
					}
				}
			}
		}
		topics = append(topics, tp)
	}
	best := -1
	col := make([]int, n)
	var dfs func(ti, cost int)
	dfs = func(ti, cost int) {
		if best >= 0 && cost >= best {
			return
		}
		if ti == len(topics) {
			lo, hi := col[0], col[0]
			for _, c := range col {
				lo, hi = min(lo, c), max(hi, c)
			}
			if hi-lo <= 1 {
				best = cost
			}
			return
		}
		t := topics[ti]
		fl, r := t.p/n, t.p%n
		// every subset of r brokers gets fl+1
		for mask := 0; mask < 1<<n; mask++ {
			if popcount(mask) != r {
				continue
			}
			c := cost
			for b := 0; b < n; b++ {
				x := fl
				if mask>>b&1 == 1 {
					x++
				}
				col[b] += x
				c += max(0, t.kept[b]-x)
			}
			dfs(ti+1, c)
			for b := 0; b < n; b++ {
				x := fl
				if mask>>b&1 == 1 {
					x++
				}
				col[b] -= x
			}
		}
	}
	dfs(0, 0)
	return best
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// checkSlots: GroupSlotCount slots, each naming a registered broker, each
// broker serving its even share (50/n or one more), and a slot of prev
// moved only from a broker no longer registered or one that gave up slots
// beyond its share.
func checkSlots(prev, out *assignment.Assignment) error {
	slots := out.ConsumerGroups.Slots
	if len(slots) != assignment.GroupSlotCount {
		return fmt.Errorf("slots: %d, want %d", len(slots), assignment.GroupSlotCount)
	}
	count := map[string]int{}
	for i, s := range slots {
		if _, ok := out.BrokerByName(s); !ok {
			return fmt.Errorf("slot %d names %q, which has no row", i, s)
		}
		count[s]++
	}
	n := len(out.Brokers)
	lo := assignment.GroupSlotCount / n
	for _, b := range out.Brokers {
		if c := count[b.Name]; c < lo || c > lo+1 {
			return fmt.Errorf("broker %s serves %d slots, want %d or %d", b.Name, c, lo, lo+1)
		}
	}
	if prev == nil || len(prev.ConsumerGroups.Slots) != assignment.GroupSlotCount {
		return nil
	}
	before := map[string]int{}
	for _, s := range prev.ConsumerGroups.Slots {
		before[s]++
	}
	for i, was := range prev.ConsumerGroups.Slots {
		if slots[i] == was {
			continue
		}
		if _, registered := out.BrokerByName(was); registered && count[was] >= before[was] {
			return fmt.Errorf("slot %d moved from %s to %s, which kept all its %d slots", i, was, slots[i], before[was])
		}
	}
	return nil
}
