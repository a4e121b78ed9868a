package quota

import (
	"sync"
	"time"
)

// bucket is Kafka's TokenBucket stat, which its controller_mutation_rate
// quota (KIP-599) uses instead of a sampled rate: tokens refill at the
// quota per second up to a burst of the quota over the whole window, and
// each partition mutation takes one. Unlike a sampled rate, a burst spent
// at once is paid back at the quota's pace rather than held for the whole
// window.
type bucket struct {
	tokens float64
	last   time.Time
	full   time.Time // when the bucket is full again: from then it can be dropped
}

// refill brings the bucket to now; a new bucket starts full.
func (b *bucket) refill(rate, burst float64, now time.Time) {
	switch {
	case b.last.IsZero():
		b.tokens = burst
	case now.After(b.last):
		b.tokens = min(burst, b.tokens+rate*now.Sub(b.last).Seconds())
	}
	if now.After(b.last) {
		b.last = now
	}
}

// owed is the time the bucket takes to climb back to zero tokens at rate
// (Kafka's -tokens / quota).
func (b *bucket) owed(rate float64) time.Duration {
	if b.tokens >= 0 || rate <= 0 {
		return 0
	}
	return time.Duration(-b.tokens / rate * float64(time.Second))
}

// MutationQuota is one request's controller_mutation_rate quota: the
// partitions a CreateTopics, CreatePartitions or DeleteTopics creates or
// deletes, admitted topic by topic as Kafka's controller admits them. A
// strict quota (the request versions that may be answered
// THROTTLING_QUOTA_EXCEEDED: CreateTopics v6+, CreatePartitions v3+,
// DeleteTopics v5+) refuses a topic once the bucket is exhausted and
// admits one that exhausts it; a permissive one (older versions) admits
// every topic and only throttles. Safe for concurrent use; a nil
// *MutationQuota admits everything.
type MutationQuota struct {
	q      *Quotas
	key    meterKey
	rate   float64
	strict bool
	now    func() time.Time

	mu       sync.Mutex
	throttle time.Duration
	at       time.Time // when throttle was computed
}

// Mutations is the controller_mutation_rate quota of a request from user
// and client, nil when no quota applies. now is the broker's clock.
func (q *Quotas) Mutations(user, client string, strict bool, now func() time.Time) *MutationQuota {
	bound, e, ok := q.Config().Resolve(ControllerMutationRate, user, client)
	if !ok || bound <= 0 {
		return nil
	}
	return &MutationQuota{q: q, key: meterKey{Mutation, e}, rate: bound, strict: strict, now: now}
}

// Admit records n partition mutations of one topic, or refuses them (the
// topic then gets THROTTLING_QUOTA_EXCEEDED): a strict quota refuses when
// the bucket is already below zero, Kafka's "admitted iff tokens >= 0".
func (m *MutationQuota) Admit(n int32) bool {
	if m == nil {
		return true
	}
	now := m.now()
	burst := m.rate * (time.Duration(m.q.window.Samples) * m.q.window.Size).Seconds()
	m.q.mu.Lock()
	b := m.q.bucket(m.key, now)
	b.refill(m.rate, burst, now)
	admit := !m.strict || b.tokens >= 0
	if admit {
		b.tokens = min(burst, b.tokens-float64(n))
		b.full = now.Add(time.Duration((burst - b.tokens) / m.rate * float64(time.Second)))
	}
	owed := b.owed(m.rate)
	m.q.mu.Unlock()
	if owed > 0 && (!admit || !m.strict) {
		m.mu.Lock()
		m.throttle, m.at = owed, now
		m.mu.Unlock()
	}
	return admit
}

// Throttle is the request's throttle time at now: the last one a refusal
// (strict) or an exhausting mutation (permissive) computed, less the time
// since, as Kafka answers it. A strict quota that admitted a topic which
// exhausted the bucket does not throttle that request: the next one is
// refused.
func (m *MutationQuota) Throttle() time.Duration {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return max(0, m.throttle-m.now().Sub(m.at))
}

// bucket is k's token bucket, made on first use; full, idle buckets are
// swept with the meters. Call with q.mu held.
func (q *Quotas) bucket(k meterKey, now time.Time) *bucket {
	q.sweep(now)
	return entry(q.buckets, k)
}
