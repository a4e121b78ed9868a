package connlimit

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/quota"
	"github.com/kaas-project/kaas/storage/brokerconfig"
)

var (
	ipA = netip.MustParseAddr("10.0.0.1")
	ipB = netip.MustParseAddr("10.0.0.2")
)

func TestDecide(t *testing.T) {
	limits := Limits{Broker: 4, PerIP: 2, PerIPOverrides: map[netip.Addr]int{ipB: 3},
		Listener: map[string]int{"EXTERNAL": 1}, Protected: "INTERNAL"}
	counts := func(total int, byListener map[string]int, byIP map[netip.Addr]int, listeners int) Counts {
		return Counts{Total: total, ByListener: byListener, ByIP: byIP, Listeners: listeners}
	}
	for _, tc := range []struct {
		name     string
		l        Limits
		c        Counts
		listener string
		ip       netip.Addr
		want     Verdict
	}{
		{"nothing open", limits, counts(0, nil, nil, 2), "CLIENT", ipA, Admit},
		{"address at its limit", limits, counts(2, map[string]int{"CLIENT": 2}, map[netip.Addr]int{ipA: 2}, 2), "CLIENT", ipA, Refuse},
		{"an override above the default", limits, counts(2, map[string]int{"CLIENT": 2}, map[netip.Addr]int{ipB: 2}, 2), "CLIENT", ipB, Admit},
		{"the override reached", limits, counts(3, map[string]int{"CLIENT": 3}, map[netip.Addr]int{ipB: 3}, 2), "CLIENT", ipB, Refuse},
		{"broker at its limit", limits, counts(4, map[string]int{"CLIENT": 4}, nil, 2), "CLIENT", ipA, Wait},
		// Kafka waits for a slot before it counts the address: a full
		// broker makes even a refused address wait.
		{"broker full and address full", limits, counts(4, map[string]int{"CLIENT": 4}, map[netip.Addr]int{ipA: 2}, 2), "CLIENT", ipA, Wait},
		{"listener at its own limit", limits, counts(1, map[string]int{"EXTERNAL": 1}, nil, 2), "EXTERNAL", ipA, Wait},
		{"another listener is not bound by it", limits, counts(1, map[string]int{"EXTERNAL": 1}, nil, 2), "CLIENT", ipA, Admit},
		{"inter-broker listener past the broker's limit", limits, counts(4, map[string]int{"CLIENT": 4}, nil, 2), "INTERNAL", ipA, Admit},
		{"inter-broker listener alone is not protected", limits, counts(4, map[string]int{"INTERNAL": 4}, nil, 1), "INTERNAL", ipA, Wait},
		{"inter-broker listener still bound by its own limit",
			Limits{Broker: 4, PerIP: 9, Listener: map[string]int{"INTERNAL": 2}, Protected: "INTERNAL"},
			counts(4, map[string]int{"INTERNAL": 2, "CLIENT": 2}, nil, 2), "INTERNAL", ipA, Wait},
		{"inter-broker listener still bound per address", limits, counts(4, map[string]int{"CLIENT": 4}, map[netip.Addr]int{ipA: 2}, 2), "INTERNAL", ipA, Refuse},
		{"per ip 0 with an override", Limits{Broker: Unlimited, PerIP: 0, PerIPOverrides: map[netip.Addr]int{ipB: 1}},
			counts(0, nil, nil, 1), "CLIENT", ipA, Refuse},
		{"per ip 0, the overridden address", Limits{Broker: Unlimited, PerIP: 0, PerIPOverrides: map[netip.Addr]int{ipB: 1}},
			counts(0, nil, nil, 1), "CLIENT", ipB, Admit},
		{"no limits", None(), counts(1<<20, map[string]int{"CLIENT": 1 << 20}, map[netip.Addr]int{ipA: 1 << 20}, 1), "CLIENT", ipA, Admit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.l, tc.c, tc.listener, tc.ip); got != tc.want {
				t.Fatalf("Decide = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExcess(t *testing.T) {
	l := Limits{Broker: 3}
	for total, want := range map[int]int{0: 0, 3: 0, 4: 1, 7: 4} {
		if got := Excess(l, Counts{Total: total}); got != want {
			t.Errorf("Excess of %d open under 3 = %d, want %d", total, got, want)
		}
	}
}

// acquireAsync starts an Acquire and returns where its result arrives.
func acquireAsync(ctx context.Context, c *Counter, listener string, ip netip.Addr) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- c.Acquire(ctx, listener, ip) }()
	return ch
}

func pending(t *testing.T, ch <-chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("Acquire returned %v while the broker is at its limit", err)
	case <-time.After(50 * time.Millisecond):
	}
}

func done(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire still waits")
		return nil
	}
}

func TestCounterWaitsForASlot(t *testing.T) {
	ctx := context.Background()
	c := New(Limits{Broker: 2, PerIP: Unlimited, BrokerRate: Unlimited}, 1, quota.DefaultWindow, nil)
	for range 2 {
		if err := c.Acquire(ctx, "PLAINTEXT", ipA); err != nil {
			t.Fatal(err)
		}
	}
	third := acquireAsync(ctx, c, "PLAINTEXT", ipB)
	pending(t, third)
	c.Release("PLAINTEXT", ipA)
	if err := done(t, third); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if total, on := c.Open("PLAINTEXT"); total != 2 || on != 2 {
		t.Fatalf("open %d, %d on the listener; want 2, 2", total, on)
	}
	// Raising the limit lets a waiting connection in.
	fourth := acquireAsync(ctx, c, "PLAINTEXT", ipB)
	pending(t, fourth)
	c.Set(Limits{Broker: 3, PerIP: Unlimited, BrokerRate: Unlimited})
	if err := done(t, fourth); err != nil {
		t.Fatalf("after the limit grew: %v", err)
	}
	// A cancelled wait counts nothing.
	cctx, cancel := context.WithCancel(ctx)
	fifth := acquireAsync(cctx, c, "PLAINTEXT", ipB)
	pending(t, fifth)
	cancel()
	if err := done(t, fifth); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if total, _ := c.Open("PLAINTEXT"); total != 3 {
		t.Fatalf("open %d, want 3", total)
	}
}

func TestCounterRefusesAnAddressAtItsLimit(t *testing.T) {
	ctx := context.Background()
	c := New(Limits{Broker: Unlimited, PerIP: 1, BrokerRate: Unlimited}, 1, quota.DefaultWindow, nil)
	if err := c.Acquire(ctx, "PLAINTEXT", ipA); err != nil {
		t.Fatal(err)
	}
	err := c.Acquire(ctx, "PLAINTEXT", ipA)
	if !errors.Is(err, ErrTooManyFromAddress) {
		t.Fatalf("second from %v: %v", ipA, err)
	}
	if total, _ := c.Open("PLAINTEXT"); total != 1 {
		t.Fatalf("a refused connection was counted: %d open", total)
	}
	if err := c.Acquire(ctx, "PLAINTEXT", ipB); err != nil {
		t.Fatalf("another address: %v", err)
	}
	// An IPv4-mapped IPv6 address is the IPv4 address.
	if err := c.Acquire(ctx, "PLAINTEXT", netip.MustParseAddr("::ffff:10.0.0.1")); !errors.Is(err, ErrTooManyFromAddress) {
		t.Fatalf("mapped address: %v", err)
	}
	c.Release("PLAINTEXT", ipA)
	if err := c.Acquire(ctx, "PLAINTEXT", ipA); err != nil {
		t.Fatalf("after its connection closed: %v", err)
	}
}

func TestCounterProtectsTheInterBrokerListener(t *testing.T) {
	ctx := context.Background()
	c := New(Limits{Broker: 1, PerIP: Unlimited, BrokerRate: Unlimited, Protected: "INTERNAL"}, 2, quota.DefaultWindow, nil)
	if err := c.Acquire(ctx, "CLIENT", ipA); err != nil {
		t.Fatal(err)
	}
	if err := c.Acquire(ctx, "INTERNAL", ipB); err != nil {
		t.Fatalf("inter-broker connection at the broker's limit: %v", err)
	}
	if n := c.Excess(); n != 1 {
		t.Fatalf("excess %d, want 1", n)
	}
	if !c.Protects("INTERNAL") || c.Protects("CLIENT") {
		t.Fatal("Protects names the wrong listener")
	}
	c.Release("CLIENT", ipA)
	if n := c.Excess(); n != 0 {
		t.Fatalf("excess %d after the client connection closed, want 0", n)
	}
}

func TestFromConfigs(t *testing.T) {
	resolve := func(host string) (netip.Addr, error) {
		if host == "client.example" {
			return netip.MustParseAddr("10.9.9.9"), nil
		}
		return netip.Addr{}, errors.New("no such host")
	}
	static := Static{Broker: 100, PerIP: 10, BrokerRate: 40, Overrides: "10.0.0.1:20"}
	listeners := []string{"INTERNAL", "EXTERNAL"}

	l, skipped, err := FromConfigs(nil, static, listeners, resolve)
	if err != nil || len(skipped) != 0 {
		t.Fatal(err, skipped)
	}
	if l.Broker != 100 || l.PerIP != 10 || l.BrokerRate != 40 || l.PerIPOverrides[ipA] != 20 || l.Protected != "INTERNAL" ||
		l.Listener != nil || l.ListenerRate != nil {
		t.Fatalf("static limits: %+v", l)
	}

	l, skipped, err = FromConfigs(map[string]string{
		brokerconfig.MaxConnections: "50", brokerconfig.MaxConnectionsPerIP: "0",
		brokerconfig.MaxConnectionsPerIPOverrides:             "client.example:5, nowhere.example:6, 10.0.0.2:7",
		"listener.name.external.max.connections":              "30",
		"max.connection.creation.rate":                        "25",
		"listener.name.internal.max.connection.creation.rate": "9",
	}, static, listeners, resolve)
	if err != nil {
		t.Fatal(err)
	}
	if l.Broker != 50 || l.PerIP != 0 || l.Listener["EXTERNAL"] != 30 || len(l.Listener) != 1 ||
		l.BrokerRate != 25 || l.ListenerRate["INTERNAL"] != 9 || len(l.ListenerRate) != 1 {
		t.Fatalf("dynamic limits: %+v", l)
	}
	if len(l.PerIPOverrides) != 2 || l.PerIPOverrides[netip.MustParseAddr("10.9.9.9")] != 5 || l.PerIPOverrides[ipB] != 7 {
		t.Fatalf("dynamic overrides replace the static ones: %v", l.PerIPOverrides)
	}
	if len(skipped) != 1 {
		t.Fatalf("skipped %v, want nowhere.example", skipped)
	}

	for _, bad := range []map[string]string{{brokerconfig.MaxConnections: "-1"}, {brokerconfig.MaxConnectionsPerIP: "x"}, {brokerconfig.MaxConnectionsPerIPOverrides: "a"},
		{"listener.name.internal.max.connections": "9999999999"}} {
		if _, _, err := FromConfigs(bad, static, listeners, resolve); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestCounterThrottlesTheCreationRate: connections over the broker's or a
// listener's creation rate are held for their throttle time (virtual
// time), then served; the protected listener is exempt from the broker's
// rate, not from its own.
func TestCounterThrottlesTheCreationRate(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	w := quota.Window{Samples: 2, Size: time.Second}
	c := New(Limits{Broker: Unlimited, PerIP: Unlimited, BrokerRate: 2, ListenerRate: map[string]int{"INTERNAL": 4},
		Protected: "INTERNAL"}, 2, w, clk)
	// Two a second over at least one window: the first two are within it.
	for i := range 2 {
		if err := done(t, acquireAsync(ctx, c, "CLIENT", ipA)); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
	}
	third := acquireAsync(ctx, c, "CLIENT", ipA)
	pending(t, third)
	// The inter-broker listener is not held by the broker's rate.
	for i := range 4 {
		if err := done(t, acquireAsync(ctx, c, "INTERNAL", ipB)); err != nil {
			t.Fatalf("inter-broker connection %d: %v", i, err)
		}
	}
	// But by its own: a fifth in the same instant is held.
	fifth := acquireAsync(ctx, c, "INTERNAL", ipB)
	pending(t, fifth)
	clk.Advance(time.Second) // at most one window
	if err := done(t, third); err != nil {
		t.Fatalf("held connection: %v", err)
	}
	if err := done(t, fifth); err != nil {
		t.Fatalf("held inter-broker connection: %v", err)
	}
	if total, _ := c.Open(""); total != 8 {
		t.Fatalf("%d open, want 8", total)
	}
	// A held connection whose listener closes counts nothing.
	cctx, cancel := context.WithCancel(ctx)
	held := acquireAsync(cctx, c, "CLIENT", ipA)
	pending(t, held)
	cancel()
	if err := done(t, held); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while held: %v", err)
	}
	if total, _ := c.Open(""); total != 8 {
		t.Fatalf("%d open after a cancelled wait, want 8", total)
	}
}
