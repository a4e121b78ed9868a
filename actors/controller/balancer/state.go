package balancer

import (
	"sort"

	"github.com/kaas-project/kaas/storage/assignment"
)

// denseMin is the partition count from which a topic keeps a dense
// per-broker count row; smaller topics count by scanning their (at most
// denseMin-1) partitions, so thousands of tiny topics on many brokers do not
// cost topics x brokers memory.
const denseMin = 17

type topicState struct {
	name  string
	spec  TopicSpec
	start int32                  // first global partition index
	count int32                  // number of partitions
	prev  []assignment.Partition // previous partitions of the same incarnation (nil: new topic)
	row   int32                  // offset of the dense count row in state.tc, -1 if none
}

// state is the working set of one Compute. Brokers are the alive ones,
// indexed 0..n-1 in id order; partitions are indexed globally, topic by topic
// in name order.
type state struct {
	n        int32
	aliveIDs []int32         // alive index -> broker id
	aliveIdx map[int32]int32 // broker id -> alive index
	topics   []topicState
	topicOf  []int32 // partition -> topic index
	leader   []int32 // partition -> alive index (-1: not placed yet)
	prevAl   []int32 // partition -> alive index of its previous leader (-1: none, or not alive)
	pinAl    []int32 // partition -> alive index of the broker it is pinned to (-1: none, or not alive)
	open     []bool  // broker -> takes partitions (false: cordoned)
	nOpen    int32
	total    []int32 // broker -> partitions led
	tc       []int32 // dense per-topic rows of per-broker counts
	scratch  []int32 // count row of a sparse topic
	stamp    []int32 // broker -> generation mark (duplicate check)
	gen      int32

	// Built on first need by buildLed.
	led [][]int32 // broker -> partitions it leads
	pos []int32   // partition -> index in led[leader]
}

func newState(rows []assignment.Broker, topics []topicIn, prev *assignment.Assignment, cordoned map[int32]bool) *state {
	s := &state{aliveIdx: make(map[int32]int32, len(rows))}
	for _, r := range rows {
		if r.State == assignment.Alive {
			s.aliveIdx[r.ID] = int32(len(s.aliveIDs))
			s.aliveIDs = append(s.aliveIDs, r.ID)
			s.open = append(s.open, !cordoned[r.ID])
			if !cordoned[r.ID] {
				s.nOpen++
			}
		}
	}
	s.n = int32(len(s.aliveIDs)) // >= 1: the controller is always alive
	if s.nOpen == 0 {            // every alive broker cordoned: availability first
		for b := range s.open {
			s.open[b] = true
		}
		s.nOpen = s.n
	}
	s.topics = make([]topicState, len(topics))
	var total, dense int32
	for i, t := range topics {
		ts := topicState{name: t.name, spec: t.spec, start: total, count: int32(t.spec.Partitions), row: -1}
		if prev != nil {
			if pt, ok := prev.Topics[t.name]; ok && pt.ID == t.spec.ID {
				ts.prev = pt.Partitions
				if int32(len(pt.Partitions)) > ts.count {
					ts.count = int32(len(pt.Partitions)) // never shrink
				}
			}
		}
		if ts.count >= denseMin {
			ts.row = dense
			dense += s.n
		}
		total += ts.count
		s.topics[i] = ts
	}
	s.topicOf = make([]int32, total)
	s.leader = make([]int32, total)
	s.prevAl = make([]int32, total)
	s.pinAl = make([]int32, total)
	s.total = make([]int32, s.n)
	s.tc = make([]int32, dense)
	s.scratch = make([]int32, s.n)
	s.stamp = make([]int32, s.n)
	for ti := range s.topics {
		t := &s.topics[ti]
		for p := int32(0); p < t.count; p++ {
			g := t.start + p
			s.topicOf[g] = int32(ti)
			s.leader[g] = -1
			s.prevAl[g] = -1
			s.pinAl[g] = -1
			if int(p) < len(t.prev) {
				if b, ok := s.aliveIdx[t.prev[p].Leader]; ok {
					s.prevAl[g] = b
					if cordoned[t.prev[p].Leader] {
						s.pinAl[g] = b // a cordoned broker keeps what it leads
					}
				}
			}
		}
		for _, pin := range t.spec.Pins {
			if pin.Partition < 0 || pin.Partition >= t.count {
				continue
			}
			if b, ok := s.aliveIdx[pin.Broker]; ok {
				s.pinAl[t.start+pin.Partition] = b
			}
		}
	}
	return s
}

// count returns how many partitions of topic ti broker b leads.
func (s *state) count(ti, b int32) int32 {
	t := &s.topics[ti]
	if t.row >= 0 {
		return s.tc[t.row+b]
	}
	var c int32
	for _, l := range s.leader[t.start : t.start+t.count] {
		if l == b {
			c++
		}
	}
	return c
}

// row returns topic ti's per-broker counts: its dense row, or the scratch
// row filled for it (valid until the next call).
func (s *state) row(ti int32) (row []int32, dense bool) {
	t := &s.topics[ti]
	if t.row >= 0 {
		return s.tc[t.row : t.row+s.n], true
	}
	clear(s.scratch)
	for _, l := range s.leader[t.start : t.start+t.count] {
		if l >= 0 {
			s.scratch[l]++
		}
	}
	return s.scratch, false
}

func (s *state) assign(g, b int32) {
	s.leader[g] = b
	s.total[b]++
	if r := s.topics[s.topicOf[g]].row; r >= 0 {
		s.tc[r+b]++
	}
}

// move changes partition g's leader to b, keeping every counter and, once
// built, the led lists up to date.
func (s *state) move(g, b int32) {
	from := s.leader[g]
	s.leader[g] = b
	s.total[from]--
	s.total[b]++
	if r := s.topics[s.topicOf[g]].row; r >= 0 {
		s.tc[r+from]--
		s.tc[r+b]++
	}
	if s.led != nil {
		list := s.led[from]
		i, last := s.pos[g], list[len(list)-1]
		list[i] = last
		s.pos[last] = i
		s.led[from] = list[:len(list)-1]
		s.pos[g] = int32(len(s.led[b]))
		s.led[b] = append(s.led[b], g)
	}
}

func (s *state) buildLed() {
	if s.led != nil {
		return
	}
	s.led = make([][]int32, s.n)
	for b := range s.led {
		s.led[b] = make([]int32, 0, s.total[b]+s.total[b]/8+4)
	}
	s.pos = make([]int32, len(s.leader))
	for g, b := range s.leader {
		s.pos[g] = int32(len(s.led[b]))
		s.led[b] = append(s.led[b], int32(g))
	}
}

// moveCost is how many extra leadership changes (relative to the previous
// assignment) moving g from its current leader to b costs: -1, 0 or 1.
func (s *state) moveCost(g, b int32) int32 {
	var c int32
	if s.prevAl[g] != b {
		c++ // g will not be where it was
	}
	if s.prevAl[g] != s.leader[g] {
		c-- // g was not where it was anyway
	}
	return c
}

// pinned reports whether partition g is pinned to an alive broker (and so
// never moved by steps 3 and 4).
func (s *state) pinned(g int32) bool { return s.pinAl[g] >= 0 }

// keep is step 1: every pinned partition goes to its broker, every other
// partition whose previous leader is alive stays.
func (s *state) keep() {
	for g, b := range s.prevAl {
		if pin := s.pinAl[g]; pin >= 0 {
			s.assign(int32(g), pin)
		} else if b >= 0 {
			s.assign(int32(g), b)
		}
	}
}

// place is step 2: each unplaced partition goes to the broker with the
// fewest partitions of its topic, then the fewest in total, then lowest id.
func (s *state) place() {
	for ti := range s.topics {
		t := &s.topics[ti]
		unplaced := false
		for _, l := range s.leader[t.start : t.start+t.count] {
			if l < 0 {
				unplaced = true
				break
			}
		}
		if !unplaced {
			continue
		}
		row, dense := s.row(int32(ti))
		for g := t.start; g < t.start+t.count; g++ {
			if s.leader[g] >= 0 {
				continue
			}
			best := int32(-1)
			for b := int32(0); b < s.n; b++ {
				if s.open[b] && (best < 0 || row[b] < row[best] || row[b] == row[best] && s.total[b] < s.total[best]) {
					best = b
				}
			}
			s.assign(g, best)
			if !dense {
				row[best]++
			}
		}
	}
}

// candidate is the best partition one donor can give one receiver.
type candidate struct {
	g, gain int32
	cost    int8 // moveCost
	viol    int8 // change of the topic's violation count (see violDelta)
	ok      bool // false: stale, recompute
}

// better orders candidates: cheapest first (-1: returns a partition to its
// previous leader, 0: moves one that moves anyway, 1: moves an inherited
// one), then the one that fixes most of its topic's imbalance, then the one
// whose topic the donor leads most more than the receiver, then the lowest
// partition index.
func (c candidate) better(o candidate) bool {
	switch {
	case c.g < 0:
		return false
	case o.g < 0:
		return true
	case c.cost != o.cost:
		return c.cost < o.cost
	case c.viol != o.viol:
		return c.viol < o.viol
	case c.gain != o.gain:
		return c.gain > o.gain
	}
	return c.g < o.g
}

// violation is how far a broker leading c partitions of a topic is outside
// [floor, ceil] of the topic's even share.
func (s *state) violation(ti, c int32) int32 {
	p := s.topics[ti].count
	lo, hi := p/s.n, (p+s.n-1)/s.n
	return max(0, c-hi) + max(0, lo-c)
}

// violDelta is how moving one partition of topic ti from a broker leading
// from of them to one leading to of them changes the topic's violations:
// -2 (fixes two), ..., +2 (creates two).
func (s *state) violDelta(ti, from, to int32) int8 {
	return int8(s.violation(ti, from-1) + s.violation(ti, to+1) - s.violation(ti, from) - s.violation(ti, to))
}

// evenCluster is step 3. While the spread of the totals is two or more, it
// moves one partition from a broker with the most to a broker with the
// fewest; every such move brings the cluster one move closer to even, so
// the number of moves is the minimum. Among all (donor, receiver, partition)
// choices it takes the best candidate. Candidates are cached per (donor,
// receiver) and recomputed only when a move can have changed them.
func (s *state) evenCluster() {
	if len(s.leader) == 0 || s.nOpen < 2 {
		return
	}
	s.bulkEven()
	n := s.n
	var cache []candidate
	for {
		lo, hi := s.totals()
		if hi-lo <= 1 {
			return
		}
		if cache == nil {
			s.buildLed()
			cache = make([]candidate, n*n)
		}
		best, bd, br := candidate{g: -1}, int32(-1), int32(-1)
		for d := int32(0); d < n; d++ {
			if s.total[d] != hi || !s.open[d] {
				continue
			}
			for r := int32(0); r < n; r++ {
				if s.total[r] != lo || !s.open[r] {
					continue
				}
				c := &cache[d*n+r]
				if !c.ok {
					*c = s.pickMove(d, r)
				}
				if c.better(best) {
					best, bd, br = *c, d, r
				}
			}
		}
		if best.g < 0 {
			return // only pinned partitions could even it out
		}
		t := s.topicOf[best.g]
		s.move(best.g, br)
		// The donor lost a partition: all its candidates may change. For
		// the receiver, only topic t's gain dropped, so only candidates of
		// topic t can stop being best. Everything else is unaffected (the
		// donor never becomes a receiver or vice versa while uneven).
		for r := int32(0); r < n; r++ {
			cache[bd*n+r].ok = false
		}
		for d := int32(0); d < n; d++ {
			if c := &cache[d*n+br]; c.ok && s.topicOf[c.g] == t {
				c.ok = false
			}
		}
	}
}

// bulkMoves is the number of step-3 moves above which bulkEven does the
// bulk of the work.
const bulkMoves = 16

// movesNeeded is the minimum number of moves that evens out the totals.
func (s *state) movesNeeded() int32 {
	var N int32
	for b, c := range s.total {
		if s.open[b] {
			N += c
		}
	}
	m := N / s.nOpen
	var over, under int32
	for b, c := range s.total {
		if s.open[b] {
			over += max(0, c-m-1)
			under += max(0, m-c)
		}
	}
	return max(over, under)
}

// totals returns the fewest and the most partitions an uncordoned broker
// leads: the spread steps 3 and 4 even out.
func (s *state) totals() (lo, hi int32) {
	lo, hi = -1, -1
	for b, c := range s.total {
		if !s.open[b] {
			continue
		}
		if lo < 0 || c < lo {
			lo = c
		}
		hi = max(hi, c)
	}
	return lo, hi
}

// bulkEven is the first part of step 3 when many moves are needed (brokers
// joining): the exact greedy of evenCluster re-examines a donor's partitions
// after every move, which is quadratic in that case. It makes the same kind
// of move (most-loaded to least-loaded broker, so the count stays minimal),
// but picks them topic by topic: first moves that fix two violations of
// their topic's even share (giver above the ceiling, taker below the
// floor), then moves that fix one, then moves that keep the topic as even
// as it was (the giver leads more of it than the taker), each time the
// cheapest partition of the topic. It stops when bulkMoves or fewer moves
// remain, for evenCluster's exact choice.
func (s *state) bulkEven() {
	for level := int8(-2); level <= 0; level++ {
		for progress := true; progress; {
			progress = false
			for ti := int32(0); ti < int32(len(s.topics)); ti++ {
				t := &s.topics[ti]
				for {
					if s.movesNeeded() <= bulkMoves {
						return
					}
					lo, hi := s.totals()
					row, _ := s.row(ti)
					d, r := int32(-1), int32(-1)
					for b := int32(0); b < s.n; b++ {
						if s.open[b] && s.total[b] == lo && (r < 0 || row[b] < row[r]) {
							r = b
						}
					}
					// The giver: the most-loaded broker leading most of the
					// topic; failing that, any broker two above the taker.
					ok := func(d int32) bool {
						return d >= 0 && row[d] > row[r] && s.violDelta(ti, row[d], row[r]) <= level
					}
					for b := int32(0); b < s.n; b++ {
						if s.open[b] && s.total[b] == hi && (d < 0 || row[b] > row[d]) {
							d = b
						}
					}
					if !ok(d) {
						d = -1
						for b := int32(0); b < s.n; b++ {
							if s.open[b] && s.total[b] >= lo+2 && (d < 0 || row[b] > row[d] || row[b] == row[d] && s.total[b] > s.total[d]) {
								d = b
							}
						}
						if !ok(d) {
							break
						}
					}
					x := int32(-1)
					var xCost int32
					for g := t.start; g < t.start+t.count; g++ {
						if s.leader[g] != d || s.pinned(g) {
							continue
						}
						if c := s.moveCost(g, r); x < 0 || c < xCost {
							x, xCost = g, c
						}
					}
					if x < 0 {
						break // d leads only pinned partitions of the topic
					}
					s.move(x, r)
					progress = true
				}
			}
		}
	}
}

// pickMove returns the best partition donor can give recv (see
// candidate.better; ties go to the lowest partition index).
func (s *state) pickMove(donor, recv int32) candidate {
	best := candidate{g: -1, ok: true}
	for _, g := range s.led[donor] {
		if s.pinned(g) {
			continue
		}
		cost := int8(s.moveCost(g, recv))
		if best.g >= 0 && cost > best.cost {
			continue
		}
		t := s.topicOf[g]
		cd, cr := s.count(t, donor), s.count(t, recv)
		c := candidate{g: g, gain: cd - cr, cost: cost, viol: s.violDelta(t, cd, cr), ok: true}
		if c.better(best) {
			best = c
		}
	}
	return best
}

// maxSwapPairs bounds how many (most loaded, least loaded) broker pairs
// step 4 compares before each swap.
const maxSwapPairs = 64

// swap is one step-4 candidate: x (of the topic being evened) goes hi->lo
// and, unless oneWay, y (of another topic) goes lo->hi.
type swap struct {
	x, hi, lo int32
	cost      int32
	oneWay    bool
	y         candidate
}

// better prefers the cheaper trade, then a single move over a swap, then
// the swap that evens its partner topic most.
func (a swap) better(b swap) bool {
	switch {
	case b.x < 0:
		return a.x >= 0
	case a.x < 0:
		return false
	case a.cost != b.cost:
		return a.cost < b.cost
	case a.oneWay != b.oneWay:
		return a.oneWay
	case a.oneWay:
		return false
	case a.y.viol != b.y.viol:
		return a.y.viol < b.y.viol
	}
	return a.y.gain > b.y.gain
}

// evenTopics is step 4: per topic, while its spread is two or more, trade
// one of its partitions on a most-loaded broker hi for a partition of
// another topic that a least-loaded broker lo leads more of (see the
// package doc for why one always exists). When hi leads one more partition
// than lo in total, moving the one partition alone is also a trade that
// keeps the cluster-wide spread (it hands the cluster's "+1" from hi to lo);
// it is taken when it is no more expensive than the best swap. Among the
// extreme pairs it takes the cheapest trade.
func (s *state) evenTopics() {
	hiSet := make([]int32, 0, s.n)
	loSet := make([]int32, 0, s.n)
	for ti := int32(0); ti < int32(len(s.topics)); ti++ {
		t := &s.topics[ti]
		if t.row < 0 && t.count <= s.n && !s.hasDuplicateLeader(ti) {
			continue // fast path: a small topic is even unless a broker leads two
		}
		for {
			row, _ := s.row(ti)
			hiV, loV := int32(-1), int32(-1)
			for b, c := range row {
				if s.open[b] {
					hiV = max(hiV, c)
					if loV < 0 || c < loV {
						loV = c
					}
				}
			}
			if hiV-loV <= 1 {
				break
			}
			hiSet, loSet = hiSet[:0], loSet[:0]
			for b, c := range row {
				if !s.open[b] {
					continue
				}
				if c == hiV {
					hiSet = append(hiSet, int32(b))
				} else if c == loV {
					loSet = append(loSet, int32(b))
				}
			}
			s.buildLed()
			best := swap{x: -1}
			pairs := 0
		search:
			for _, hi := range hiSet {
				for _, lo := range loSet {
					if c := s.bestSwap(ti, hi, lo); c.better(best) {
						best = c
					}
					if pairs++; pairs >= maxSwapPairs || best.x >= 0 && best.cost <= 0 {
						break search
					}
				}
			}
			if best.x < 0 {
				// Impossible while the cluster-wide spread is at most one
				// (see the package doc); leave the topic rather than loop.
				break
			}
			s.move(best.x, best.lo)
			if !best.oneWay {
				s.move(best.y.g, best.hi)
			}
		}
	}
}

// hasDuplicateLeader reports whether a broker leads two partitions of ti.
func (s *state) hasDuplicateLeader(ti int32) bool {
	t := &s.topics[ti]
	s.gen++
	for _, l := range s.leader[t.start : t.start+t.count] {
		if s.stamp[l] == s.gen {
			return true
		}
		s.stamp[l] = s.gen
	}
	return false
}

// bestSwap returns the cheapest swap of a ti partition hi->lo against a
// partition lo->hi of a topic that lo leads more of than hi.
func (s *state) bestSwap(ti, hi, lo int32) swap {
	t := &s.topics[ti]
	sw := swap{x: -1, hi: hi, lo: lo}
	var xCost int32
	for g := t.start; g < t.start+t.count; g++ {
		if s.leader[g] != hi || s.pinned(g) {
			continue
		}
		if c := s.moveCost(g, lo); sw.x < 0 || c < xCost {
			sw.x, xCost = g, c
		}
	}
	if sw.x < 0 {
		return sw
	}
	if s.total[hi] > s.total[lo] {
		// Totals differ by exactly one (spread <= 1): a single move keeps
		// the spread and costs less than any swap of equal x.
		sw.oneWay, sw.cost = true, xCost
		if xCost <= 0 {
			return sw
		}
	}
	one := sw
	sw.oneWay = false
	sw.y = candidate{g: -1}
	for _, g := range s.led[lo] {
		u := s.topicOf[g]
		if u == ti || s.pinned(g) {
			continue
		}
		cost := int8(s.moveCost(g, hi))
		if sw.y.g >= 0 && cost > sw.y.cost {
			continue
		}
		cl, ch := s.count(u, lo), s.count(u, hi)
		if cl <= ch {
			continue
		}
		if c := (candidate{g: g, gain: cl - ch, cost: cost, viol: s.violDelta(u, cl, ch)}); c.better(sw.y) {
			sw.y = c
		}
	}
	if sw.y.g < 0 {
		if one.oneWay {
			return one
		}
		return swap{x: -1}
	}
	sw.cost = xCost + int32(sw.y.cost)
	if one.oneWay && !sw.better(one) {
		return one
	}
	return sw
}

// output builds the assignment and the moves.
func (s *state) output(in Input, rows []assignment.Broker) (*assignment.Assignment, Moves) {
	out := &assignment.Assignment{
		Format:              assignment.FormatV1,
		ControllerEpoch:     in.ControllerEpoch,
		Controller:          in.Controller,
		ControllerHeartbeat: in.ControllerHeartbeat,
		Brokers:             rows,
		Topics:              make(map[string]assignment.Topic, len(s.topics)),
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Name
	}
	var prevSlots, serving []string
	if in.Previous != nil {
		prevSlots, serving = in.Previous.ConsumerGroups.Slots, assignment.SlotOwners(in.Previous)
	}
	out.ConsumerGroups.Slots = assignment.PlaceSlots(prevSlots, serving, names)
	parts := make([]assignment.Partition, len(s.leader))
	var moves Moves
	for ti := range s.topics {
		t := &s.topics[ti]
		ps := parts[t.start : t.start+t.count : t.start+t.count]
		for p := range ps {
			id := s.aliveIDs[s.leader[t.start+int32(p)]]
			if p < len(t.prev) {
				was := t.prev[p]
				if was.Leader == id {
					ps[p] = was
					continue
				}
				ps[p] = assignment.Partition{Leader: id, LeaderEpoch: was.LeaderEpoch + 1}
				moves = append(moves, Move{t.name, int32(p), was.Leader, id})
				continue
			}
			ps[p] = assignment.Partition{Leader: id}
			moves = append(moves, Move{t.name, int32(p), assignment.NoLeader, id})
		}
		cfg := make(map[string]string, len(t.spec.Config))
		for k, v := range t.spec.Config {
			cfg[k] = v
		}
		out.Topics[t.name] = assignment.Topic{ID: t.spec.ID, Config: cfg, Partitions: ps, Pins: pinsIn(t.spec.Pins, t.count)}
	}
	out.AssignmentVersion = 1
	if prev := in.Previous; prev != nil {
		out.AssignmentVersion = prev.AssignmentVersion
		if !assignment.SameContent(prev, out) {
			out.AssignmentVersion++
		}
	}
	return out, moves
}

// pinsIn is the pins of a topic of count partitions as the assignment
// keeps them: sorted by partition, one per partition (the last wins), those
// of partitions it does not have left out; nil when none.
func pinsIn(pins []assignment.Pin, count int32) []assignment.Pin {
	var out []assignment.Pin
	for _, p := range pins {
		if p.Partition < 0 || p.Partition >= count || p.Broker < 0 {
			continue
		}
		i := sort.Search(len(out), func(i int) bool { return out[i].Partition >= p.Partition })
		if i < len(out) && out[i].Partition == p.Partition {
			out[i] = p
			continue
		}
		out = append(out, assignment.Pin{})
		copy(out[i+1:], out[i:])
		out[i] = p
	}
	return out
}
