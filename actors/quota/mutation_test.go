package quota

import (
	"testing"
	"time"
)

// mutationStep is one event of a controller_mutation_rate script: a
// request (a fresh MutationQuota) admitting topics of the given partition
// counts, at an offset from the script's start.
type mutationStep struct {
	at       time.Duration
	user     string
	strict   bool
	topics   []int32
	admitted []bool
	throttle time.Duration // the request's throttle once its topics are decided
}

// TestMutationQuota runs request scripts against a 10 partitions/s quota
// for the default user, measured over Kafka's default window (11 × 1 s: a
// burst of 110 partitions), in virtual time. The figures are Kafka's:
// KIP-599's token bucket and its StrictControllerMutationQuota and
// PermissiveControllerMutationQuota.
func TestMutationQuota(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []mutationStep
	}{
		{"strict admits until the bucket is below zero", []mutationStep{
			// 110 -> 20 -> -70: both admitted, and no throttle, since the
			// bucket was not exhausted when each topic came.
			{at: 0, strict: true, topics: []int32{90, 90}, admitted: []bool{true, true}},
			// Below zero: refused, throttled until the bucket is back at 0.
			{at: 0, strict: true, topics: []int32{1}, admitted: []bool{false}, throttle: 7 * time.Second},
			// 5 s later the bucket holds -20: still refused, 2 s owed.
			{at: 5 * time.Second, strict: true, topics: []int32{1, 1}, admitted: []bool{false, false}, throttle: 2 * time.Second},
			// At 0 tokens a topic is admitted whatever its size.
			{at: 7 * time.Second, strict: true, topics: []int32{50, 1}, admitted: []bool{true, false}, throttle: 5 * time.Second},
		}},
		{"strict in one request: a topic that exhausts the bucket stops the next", []mutationStep{
			{at: 0, strict: true, topics: []int32{100, 20, 1}, admitted: []bool{true, true, false}, throttle: time.Second},
		}},
		{"permissive admits everything and throttles once exhausted", []mutationStep{
			{at: 0, topics: []int32{100}, admitted: []bool{true}},
			{at: 0, topics: []int32{100}, admitted: []bool{true}, throttle: 9 * time.Second},
			{at: 4 * time.Second, topics: []int32{10}, admitted: []bool{true}, throttle: 6 * time.Second},
		}},
		{"refill stops at the burst", []mutationStep{
			{at: 0, strict: true, topics: []int32{10}, admitted: []bool{true}},
			// An hour later the bucket holds 110, not 36,000.
			{at: time.Hour, strict: true, topics: []int32{110, 1}, admitted: []bool{true, true}},
			{at: time.Hour, strict: true, topics: []int32{1}, admitted: []bool{false}, throttle: 100 * time.Millisecond},
		}},
		{"a default quota meters each user on its own", []mutationStep{
			{at: 0, user: "alice", strict: true, topics: []int32{120, 1}, admitted: []bool{true, false}, throttle: time.Second},
			{at: 0, user: "bob", strict: true, topics: []int32{110, 1}, admitted: []bool{true, true}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := New(DefaultWindow)
			q.Set(Config{{User: Default()}: {ControllerMutationRate: 10}})
			start := time.Unix(1_700_000_000, 0)
			var now time.Time
			clock := func() time.Time { return now }
			for i, s := range tc.steps {
				now = start.Add(s.at)
				user := s.user
				if user == "" {
					user = "alice"
				}
				m := q.Mutations(user, "c", s.strict, clock)
				if m == nil {
					t.Fatalf("step %d: no quota resolved for %s", i, user)
				}
				for j, n := range s.topics {
					if got := m.Admit(n); got != s.admitted[j] {
						t.Fatalf("step %d topic %d (%d partitions): Admit = %v; want %v", i, j, n, got, s.admitted[j])
					}
				}
				if got := m.Throttle(); got != s.throttle {
					t.Fatalf("step %d: Throttle = %v; want %v", i, got, s.throttle)
				}
			}
		})
	}
}

// TestMutationThrottleRunsDown: the throttle a request answers with is
// what is left of it when the answer is built (Kafka deducts the time the
// request spent after the refusal).
func TestMutationThrottleRunsDown(t *testing.T) {
	q := New(DefaultWindow)
	q.Set(Config{{ClientID: Named("admin")}: {ControllerMutationRate: 1}})
	now := time.Unix(1_700_000_000, 0)
	m := q.Mutations("ANONYMOUS", "admin", true, func() time.Time { return now })
	if !m.Admit(13) || m.Admit(1) {
		t.Fatal("want the first topic admitted and the second refused")
	}
	if got := m.Throttle(); got != 2*time.Second {
		t.Fatalf("Throttle = %v; want 2s", got)
	}
	now = now.Add(1500 * time.Millisecond)
	if got := m.Throttle(); got != 500*time.Millisecond {
		t.Fatalf("Throttle 1.5 s later = %v; want 500ms", got)
	}
	now = now.Add(time.Second)
	if got := m.Throttle(); got != 0 {
		t.Fatalf("Throttle once run down = %v; want 0", got)
	}
}

// TestMutationQuotaNone: without a controller_mutation_rate (other keys
// set) there is no quota, and a nil quota admits everything.
func TestMutationQuotaNone(t *testing.T) {
	q := New(DefaultWindow)
	q.Set(Config{{User: Default()}: {ProducerByteRate: 10}})
	m := q.Mutations("alice", "c", true, time.Now)
	if m != nil {
		t.Fatalf("Mutations = %+v; want nil without controller_mutation_rate", m)
	}
	if !m.Admit(1 << 30) {
		t.Fatal("a nil quota refused a topic")
	}
	if d := m.Throttle(); d != 0 {
		t.Fatalf("a nil quota throttles %v", d)
	}
}

// TestMutationBucketsSwept: a bucket full again is dropped (a new one
// starts full, so nothing changes), one still owed is kept.
func TestMutationBucketsSwept(t *testing.T) {
	q := New(DefaultWindow)
	q.Set(Config{{User: Default()}: {ControllerMutationRate: 1}})
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	q.Mutations("full-soon", "c", true, clock).Admit(1)
	q.Mutations("owing", "c", true, clock).Admit(100)
	now = now.Add(20 * time.Second)
	q.Mutations("other", "c", true, clock).Admit(1) // sweeps
	q.mu.Lock()
	_, full := q.buckets[meterKey{Mutation, Entity{User: Named("full-soon")}}]
	_, owing := q.buckets[meterKey{Mutation, Entity{User: Named("owing")}}]
	q.mu.Unlock()
	if full || !owing {
		t.Fatalf("after 20 s: full bucket kept %v (want false), owing bucket kept %v (want true)", full, owing)
	}
	if m := q.Mutations("owing", "c", true, clock); m.Admit(1) {
		// 11 - 100 + 20 = -69 tokens: still refused.
		t.Fatal("the owing user was admitted: its bucket was reset")
	}
}

// TestRecordRequestTime: request_percentage meters time as percent of one
// thread (Kafka's unit) and bounds a throttle to one sample window; a
// broker with no request_percentage anywhere meters nothing.
func TestRecordRequestTime(t *testing.T) {
	q := New(DefaultWindow)
	now := time.Unix(1_700_000_000, 0)
	q.Set(Config{{ClientID: Named("c")}: {ProducerByteRate: 100}})
	if d := q.RecordRequestTime("u", "c", time.Hour, now); d != 0 {
		t.Fatalf("without request_percentage: throttle %v", d)
	}
	// 10 % of a thread: 1 s of request time per 10 s (the shortest span a
	// rate is measured over, Samples-1 windows).
	q.Set(Config{{ClientID: Named("c")}: {RequestPercentage: 10}})
	if d := q.RecordRequestTime("u", "c", 500*time.Millisecond, now); d != 0 {
		t.Fatalf("5 %% of a thread under a 10 %% quota: throttle %v", d)
	}
	if d := q.RecordRequestTime("u", "c", 400*time.Millisecond, now); d != 0 {
		t.Fatalf("9 %% of a thread under a 10 %% quota: throttle %v", d)
	}
	// 10.5 %: (10.5-10)/10 of the 10 s span is owed.
	if d := q.RecordRequestTime("u", "c", 150*time.Millisecond, now); d < 499*time.Millisecond || d > 501*time.Millisecond {
		t.Fatalf("10.5 %% of a thread under a 10 %% quota: throttle %v; want 500ms", d)
	}
	// Far over: bounded to one window.
	if d := q.RecordRequestTime("u", "c", 10*time.Second, now); d != time.Second {
		t.Fatalf("far over quota: throttle %v; want one window (1s)", d)
	}
	if d := q.RecordRequestTime("u", "other", 10*time.Second, now); d != 0 {
		t.Fatalf("a client id without a quota: throttle %v", d)
	}
}
