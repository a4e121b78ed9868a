package fetchsession

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func key(topic string, p int32) Key { return Key{Topic: topic, Partition: p} }

func entry(topic string, p int32, offset int64) Entry {
	return Entry{Key: key(topic, p), Params: Params{FetchOffset: offset, MaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}
}

// quiet is an answer with nothing new against hw.
func quiet(hw int64) Outcome {
	return Outcome{HighWatermark: hw, LastStableOffset: hw, LogStartOffset: 0}
}

// ids hands out session ids 1, 2, 3, ...
func ids() func() int32 {
	n := int32(0)
	return func() int32 { n++; return n }
}

func partitions(f *Fetch) []Key {
	var ks []Key
	for _, e := range f.Partitions {
		ks = append(ks, e.Key)
	}
	return ks
}

// open runs a full fetch at InitialEpoch of the given partitions, all
// answered quiet at hw 10, and returns the session id.
func open(t *testing.T, c *Cache, now time.Time, es ...Entry) int32 {
	t.Helper()
	f, code := c.Begin(now, Request{Epoch: InitialEpoch, Partitions: es})
	if code != 0 {
		t.Fatalf("full fetch: code %d", code)
	}
	out := make([]Outcome, len(es))
	for i := range out {
		out[i] = quiet(10)
	}
	id, inc := c.Finish(now, f, out)
	if slices.Contains(inc, false) {
		t.Fatalf("full fetch omitted a partition: %v", inc)
	}
	return id
}

func TestBeginErrors(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
	id := open(t, c, t0, entry("a", 0, 0))
	for _, tc := range []struct {
		name string
		req  Request
		want int16
	}{
		{"unknown session", Request{SessionID: id + 100, Epoch: 1}, kerr.FetchSessionIDNotFound.Code},
		{"epoch ahead", Request{SessionID: id, Epoch: 2}, kerr.InvalidFetchSessionEpoch.Code},
		{"topic ids in a session by name", Request{SessionID: id, Epoch: 1, UsesTopicIDs: true}, kerr.FetchSessionTopicIDError.Code},
		{"the right epoch", Request{SessionID: id, Epoch: 1}, 0},
		{"the same epoch again", Request{SessionID: id, Epoch: 1}, kerr.InvalidFetchSessionEpoch.Code},
		{"the next epoch", Request{SessionID: id, Epoch: 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, code := c.Begin(t0, tc.req)
			if code != tc.want {
				t.Fatalf("code %d, want %d", code, tc.want)
			}
		})
	}
}

func TestFullFetches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		slots   int
		epoch   int32
		wantNew bool
	}{
		{"initial epoch opens a session", 10, InitialEpoch, true},
		{"final epoch opens none", 10, FinalEpoch, false},
		{"no slots, no sessions", 0, InitialEpoch, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Slots: tc.slots, EvictAfter: time.Minute, NewID: ids()})
			f, code := c.Begin(t0, Request{Epoch: tc.epoch, Partitions: []Entry{entry("a", 0, 5), entry("a", 1, 7)}})
			if code != 0 || f.Incremental() {
				t.Fatalf("code %d, incremental %v", code, f.Incremental())
			}
			if got := partitions(f); !slices.Equal(got, []Key{key("a", 0), key("a", 1)}) {
				t.Fatalf("partitions %v", got)
			}
			id, inc := c.Finish(t0, f, []Outcome{quiet(10), quiet(10)})
			if !slices.Equal(inc, []bool{true, true}) {
				t.Fatalf("include %v", inc)
			}
			if (id != 0) != tc.wantNew || (c.Stats().Sessions == 1) != tc.wantNew {
				t.Fatalf("session id %d, stats %+v", id, c.Stats())
			}
		})
	}
}

func TestFullFetchClosesTheNamedSession(t *testing.T) {
	for _, epoch := range []int32{InitialEpoch, FinalEpoch} {
		c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
		id := open(t, c, t0, entry("a", 0, 0))
		f, _ := c.Begin(t0, Request{SessionID: id, Epoch: epoch, Partitions: []Entry{entry("a", 0, 0)}})
		if _, code := c.Begin(t0, Request{SessionID: id, Epoch: 1}); code != kerr.FetchSessionIDNotFound.Code {
			t.Fatalf("epoch %d: old session still open (code %d)", epoch, code)
		}
		next, _ := c.Finish(t0, f, []Outcome{quiet(10)})
		if (next != 0) != (epoch == InitialEpoch) || next == id {
			t.Fatalf("epoch %d: new session id %d (old %d)", epoch, next, id)
		}
	}
}

// TestIncrementalAnswers: an incremental answer carries a partition only
// when something about it is new.
func TestIncrementalAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  Outcome
		want bool
	}{
		{"nothing new", quiet(10), false},
		{"records", Outcome{HighWatermark: 10, LastStableOffset: 10, Records: true}, true},
		{"high watermark moved", Outcome{HighWatermark: 11, LastStableOffset: 10}, true},
		{"last stable offset moved", Outcome{HighWatermark: 10, LastStableOffset: 9}, true},
		{"log start moved", Outcome{HighWatermark: 10, LastStableOffset: 10, LogStartOffset: 3}, true},
		{"diverging epoch", Outcome{HighWatermark: 10, LastStableOffset: 10, Diverging: true}, true},
		{"error", Outcome{ErrorCode: kerr.NotLeaderForPartition.Code, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
			id := open(t, c, t0, entry("a", 0, 0), entry("a", 1, 0))
			f, code := c.Begin(t0, Request{SessionID: id, Epoch: 1})
			if code != 0 || !f.Incremental() {
				t.Fatalf("code %d", code)
			}
			got, inc := c.Finish(t0, f, []Outcome{quiet(10), tc.out})
			if got != id || !slices.Equal(inc, []bool{false, tc.want}) {
				t.Fatalf("session %d (want %d), include %v", got, id, inc)
			}
		})
	}
}

// TestErrorThenRecovery: after an error the partition's next answer is sent
// even when its offsets are what they were before the error.
func TestErrorThenRecovery(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
	id := open(t, c, t0, entry("a", 0, 0))
	answers := []struct {
		out  Outcome
		want bool
	}{
		{Outcome{ErrorCode: kerr.NotLeaderForPartition.Code}, true},
		{Outcome{ErrorCode: kerr.NotLeaderForPartition.Code}, true},
		{quiet(10), true},
		{quiet(10), false},
	}
	for i, a := range answers {
		f, code := c.Begin(t0, Request{SessionID: id, Epoch: int32(i + 1)})
		if code != 0 {
			t.Fatalf("fetch %d: code %d", i, code)
		}
		if _, inc := c.Finish(t0, f, []Outcome{a.out}); inc[0] != a.want {
			t.Fatalf("fetch %d: included %v, want %v", i, inc[0], a.want)
		}
	}
}

func TestIncrementalChanges(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
	id := open(t, c, t0, entry("a", 0, 0), entry("a", 1, 0), entry("b", 0, 0))
	// Move a-1's position, add c-0, forget b-0.
	f, code := c.Begin(t0, Request{SessionID: id, Epoch: 1,
		Partitions: []Entry{entry("a", 1, 42), entry("c", 0, 3)},
		Forgotten:  []Key{key("b", 0)}})
	if code != 0 {
		t.Fatalf("code %d", code)
	}
	want := []Entry{entry("a", 0, 0), entry("a", 1, 42), entry("c", 0, 3)}
	if !slices.Equal(f.Partitions, want) {
		t.Fatalf("partitions %v, want %v", f.Partitions, want)
	}
	// A partition new to the session is always answered the first time.
	_, inc := c.Finish(t0, f, []Outcome{quiet(10), quiet(10), quiet(10)})
	if !slices.Equal(inc, []bool{false, false, true}) {
		t.Fatalf("include %v", inc)
	}
	if st := c.Stats(); st.Partitions != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// TestAnsweredPartitionsMoveToTheEnd: partitions not answered come first
// in the next fetch, so each gets its turn at the request's byte limit.
func TestAnsweredPartitionsMoveToTheEnd(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
	id := open(t, c, t0, entry("a", 0, 0), entry("a", 1, 0), entry("a", 2, 0))
	f, _ := c.Begin(t0, Request{SessionID: id, Epoch: 1})
	c.Finish(t0, f, []Outcome{{HighWatermark: 10, LastStableOffset: 10, Records: true}, quiet(10), quiet(10)})
	f, _ = c.Begin(t0, Request{SessionID: id, Epoch: 2})
	if got := partitions(f); !slices.Equal(got, []Key{key("a", 1), key("a", 2), key("a", 0)}) {
		t.Fatalf("order %v", got)
	}
}

func TestForgettingEverythingClosesTheSession(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
	id := open(t, c, t0, entry("a", 0, 0))
	f, code := c.Begin(t0, Request{SessionID: id, Epoch: 1, Forgotten: []Key{key("a", 0)}})
	if code != 0 || f.Incremental() || len(f.Partitions) != 0 {
		t.Fatalf("code %d, fetch %+v", code, f)
	}
	if got, _ := c.Finish(t0, f, nil); got != 0 {
		t.Fatalf("answer carries session %d", got)
	}
	if st := c.Stats(); st.Sessions != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTopicIDKeys(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
	idA := [16]byte{1}
	e := Entry{Key: Key{TopicID: idA, Partition: 0}}
	f, _ := c.Begin(t0, Request{Epoch: InitialEpoch, UsesTopicIDs: true, Partitions: []Entry{e}})
	id, _ := c.Finish(t0, f, []Outcome{quiet(1)})
	if _, code := c.Begin(t0, Request{SessionID: id, Epoch: 1, UsesTopicIDs: false}); code != kerr.FetchSessionTopicIDError.Code {
		t.Fatalf("code %d", code)
	}
	f, code := c.Begin(t0, Request{SessionID: id, Epoch: 1, UsesTopicIDs: true, Forgotten: []Key{{TopicID: idA, Partition: 0}}})
	if code != 0 || len(f.Partitions) != 0 {
		t.Fatalf("forgetting by topic id: code %d, partitions %v", code, f.Partitions)
	}
}

func TestEviction(t *testing.T) {
	const after = time.Minute
	for _, tc := range []struct {
		name     string
		age      time.Duration // how long the held session went unused
		held     int           // its partitions
		newcomer int           // the new session's partitions
		evicted  bool
	}{
		{"smaller newcomer, fresh session", 0, 3, 2, false},
		{"equal newcomer, fresh session", 0, 3, 3, false},
		{"larger newcomer evicts the smaller", 0, 3, 4, true},
		{"stale session goes for any newcomer", after + time.Second, 3, 1, true},
		{"not yet stale", after, 3, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Config{Slots: 1, EvictAfter: after, NewID: ids()})
			var held, fresh []Entry
			for i := range tc.held {
				held = append(held, entry("held", int32(i), 0))
			}
			for i := range tc.newcomer {
				fresh = append(fresh, entry("new", int32(i), 0))
			}
			old := open(t, c, t0, held...)
			now := t0.Add(tc.age)
			got := open(t, c, now, fresh...)
			if (got != 0) != tc.evicted {
				t.Fatalf("new session %d, evicted %v", got, tc.evicted)
			}
			_, code := c.Begin(now, Request{SessionID: old, Epoch: 1})
			if (code == kerr.FetchSessionIDNotFound.Code) != tc.evicted {
				t.Fatalf("old session: code %d", code)
			}
			if st := c.Stats(); st.Sessions != 1 || (st.Evictions == 1) != tc.evicted {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestUsingASessionKeepsItFresh(t *testing.T) {
	c := New(Config{Slots: 1, EvictAfter: time.Minute, NewID: ids()})
	id := open(t, c, t0, entry("a", 0, 0))
	later := t0.Add(50 * time.Second)
	f, _ := c.Begin(later, Request{SessionID: id, Epoch: 1})
	c.Finish(later, f, []Outcome{quiet(10)})
	if got := open(t, c, t0.Add(90*time.Second), entry("b", 0, 0)); got != 0 {
		t.Fatalf("a session used 40 s ago was evicted for session %d", got)
	}
}

func TestSessionIDsAreUniqueAndNonZero(t *testing.T) {
	draws := []int32{0, 7, 7, 9}
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: func() int32 { d := draws[0]; draws = draws[1:]; return d }})
	a := open(t, c, t0, entry("a", 0, 0))
	b := open(t, c, t0, entry("b", 0, 0))
	if a != 7 || b != 9 {
		t.Fatalf("ids %d, %d", a, b)
	}
}

func TestNextEpoch(t *testing.T) {
	for _, tc := range []struct{ in, want int32 }{{0, 1}, {1, 2}, {1<<31 - 1, 1}, {-1, -1}} {
		if got := nextEpoch(tc.in); got != tc.want {
			t.Errorf("nextEpoch(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// TestThrottledAnswerRemembersNothing: an answer a quota emptied leaves the
// session as it was, so the change it would have carried is reported by
// the next fetch; a throttled full fetch opens no session.
func TestThrottledAnswerRemembersNothing(t *testing.T) {
	c := New(Config{Slots: 10, EvictAfter: time.Minute, NewID: ids()})
	full, code := c.Begin(t0, Request{Epoch: InitialEpoch, Partitions: []Entry{entry("a", 0, 0)}})
	if code != 0 {
		t.Fatalf("full fetch: code %d", code)
	}
	if id := c.Throttled(t0, full); id != 0 {
		t.Fatalf("throttled full fetch opened session %d", id)
	}
	id := open(t, c, t0, entry("a", 0, 0))
	f, code := c.Begin(t0, Request{SessionID: id, Epoch: 1})
	if code != 0 {
		t.Fatalf("code %d", code)
	}
	if got := c.Throttled(t0, f); got != id {
		t.Fatalf("throttled incremental fetch answered session %d, want %d", got, id)
	}
	f, code = c.Begin(t0, Request{SessionID: id, Epoch: 2})
	if code != 0 {
		t.Fatalf("code %d", code)
	}
	if _, inc := c.Finish(t0, f, []Outcome{quiet(11)}); !slices.Equal(inc, []bool{true}) {
		t.Fatalf("the high watermark change the throttled answer dropped is not reported: include %v", inc)
	}
}
