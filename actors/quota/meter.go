package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Window is how rates are measured, as Kafka's quota.window.num and
// quota.window.size.seconds: Samples windows of Size each.
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindow is Kafka's: 11 one-second samples.
var DefaultWindow = Window{Samples: 11, Size: time.Second}

// sample is one window's total.
type sample struct {
	start time.Time
	total float64
}

// meter is a sampled rate (Kafka's Rate over a SampledStat): the total of
// the live samples over the time they span, never less than Samples-1
// windows, so a fresh meter does not read a burst as an enormous rate.
type meter struct {
	samples []sample
	last    time.Time
}

// record adds v at now.
func (m *meter) record(w Window, now time.Time, v float64) {
	m.purge(w, now)
	m.last = now
	if n := len(m.samples); n > 0 && now.Sub(m.samples[n-1].start) < w.Size {
		m.samples[n-1].total += v
		return
	}
	m.samples = append(m.samples, sample{start: now, total: v})
	if len(m.samples) > w.Samples {
		m.samples = m.samples[1:]
	}
}

// purge drops samples older than the whole window.
func (m *meter) purge(w Window, now time.Time) {
	expire := time.Duration(w.Samples) * w.Size
	i := 0
	for i < len(m.samples) && now.Sub(m.samples[i].start) >= expire {
		i++
	}
	m.samples = m.samples[i:]
}

// measure is the total and the time it is spread over at now.
func (m *meter) measure(w Window, now time.Time) (total float64, elapsed time.Duration) {
	m.purge(w, now)
	for _, s := range m.samples {
		total += s.total
	}
	if len(m.samples) > 0 {
		elapsed = now.Sub(m.samples[0].start)
	}
	full := int(elapsed / w.Size)
	if min := w.Samples - 1; full < min {
		elapsed += time.Duration(min-full) * w.Size
	}
	return total, elapsed
}

// Throttle is how long a client that has sent total bytes over elapsed
// must wait for its rate to come back to bound bytes per second (Kafka's
// (rate - bound) / bound * window), at most max.
func Throttle(total float64, elapsed time.Duration, bound float64, max time.Duration) time.Duration {
	if bound <= 0 || elapsed <= 0 {
		return 0
	}
	rate := total / elapsed.Seconds()
	if rate <= bound {
		return 0
	}
	d := time.Duration((rate - bound) / bound * float64(elapsed))
	if d > max {
		d = max
	}
	return d
}

// Rate is one sampled rate under a bound, as a Kafka sensor with a quota
// (the broker's and each listener's max.connection.creation.rate). Not
// safe for concurrent use: its owner serializes it.
type Rate struct{ m meter }

// Record adds v at now and returns how long its owner must wait for the
// rate over w to come back to bound per second (at most max; 0: within
// it). What is recorded stays recorded, throttled or not, as Kafka's
// sensor keeps it.
func (r *Rate) Record(w Window, now time.Time, v, bound float64, max time.Duration) time.Duration {
	r.m.record(w, now, v)
	total, elapsed := r.m.measure(w, now)
	return Throttle(total, elapsed, bound, max)
}

// Kind is what a quota meters.
type Kind int

// The enforced quota kinds.
const (
	Produce    Kind = iota // bytes of Produce requests (producer_byte_rate)
	Fetch                  // bytes of Fetch responses (consumer_byte_rate)
	Connection             // connections accepted from an address (connection_creation_rate)
	Mutation               // partitions created or deleted (controller_mutation_rate)
	Request                // time spent on a client's requests (request_percentage)
)

// Key is the quota key that bounds k.
func (k Kind) Key() string {
	switch k {
	case Fetch:
		return ConsumerByteRate
	case Connection:
		return ConnectionCreationRate
	case Mutation:
		return ControllerMutationRate
	case Request:
		return RequestPercentage
	}
	return ProducerByteRate
}

func (k Kind) String() string {
	switch k {
	case Fetch:
		return "fetch"
	case Connection:
		return "connection"
	case Mutation:
		return "controller_mutation"
	case Request:
		return "request"
	}
	return "produce"
}

// Quotas is the broker's quota state: the configuration snapshot (Set by
// the store's watcher) and a meter per (kind, quota entity). Safe for
// concurrent use; Record is a map lookup under a mutex, cheap enough for
// a connection actor's Receive.
type Quotas struct {
	window Window
	cfg    atomic.Pointer[Config]
	// timed: some entity sets request_percentage, so request times are
	// worth metering (most brokers have none: a request then costs no
	// lookup).
	timed atomic.Bool

	mu      sync.Mutex
	meters  map[meterKey]*meter
	buckets map[meterKey]*bucket
	swept   time.Time
}

type meterKey struct {
	kind   Kind
	entity Entity
}

// New returns quotas measured over w, with no quota configured.
func New(w Window) *Quotas {
	if w.Samples < 2 {
		w.Samples = 2
	}
	if w.Size <= 0 {
		w.Size = time.Second
	}
	q := &Quotas{window: w, meters: map[meterKey]*meter{}, buckets: map[meterKey]*bucket{}}
	q.cfg.Store(&Config{})
	return q
}

// Set replaces the configuration.
func (q *Quotas) Set(c Config) {
	cp := Config{}
	timed := false
	for e, vs := range c {
		if len(vs) > 0 {
			cp[e] = vs
		}
		_, set := vs[RequestPercentage]
		timed = timed || set
	}
	q.cfg.Store(&cp)
	q.timed.Store(timed)
}

// Config is the current configuration (do not modify it).
func (q *Quotas) Config() Config { return *q.cfg.Load() }

// Record adds n bytes of kind for a connection of user and client at now
// and returns how long that connection is to be throttled (0: within its
// quota, or none applies).
func (q *Quotas) Record(kind Kind, user, client string, n int, now time.Time) time.Duration {
	return q.record(kind, user, client, float64(n), time.Duration(q.window.Samples)*q.window.Size, now)
}

// nanosToPercent turns a time into request_percentage's unit, percent of
// one thread for one second (Kafka's NanosToPercentagePerSecond).
const nanosToPercent = 100.0 / float64(time.Second)

// Timed reports whether some entity sets request_percentage: only then is
// a request's time worth measuring.
func (q *Quotas) Timed() bool { return q.timed.Load() }

// RecordRequestTime adds d, time the broker spent on one request of a
// connection of user and client, and returns how long that connection is
// to be throttled under its request_percentage: at most one sample
// window, Kafka's bound for request quotas.
func (q *Quotas) RecordRequestTime(user, client string, d time.Duration, now time.Time) time.Duration {
	if !q.timed.Load() {
		return 0
	}
	return q.record(Request, user, client, float64(d)*nanosToPercent, q.window.Size, now)
}

func (q *Quotas) record(kind Kind, user, client string, v float64, maxThrottle time.Duration, now time.Time) time.Duration {
	bound, e, ok := q.Config().Resolve(kind.Key(), user, client)
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.meter(meterKey{kind, e}, now)
	m.record(q.window, now, v)
	total, elapsed := m.measure(q.window, now)
	return Throttle(total, elapsed, bound, maxThrottle)
}

// RecordConnection counts a connection accepted from addr at now and
// returns how long to hold it before closing it unserved (0: within the
// address's connection_creation_rate, or none applies). A throttled
// connection is taken back out of the rate, as Kafka does, so a client
// retrying during its throttle does not extend it; the throttle is at
// most one sample window (Kafka's bound for connection throttles).
func (q *Quotas) RecordConnection(addr string, now time.Time) time.Duration {
	bound, e, ok := q.Config().ResolveIP(addr)
	if !ok {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.meter(meterKey{Connection, e}, now)
	m.record(q.window, now, 1)
	total, elapsed := m.measure(q.window, now)
	d := Throttle(total, elapsed, bound, q.window.Size)
	if d > 0 {
		m.record(q.window, now, -1)
	}
	return d
}

// MaxInWindow is the most bytes of kind a connection of user and client
// may receive in one response: the quota over the shortest span a rate is
// measured over (Samples-1 windows), as Kafka caps a fetch under quota, so
// that one answer alone never exceeds the quota; ok is false when no
// quota applies.
func (q *Quotas) MaxInWindow(kind Kind, user, client string) (n int, ok bool) {
	bound, _, ok := q.Config().Resolve(kind.Key(), user, client)
	if !ok {
		return 0, false
	}
	return int(math.Min(bound*(time.Duration(q.window.Samples-1)*q.window.Size).Seconds(), math.MaxInt32)), true
}

// Unrecord takes back n bytes recorded at now (a throttled Fetch is
// answered empty, so its bytes were not sent).
func (q *Quotas) Unrecord(kind Kind, user, client string, n int, now time.Time) {
	_, e, ok := q.Config().Resolve(kind.Key(), user, client)
	if !ok {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if m := q.meters[meterKey{kind, e}]; m != nil {
		m.record(q.window, now, -float64(n))
	}
}

// meter is k's meter, made on first use; idle meters are swept first.
// Call with q.mu held.
func (q *Quotas) meter(k meterKey, now time.Time) *meter {
	q.sweep(now)
	return entry(q.meters, k)
}

// entry is m[k], made on first use.
func entry[T any](m map[meterKey]*T, k meterKey) *T {
	v := m[k]
	if v == nil {
		v = new(T)
		m[k] = v
	}
	return v
}

// sweep drops meters idle for longer than the whole window and buckets
// full again (as good as new), at most once per window, so client ids that
// come and go do not accumulate.
func (q *Quotas) sweep(now time.Time) {
	span := time.Duration(q.window.Samples) * q.window.Size
	if now.Sub(q.swept) < span {
		return
	}
	q.swept = now
	for k, m := range q.meters {
		if now.Sub(m.last) >= span {
			delete(q.meters, k)
		}
	}
	for k, b := range q.buckets {
		if !now.Before(b.full) {
			delete(q.buckets, k)
		}
	}
}
