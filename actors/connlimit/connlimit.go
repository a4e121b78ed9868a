// Package connlimit counts a broker's open client connections and decides
// whether a new one may be served, as Kafka's ConnectionQuotas does:
// max.connections for the broker and for each listener,
// max.connection.creation.rate for the broker and for each listener, and
// max.connections.per.ip with its per-address overrides.
//
// A connection over the broker's or its listener's creation rate is held
// for its throttle time before it is served (Kafka's acceptor waits).
//
// A connection over the broker's or its listener's limit waits: the broker
// stops accepting on that listener until one closes (Kafka's acceptor
// blocks; the kernel's backlog holds what clients dial meanwhile). A
// connection over its address's limit is refused at once. The inter-broker
// listener is protected when the broker has more than one listener: its
// connections are accepted past the broker's limit (never past the
// listener's own), and then as many connections of the other listeners,
// the least recently active, must close.
package connlimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/quota"
)

// Unlimited is Kafka's default of each limit (Integer.MAX_VALUE).
const Unlimited = math.MaxInt32

// Limits are the connection limits in force.
type Limits struct {
	// Broker bounds the connections of all listeners together
	// (max.connections).
	Broker int
	// Listener bounds a listener's connections
	// (listener.name.<listener>.max.connections); a listener not named is
	// bounded by Broker alone.
	Listener map[string]int
	// PerIP bounds the connections from one address
	// (max.connections.per.ip), PerIPOverrides for the addresses it names
	// (max.connections.per.ip.overrides).
	PerIP          int
	PerIPOverrides map[netip.Addr]int
	// BrokerRate bounds the connections accepted per second on all
	// listeners but the protected one (max.connection.creation.rate),
	// ListenerRate on one listener
	// (listener.name.<listener>.max.connection.creation.rate).
	BrokerRate   int
	ListenerRate map[string]int
	// Protected is the inter-broker listener ("": none).
	Protected string
}

// None are the limits of a broker that sets none.
func None() Limits { return Limits{Broker: Unlimited, PerIP: Unlimited, BrokerRate: Unlimited} }

func (l Limits) listenerRate(name string) int {
	if n, ok := l.ListenerRate[name]; ok {
		return n
	}
	return Unlimited
}

func (l Limits) listener(name string) int {
	if n, ok := l.Listener[name]; ok {
		return n
	}
	return Unlimited
}

func (l Limits) perIP(ip netip.Addr) int {
	if n, ok := l.PerIPOverrides[ip]; ok {
		return n
	}
	return l.PerIP
}

// Counts are the connections open, as Admit reads them.
type Counts struct {
	Total      int
	ByListener map[string]int
	ByIP       map[netip.Addr]int
	// Listeners is how many listeners the broker serves: the inter-broker
	// listener is protected only when there are others.
	Listeners int
}

// Verdict is what Admit decides for a new connection.
type Verdict int

const (
	// Admit: serve it.
	Admit Verdict = iota
	// Wait: the broker or the listener is at its limit; accept nothing
	// more on this listener until a connection closes or the limits grow.
	Wait
	// Refuse: its address is at its limit; close it unserved.
	Refuse
)

func (v Verdict) String() string {
	switch v {
	case Admit:
		return "admit"
	case Wait:
		return "wait"
	case Refuse:
		return "refuse"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Decide is the verdict on a new connection from ip on listener, given
// what is open: the broker's and the listener's slots first (Kafka waits
// for a slot before it looks at the address), then the address's.
func Decide(l Limits, c Counts, listener string, ip netip.Addr) Verdict {
	if c.ByListener[listener] >= l.listener(listener) {
		return Wait
	}
	if !l.protects(listener, c.Listeners) && c.Total >= l.Broker {
		return Wait
	}
	if c.ByIP[ip] >= l.perIP(ip) {
		return Refuse
	}
	return Admit
}

func (l Limits) protects(listener string, listeners int) bool {
	return listener != "" && listener == l.Protected && listeners > 1
}

// Excess is how many connections of unprotected listeners should close:
// those over the broker's limit (after protected connections were
// accepted past it, or the limit was lowered).
func Excess(l Limits, c Counts) int {
	return max(0, c.Total-l.Broker)
}

// ErrTooManyFromAddress refuses a connection whose address is at its limit.
var ErrTooManyFromAddress = errors.New("address already has the configured maximum of connections")

// Counter keeps the counts of one broker's connections and applies its
// limits; it is safe for concurrent use.
type Counter struct {
	mu        sync.Mutex
	limits    Limits
	counts    Counts
	changed   chan struct{} // closed (and replaced) when a slot may have freed
	listeners int

	// The creation rates, measured over window on clk.
	window        quota.Window
	clk           clock.Clock
	brokerRate    quota.Rate
	listenerRates map[string]*quota.Rate
}

// New returns a counter for a broker serving the given number of
// listeners, under l, measuring creation rates over w (Kafka's
// quota.window.num and quota.window.size.seconds) on clk (nil: the wall
// clock).
func New(l Limits, listeners int, w quota.Window, clk clock.Clock) *Counter {
	return &Counter{limits: l, listeners: listeners, changed: make(chan struct{}),
		counts: Counts{ByListener: map[string]int{}, ByIP: map[netip.Addr]int{}, Listeners: listeners},
		window: w, clk: clock.OrReal(clk), listenerRates: map[string]*quota.Rate{}}
}

// Acquire counts a new connection from ip on listener, first holding it
// for its throttle time when it exceeds the broker's or the listener's
// creation rate, then waiting while the broker or the listener is at its
// limit. It returns an error wrapping ErrTooManyFromAddress, counting
// nothing, when ip is at its limit, and ctx's error if ctx ends while it
// waits.
func (c *Counter) Acquire(ctx context.Context, listener string, ip netip.Addr) error {
	ip = ip.Unmap()
	c.mu.Lock()
	d := c.recordCreation(listener, c.clk.Now())
	c.mu.Unlock()
	if d > 0 {
		if err := c.sleep(ctx, d); err != nil {
			return err
		}
	}
	for {
		c.mu.Lock()
		switch Decide(c.limits, c.counts, listener, ip) {
		case Admit:
			c.counts.Total++
			c.counts.ByListener[listener]++
			c.counts.ByIP[ip]++
			c.mu.Unlock()
			return nil
		case Refuse:
			n := c.limits.perIP(ip)
			c.mu.Unlock()
			return fmt.Errorf("%w (%d)", ErrTooManyFromAddress, n)
		}
		changed := c.changed
		c.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// recordCreation records a connection accepted on listener at now in the
// broker's rate (unless the listener is protected, as Kafka exempts its
// inter-broker listener) and the listener's, and returns the longer of
// their throttles, each at most one sample window, as Kafka bounds them.
// Call with c.mu held.
func (c *Counter) recordCreation(listener string, now time.Time) time.Duration {
	var d time.Duration
	if !c.limits.protects(listener, c.listeners) {
		d = c.throttle(&c.brokerRate, c.limits.BrokerRate, now)
	}
	r := c.listenerRates[listener]
	if r == nil {
		r = new(quota.Rate)
		c.listenerRates[listener] = r
	}
	return max(d, c.throttle(r, c.limits.listenerRate(listener), now))
}

// throttle records one connection in r and returns its throttle under
// bound connections a second; a bound of 0 holds every connection for the
// longest throttle, as a Kafka sensor whose quota is 0 does.
func (c *Counter) throttle(r *quota.Rate, bound int, now time.Time) time.Duration {
	d := r.Record(c.window, now, 1, float64(bound), c.window.Size)
	if bound <= 0 {
		d = c.window.Size
	}
	return d
}

// sleep waits d on the counter's clock, or until ctx ends.
func (c *Counter) sleep(ctx context.Context, d time.Duration) error {
	done := make(chan struct{})
	t := c.clk.AfterFunc(d, func() { close(done) })
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		t.Stop()
		return ctx.Err()
	}
}

// Release uncounts a connection Acquire counted.
func (c *Counter) Release(listener string, ip netip.Addr) {
	ip = ip.Unmap()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts.Total--
	if c.counts.ByListener[listener]--; c.counts.ByListener[listener] <= 0 {
		delete(c.counts.ByListener, listener)
	}
	if c.counts.ByIP[ip]--; c.counts.ByIP[ip] <= 0 {
		delete(c.counts.ByIP, ip)
	}
	c.wake()
}

// Set replaces the limits in force (dynamic broker configs). Connections
// already open stay counted; waiting ones are decided again.
func (c *Counter) Set(l Limits) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limits = l
	c.wake()
}

// Excess is how many connections of unprotected listeners should close
// now (Excess of the counts).
func (c *Counter) Excess() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Excess(c.limits, c.counts)
}

// Protects reports whether listener is the protected one.
func (c *Counter) Protects(listener string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limits.protects(listener, c.listeners)
}

// Open is how many connections are counted, in all and on listener.
func (c *Counter) Open(listener string) (total, onListener int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts.Total, c.counts.ByListener[listener]
}

func (c *Counter) wake() {
	close(c.changed)
	c.changed = make(chan struct{})
}
