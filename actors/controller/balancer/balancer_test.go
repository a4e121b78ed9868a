package balancer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

// leaders renders a topic's leaders compactly, e.g. "0 1 2".
func leaders(a *assignment.Assignment, topic string) string {
	var b strings.Builder
	for i, p := range a.Topics[topic].Partitions {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, p.Leader)
	}
	return b.String()
}

func epochs(a *assignment.Assignment, topic string) string {
	var b strings.Builder
	for i, p := range a.Topics[topic].Partitions {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, p.LeaderEpoch)
	}
	return b.String()
}

// prevWith builds a previous assignment over alive brokers 0..n-1 with the
// given leaders per topic (topic id = "id-"+name).
func prevWith(n int, topics map[string][]int32) *assignment.Assignment {
	a := &assignment.Assignment{Format: 1, ControllerEpoch: 1, AssignmentVersion: 5, Controller: "kaas-0",
		ControllerHeartbeat: "kaas-0.kaas.ns.svc:9094", Topics: map[string]assignment.Topic{}}
	var names []string
	for i := 0; i < n; i++ {
		a.Brokers = append(a.Brokers, assignment.Broker{ID: int32(i), Name: bname(i), Host: bname(i) + ".kaas.ns.svc", Port: 9092, State: assignment.Alive})
		names = append(names, bname(i))
	}
	a.ConsumerGroups.Slots = assignment.PlaceSlots(nil, nil, names)
	for name, ls := range topics {
		t := assignment.Topic{ID: "id-" + name, Config: map[string]string{}}
		for _, l := range ls {
			t.Partitions = append(t.Partitions, assignment.Partition{Leader: l, LeaderEpoch: 1})
		}
		a.Topics[name] = t
	}
	return a
}

// inputFor is the input that reproduces prev with the given broker states.
func inputFor(prev *assignment.Assignment, states ...assignment.BrokerState) Input {
	in := Input{Previous: prev, Controller: "kaas-0", ControllerEpoch: 1, ControllerHeartbeat: "kaas-0.kaas.ns.svc:9094", Topics: map[string]TopicSpec{}}
	for i, st := range states {
		in.Brokers = append(in.Brokers, BrokerInfo{Name: bname(i), Host: bname(i) + ".kaas.ns.svc", Port: 9092, State: st})
	}
	if prev != nil {
		for name, t := range prev.Topics {
			in.Topics[name] = TopicSpec{ID: t.ID, Partitions: len(t.Partitions), Config: map[string]string{}}
		}
	}
	return in
}

func mustCompute(t *testing.T, in Input) (*assignment.Assignment, Moves) {
	t.Helper()
	out, moves, err := Compute(in)
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	if err := checkOutput(in, out, moves); err != nil {
		t.Fatalf("invariant: %v", err)
	}
	return out, moves
}

const A, D, X = assignment.Alive, assignment.Draining, assignment.Dead

func TestBrokerID(t *testing.T) {
	for _, tc := range []struct {
		name string
		id   int32
		ok   bool
	}{
		{"kaas-0", 0, true},
		{"kaas-12", 12, true},
		{"my-kaas-3", 3, true},
		{"kaas-2147483647", 2147483647, true},
		{"kaas", 0, false},
		{"kaas-", 0, false},
		{"-1", 0, false},
		{"kaas-01", 0, false},
		{"kaas-x", 0, false},
		{"kaas--1", 1, true}, // not a valid pod name, but the suffix is an ordinal
		{"kaas-2147483648", 0, false},
		{"", 0, false},
	} {
		id, err := BrokerID(tc.name)
		if (err == nil) != tc.ok || id != tc.id {
			t.Errorf("BrokerID(%q) = %d, %v; want %d, ok=%v", tc.name, id, err, tc.id, tc.ok)
		}
	}
}

func TestComputeRejectsBadInput(t *testing.T) {
	base := func() Input {
		return Input{Controller: "kaas-0", ControllerEpoch: 3,
			Brokers: []BrokerInfo{{Name: "kaas-0", State: A}, {Name: "kaas-1", State: A}},
			Topics:  map[string]TopicSpec{"t": {ID: "u1", Partitions: 2}}}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Input)
		want   string
	}{
		{"broker without ordinal", func(in *Input) { in.Brokers = append(in.Brokers, BrokerInfo{Name: "kaas", State: A}) }, "ordinal"},
		{"same ordinal twice", func(in *Input) { in.Brokers = append(in.Brokers, BrokerInfo{Name: "other-1", State: A}) }, "same ordinal 1"},
		{"unknown state", func(in *Input) { in.Brokers[1].State = "sleepy" }, "unknown state"},
		{"bad port", func(in *Input) { in.Brokers[1].Port = 70000 }, "port"},
		{"controller without ordinal", func(in *Input) { in.Controller = "boss" }, "controller"},
		{"controller clashes with broker", func(in *Input) { in.Controller = "other-1" }, "same ordinal 1"},
		{"bad topic name", func(in *Input) { in.Topics["a/b"] = TopicSpec{ID: "u2", Partitions: 1} }, "Topic name is invalid"},
		{"topic name ..", func(in *Input) { in.Topics[".."] = TopicSpec{ID: "u2", Partitions: 1} }, "not allowed"},
		{"empty topic id", func(in *Input) { in.Topics["x"] = TopicSpec{Partitions: 1} }, "empty id"},
		{"shared topic id", func(in *Input) { in.Topics["x"] = TopicSpec{ID: "u1", Partitions: 1} }, "share id"},
		{"zero partitions", func(in *Input) { in.Topics["x"] = TopicSpec{ID: "u2"} }, "0 partitions"},
		{"too many partitions", func(in *Input) { in.Topics["x"] = TopicSpec{ID: "u2", Partitions: MaxPartitionsPerTopic + 1} }, "partitions"},
		{"negative epoch", func(in *Input) { in.ControllerEpoch = -1 }, "negative"},
		{"epoch below previous", func(in *Input) {
			in.Previous = prevWith(2, nil)
			in.Previous.ControllerEpoch = 4
		}, "below the previous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			tc.mutate(&in)
			_, _, err := Compute(in)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInput containing %q", err, tc.want)
			}
		})
	}
}

func TestFirstAssignment(t *testing.T) {
	in := inputFor(nil, A, A, A)
	in.Topics = map[string]TopicSpec{
		"orders":  {ID: "u-orders", Partitions: 4, Config: map[string]string{"retention.ms": "1"}},
		"clicks":  {ID: "u-clicks", Partitions: 2},
		"single":  {ID: "u-single", Partitions: 1},
		"another": {ID: "u-another", Partitions: 3},
	}
	out, moves := mustCompute(t, in)
	// Topics in name order: another, clicks, orders, single. Each partition
	// goes to the fewest-of-topic broker, then fewest total, then lowest id.
	for topic, want := range map[string]string{
		"another": "0 1 2",
		"clicks":  "0 1",
		"orders":  "2 0 1 2",
		"single":  "0",
	} {
		if got := leaders(out, topic); got != want {
			t.Errorf("%s leaders = %q, want %q", topic, got, want)
		}
		if got := epochs(out, topic); strings.Trim(got, "0 ") != "" {
			t.Errorf("%s epochs = %q, want all 0", topic, got)
		}
	}
	if out.AssignmentVersion != 1 || len(moves) != 10 || moves[0] != (Move{"another", 0, -1, 0}) {
		t.Errorf("version %d, moves %v", out.AssignmentVersion, moves)
	}
	if out.Topics["orders"].Config["retention.ms"] != "1" || out.Topics["clicks"].Config == nil {
		t.Errorf("config not carried: %+v", out.Topics)
	}
	if s := out.ConsumerGroups.Slots; len(s) != assignment.GroupSlotCount || s[0] != "kaas-0" || s[1] != "kaas-1" || s[2] != "kaas-2" || s[3] != "kaas-0" || s[49] != "kaas-1" {
		t.Errorf("slots %v, want the round robin", s)
	}
}

// Step 1: partitions whose leader is alive stay, even where a fresh layout
// would differ; only the dead broker's partitions move.
func TestStep1KeepsAliveLeaders(t *testing.T) {
	prev := prevWith(3, map[string][]int32{"a": {2, 2, 1, 0, 1, 0}, "b": {0, 1, 2}})
	out, moves := mustCompute(t, inputFor(prev, A, A, A))
	if len(moves) != 0 || out.AssignmentVersion != prev.AssignmentVersion || leaders(out, "a") != "2 2 1 0 1 0" {
		t.Fatalf("stable input changed: %v %q", moves, leaders(out, "a"))
	}
	out, moves = mustCompute(t, inputFor(prev, A, A, X))
	if leaders(out, "a") != "0 1 1 0 1 0" || leaders(out, "b") != "0 1 0" {
		t.Fatalf("a=%q b=%q", leaders(out, "a"), leaders(out, "b"))
	}
	for _, m := range moves {
		if m.From != 2 {
			t.Errorf("moved %v, only broker 2's partitions should move", m)
		}
	}
	if out.AssignmentVersion != prev.AssignmentVersion+1 || epochs(out, "a") != "2 2 1 1 1 1" {
		t.Errorf("version %d epochs %q", out.AssignmentVersion, epochs(out, "a"))
	}
}

// A topic whose id changed is a new topic: nothing is kept, epochs restart.
func TestTopicRecreatedIsNew(t *testing.T) {
	prev := prevWith(2, map[string][]int32{"a": {1, 0}})
	in := inputFor(prev, A, A)
	in.Topics["a"] = TopicSpec{ID: "new-id", Partitions: 2}
	out, moves := mustCompute(t, in)
	if leaders(out, "a") != "0 1" || epochs(out, "a") != "0 0" || out.Topics["a"].ID != "new-id" {
		t.Fatalf("leaders %q epochs %q", leaders(out, "a"), epochs(out, "a"))
	}
	if len(moves) != 2 || moves[0].From != -1 || moves[1].From != -1 {
		t.Fatalf("moves %v", moves)
	}
}

// Step 2: new partitions go to the broker with the fewest of their topic,
// then the fewest in total, then the lowest id.
func TestStep2PlacesOnFewestOfTopic(t *testing.T) {
	// Totals 0:2 1:2 2:2; topic a has 0:0 1:1 2:1.
	prev := prevWith(3, map[string][]int32{"a": {1, 2}, "b": {0, 0, 1, 2}})
	in := inputFor(prev, A, A, A)
	in.Topics["a"] = TopicSpec{ID: "id-a", Partitions: 5} // grow by 3
	out, moves := mustCompute(t, in)
	// p2 -> 0 (the only one without a); p3: a even, totals 3 2 2 -> 1;
	// p4: a on 0 and 2 once, totals 3 3 2 -> 2.
	if got := leaders(out, "a"); got != "1 2 0 1 2" {
		t.Fatalf("a = %q", got)
	}
	if got := leaders(out, "b"); got != "0 0 1 2" {
		t.Fatalf("b moved: %q", got)
	}
	if len(moves) != 3 || epochs(out, "a") != "1 1 0 0 0" {
		t.Fatalf("moves %v epochs %q", moves, epochs(out, "a"))
	}
	// When the inherited load is uneven, what step 2 placed is what step 3
	// moves: broker 0 keeps b's three partitions... until step 4 needs one.
	prev = prevWith(3, map[string][]int32{"a": {1, 2}, "b": {0, 0, 0, 1}})
	in = inputFor(prev, A, A, A)
	in.Topics["a"] = TopicSpec{ID: "id-a", Partitions: 5}
	out, moves = mustCompute(t, in)
	if n := inheritedMoves(out, moves); n != 1 {
		t.Fatalf("inherited moves %d (want 1: b's spread forces one): %v", n, moves)
	}
}

// Step 3: a new broker gets its share from the brokers leading the most,
// and partitions just placed move before inherited ones.
func TestStep3EvensCluster(t *testing.T) {
	t.Run("join", func(t *testing.T) {
		prev := prevWith(2, map[string][]int32{"a": {0, 1, 0, 1, 0, 1}})
		out, moves := mustCompute(t, inputFor(prev, A, A, A))
		if len(moves) != 2 || leaders(out, "a") != "2 2 0 1 0 1" {
			t.Fatalf("moves %v leaders %q", moves, leaders(out, "a"))
		}
	})
	t.Run("fresh before inherited", func(t *testing.T) {
		// Broker 0 leads 4 inherited, 1 and 2 lead none of b's... b is new
		// with 2 partitions: step 2 puts them on 1 and 2, keeping a on 0.
		prev := prevWith(3, map[string][]int32{"a": {0, 0, 1, 2}})
		in := inputFor(prev, A, A, A)
		in.Topics["b"] = TopicSpec{ID: "id-b", Partitions: 2}
		out, moves := mustCompute(t, in)
		if leaders(out, "a") != "0 0 1 2" || leaders(out, "b") != "1 2" {
			t.Fatalf("a=%q b=%q", leaders(out, "a"), leaders(out, "b"))
		}
		if len(moves) != 2 || moves[0].From != -1 || moves[1].From != -1 {
			t.Fatalf("moves %v", moves)
		}
	})
	t.Run("orphans spread", func(t *testing.T) {
		// Broker 1 dies holding a whole topic; the cluster-wide spread
		// forces moving the just-placed ones rather than any of a's.
		prev := prevWith(3, map[string][]int32{"a": {0, 0, 0, 2, 2, 2}, "b": {1, 1, 1}})
		out, moves := mustCompute(t, inputFor(prev, A, X, A))
		if leaders(out, "a") != "0 0 0 2 2 2" {
			t.Fatalf("inherited partitions moved: a=%q", leaders(out, "a"))
		}
		if len(moves) != 3 {
			t.Fatalf("moves %v", moves)
		}
	})
}

// Step 4: an even cluster with an uneven topic is fixed by swaps, which keep
// every broker's total.
func TestStep4Swaps(t *testing.T) {
	prev := prevWith(2, map[string][]int32{"a": {0, 0}, "b": {1, 1}})
	out, moves := mustCompute(t, inputFor(prev, A, A))
	if leaders(out, "a") != "1 0" || leaders(out, "b") != "0 1" {
		t.Fatalf("a=%q b=%q", leaders(out, "a"), leaders(out, "b"))
	}
	if len(moves) != 2 || epochs(out, "a") != "2 1" || epochs(out, "b") != "2 1" {
		t.Fatalf("moves %v epochs %q %q", moves, epochs(out, "a"), epochs(out, "b"))
	}
	// A swap partner already balanced stays balanced: its two counts are
	// exchanged.
	prev = prevWith(3, map[string][]int32{"a": {0, 0, 0}, "b": {1, 2, 1}, "c": {2, 1, 2}})
	out, _ = mustCompute(t, inputFor(prev, A, A, A))
	_, total, perTopic := counts(out)
	if fmt.Sprint(total) != "map[0:3 1:3 2:3]" {
		t.Fatalf("totals changed: %v", total)
	}
	for topic, c := range perTopic {
		if spread(c) > 1 {
			t.Errorf("topic %s: %v", topic, c)
		}
	}
}

func TestControllerAlwaysAlive(t *testing.T) {
	prev := prevWith(3, map[string][]int32{"a": {0, 1, 2}})
	t.Run("marked dead", func(t *testing.T) {
		out, _ := mustCompute(t, inputFor(prev, X, X, X))
		if leaders(out, "a") != "0 0 0" || out.Brokers[0].State != A || out.Brokers[1].State != X {
			t.Fatalf("a=%q brokers %v", leaders(out, "a"), out.Brokers)
		}
	})
	t.Run("draining", func(t *testing.T) {
		out, _ := mustCompute(t, inputFor(prev, D, D, A))
		if out.Brokers[0].State != A || out.Brokers[1].State != D || leaders(out, "a") != "0 0 2" {
			t.Fatalf("a=%q brokers %v", leaders(out, "a"), out.Brokers)
		}
	})
	t.Run("absent everywhere", func(t *testing.T) {
		in := inputFor(nil)
		in.Controller = "kaas-7"
		in.Topics["a"] = TopicSpec{ID: "u", Partitions: 2}
		out, _ := mustCompute(t, in)
		if len(out.Brokers) != 1 || out.Brokers[0] != (assignment.Broker{ID: 7, Name: "kaas-7", State: A}) || leaders(out, "a") != "7 7" {
			t.Fatalf("brokers %v a=%q", out.Brokers, leaders(out, "a"))
		}
	})
}

func TestBrokerRowsAndSlots(t *testing.T) {
	prev := prevWith(3, map[string][]int32{"a": {0, 1, 2}})
	in := inputFor(prev, A, A) // kaas-2 left the input
	in.Brokers = append(in.Brokers, BrokerInfo{Name: "kaas-5", Host: "h5", Port: 9093, Rack: "r5", Listeners: "EXTERNAL://e5:9094", State: A})
	out, _ := mustCompute(t, in)
	want := "[{0 kaas-0 kaas-0.kaas.ns.svc 9092   alive} {1 kaas-1 kaas-1.kaas.ns.svc 9092   alive} {2 kaas-2 kaas-2.kaas.ns.svc 9092   dead} {5 kaas-5 h5 9093 r5 EXTERNAL://e5:9094 alive}]"
	if fmt.Sprint(out.Brokers) != want {
		t.Fatalf("brokers %v", out.Brokers)
	}
	count := map[string]int{}
	for _, s := range out.ConsumerGroups.Slots {
		count[s]++
	}
	if fmt.Sprint(count) != "map[kaas-0:13 kaas-1:13 kaas-2:12 kaas-5:12]" {
		t.Fatalf("slots %v", out.ConsumerGroups.Slots)
	}
}

func TestEpochsAndVersion(t *testing.T) {
	prev := prevWith(2, map[string][]int32{"a": {0, 1}})
	in := inputFor(prev, A, A)

	out, moves := mustCompute(t, in)
	if out.AssignmentVersion != 5 || len(moves) != 0 {
		t.Fatalf("unchanged: version %d moves %v", out.AssignmentVersion, moves)
	}
	in.ControllerEpoch = 2 // new controller, same layout
	out, moves = mustCompute(t, in)
	if out.AssignmentVersion != 6 || len(moves) != 0 || epochs(out, "a") != "1 1" {
		t.Fatalf("epoch bump: version %d moves %v epochs %q", out.AssignmentVersion, moves, epochs(out, "a"))
	}
	in.Previous = out
	in.Topics["a"] = TopicSpec{ID: "id-a", Partitions: 2, Config: map[string]string{"cleanup.policy": "compact"}}
	out, moves = mustCompute(t, in)
	if out.AssignmentVersion != 7 || len(moves) != 0 {
		t.Fatalf("config change: version %d moves %v", out.AssignmentVersion, moves)
	}
	in.Previous = out
	in.Brokers[1].State = X
	out, moves = mustCompute(t, in)
	if out.AssignmentVersion != 8 || epochs(out, "a") != "1 2" || fmt.Sprint(moves) != "[{a 1 1 0}]" {
		t.Fatalf("death: version %d epochs %q moves %v", out.AssignmentVersion, epochs(out, "a"), moves)
	}
}

func TestNeverShrinks(t *testing.T) {
	prev := prevWith(2, map[string][]int32{"a": {0, 1, 0, 1}})
	in := inputFor(prev, A, A)
	in.Topics["a"] = TopicSpec{ID: "id-a", Partitions: 2}
	out, moves := mustCompute(t, in)
	if leaders(out, "a") != "0 1 0 1" || len(moves) != 0 {
		t.Fatalf("a=%q moves %v", leaders(out, "a"), moves)
	}
}

func TestDeletedTopicDisappears(t *testing.T) {
	prev := prevWith(2, map[string][]int32{"a": {0, 1}, "b": {1, 0}})
	in := inputFor(prev, A, A)
	delete(in.Topics, "b")
	out, moves := mustCompute(t, in)
	if _, ok := out.Topics["b"]; ok || out.AssignmentVersion != 6 || len(moves) != 0 {
		t.Fatalf("topics %v version %d moves %v", out.TopicNames(), out.AssignmentVersion, moves)
	}
}

// A leaderless partition in the previous file (two-phase move in flight) is
// placed like an orphan, with its epoch bumped.
func TestLeaderlessPartitionIsPlaced(t *testing.T) {
	prev := prevWith(2, map[string][]int32{"a": {0, -1}})
	out, moves := mustCompute(t, inputFor(prev, A, A))
	if leaders(out, "a") != "0 1" || epochs(out, "a") != "1 2" || fmt.Sprint(moves) != "[{a 1 -1 1}]" {
		t.Fatalf("a=%q epochs %q moves %v", leaders(out, "a"), epochs(out, "a"), moves)
	}
}

// An unregistered broker's previous row is dropped, slot and all, and comes
// back only when the broker is in the input again.
func TestUnregisteredRowDropped(t *testing.T) {
	c := newCluster(3)
	c.addTopic("t", 6)
	if _, _, err := c.step(); err != nil {
		t.Fatal(err)
	}
	delete(c.brokers, bname(2)) // gone from the input: kept as dead
	a, _, err := c.step()
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := a.BrokerByName(bname(2)); !ok || b.State != assignment.Dead || !slices.Contains(a.ConsumerGroups.Slots, bname(2)) {
		t.Fatalf("absent broker: row %+v %v, slots %v", b, ok, a.ConsumerGroups.Slots)
	}
	in := c.input()
	in.Unregistered = []string{bname(2)}
	a, _, err = Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.BrokerByName(bname(2)); ok || slices.Contains(a.ConsumerGroups.Slots, bname(2)) {
		t.Fatalf("unregistered broker: brokers %+v, slots %v", a.Brokers, a.ConsumerGroups.Slots)
	}
	if a.AssignmentVersion != c.prev.AssignmentVersion+1 {
		t.Fatalf("version %d after %d", a.AssignmentVersion, c.prev.AssignmentVersion)
	}
	c.prev = a
	c.setBroker(2, assignment.Alive)
	in = c.input()
	in.Unregistered = []string{bname(2)}
	a, _, err = Compute(in)
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := a.BrokerByName(bname(2)); !ok || b.State != assignment.Alive || !slices.Contains(a.ConsumerGroups.Slots, bname(2)) {
		t.Fatalf("broker back in the input: row %+v %v, slots %v", b, ok, a.ConsumerGroups.Slots)
	}
}
