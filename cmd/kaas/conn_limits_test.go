package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// probe is one raw client connection that asks ApiVersions.
type probe struct {
	t    *testing.T
	name string
	c    net.Conn
	corr int32
}

// dialProbe connects from the loopback address from (127.0.0.x) to addr.
func dialProbe(t *testing.T, name string, from byte, addr string) *probe {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, from)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("%s: dial %s: %v", name, addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &probe{t: t, name: name, c: c}
}

// send writes an ApiVersions request.
func (p *probe) send() {
	p.corr++
	req := kmsg.NewPtrApiVersionsRequest()
	_, _ = p.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("conn-limits")).AppendRequest(nil, req, p.corr))
}

// await reads the answer to the last request for up to d: "answered", or
// "closed" when the broker closed the connection, or "silent" when nothing
// came (the request stays pending: a later await reads its answer).
func (p *probe) await(d time.Duration) string {
	_ = p.c.SetReadDeadline(time.Now().Add(d))
	var size [4]byte
	_, err := io.ReadFull(p.c, size[:])
	var ne net.Error
	switch {
	case err == nil:
		n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
		if _, err := io.ReadFull(p.c, make([]byte, n)); err != nil {
			return "closed"
		}
		return "answered"
	case errors.As(err, &ne) && ne.Timeout():
		return "silent"
	default:
		return "closed"
	}
}

// ask sends a request and waits up to 10 s for its outcome.
func (p *probe) ask() string {
	p.send()
	return p.await(10 * time.Second)
}

// closedSoon checks that the broker closes the connection: requests may
// still be answered until it does (an eviction closes off the accept
// loop, as Kafka's processors close in their next poll).
func (p *probe) closedSoon() {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.send()
		switch got := p.await(10 * time.Second); {
		case got == "closed":
			return
		case got != "answered" || time.Now().After(deadline):
			p.t.Fatalf("%s: %s, want closed", p.name, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (p *probe) want(got, want string) {
	p.t.Helper()
	if got != want {
		p.t.Fatalf("%s: %s, want %s", p.name, got, want)
	}
}

// held checks that the connection is held unserved: its request gets no
// answer for a while and the connection stays open.
func (p *probe) held() {
	p.t.Helper()
	p.send()
	p.want(p.await(500*time.Millisecond), "silent")
}

// TestConnectionLimitsPerAddress: max.connections.per.ip and its
// overrides close, unserved, a connection from an address that has its
// limit open, as Kafka's acceptor does; another address, or the same one
// after a connection closed, is served; lowering the limit at runtime
// (a dynamic broker config) refuses new connections and keeps those open.
func TestConnectionLimitsPerAddress(t *testing.T) {
	_, addr, _ := startTestBroker(t, "--max-connections-per-ip", "2", "--max-connections-per-ip-overrides", "127.0.0.2:3, 127.0.0.3:10")
	a1, a2 := dialProbe(t, "a1", 1, addr), dialProbe(t, "a2", 1, addr)
	a1.want(a1.ask(), "answered")
	a2.want(a2.ask(), "answered")
	a3 := dialProbe(t, "a3 (127.0.0.1's third)", 1, addr)
	a3.want(a3.ask(), "closed")
	var b []*probe
	for i := range 3 {
		p := dialProbe(t, fmt.Sprintf("b%d", i+1), 2, addr)
		p.want(p.ask(), "answered")
		b = append(b, p)
	}
	b4 := dialProbe(t, "b4 (127.0.0.2's fourth, over its override of 3)", 2, addr)
	b4.want(b4.ask(), "closed")

	// A real client (several connections) from an address with room for them.
	from3 := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}, Timeout: 10 * time.Second}
	cl := newClient(t, addr, kgo.DefaultProduceTopic("conn-limits"), kgo.AllowAutoTopicCreation(), kgo.Dialer(from3.DialContext))
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("franz-go from 127.0.0.3: %v", err)
	}
	cl.Close()

	// A closed connection frees its slot (once the broker has seen it close).
	_ = a1.c.Close()
	waitUntil(t, 10*time.Second, "a new connection from 127.0.0.1 after one closed", func() bool {
		return dialProbe(t, "a4", 1, addr).ask() == "answered"
	})

	adm := kadm.NewClient(newClient(t, addr, kgo.Dialer(from3.DialContext)))
	sp := func(s string) *string { return &s }
	if res, err := adm.AlterBrokerConfigs(ctxT(t, 10*time.Second), []kadm.AlterConfig{{Name: "max.connections.per.ip.overrides", Value: sp("127.0.0.2:1,127.0.0.3:10")}}, 0); err != nil || res[0].Err != nil {
		t.Fatalf("lower 127.0.0.2's override: %v %v", err, res)
	}
	waitUntil(t, 10*time.Second, "a connection from 127.0.0.2 refused under its new override of 1", func() bool {
		return dialProbe(t, "b5", 2, addr).ask() == "closed"
	})
	for _, p := range b {
		p.want(p.ask(), "answered") // open before the change: kept
	}
	// 0: only the addresses the overrides name may connect.
	if res, err := adm.AlterBrokerConfigs(ctxT(t, 10*time.Second), []kadm.AlterConfig{{Name: "max.connections.per.ip", Value: sp("0")}}, 0); err != nil || res[0].Err != nil {
		t.Fatalf("max.connections.per.ip=0 with overrides: %v %v", err, res)
	}
	waitUntil(t, 10*time.Second, "a connection from 127.0.0.4, which no override names, refused", func() bool {
		return dialProbe(t, "d1", 4, addr).ask() == "closed"
	})
	if p := dialProbe(t, "c1", 3, addr); p.ask() != "answered" {
		t.Fatal("127.0.0.3, which its override lets in, refused")
	}
	res, err := adm.AlterBrokerConfigs(ctxT(t, 10*time.Second), []kadm.AlterConfig{{Name: "max.connections.per.ip.overrides", Op: kadm.DeleteConfig}}, 0)
	if err == nil && res[0].Err == nil {
		t.Fatal("max.connections.per.ip.overrides deleted while max.connections.per.ip is 0")
	}
}

// TestConnectionLimitsBrokerWide: at max.connections a listener holds the
// next connection unserved until one closes; the first listener of two
// (the inter-broker one) is served past the limit, and the least recently
// active connection of the other listener is closed to make room; a
// listener's own limit (listener.name.<listener>.max.connections) holds
// only that listener; lowering max.connections at runtime closes the least
// recently active connections of the unprotected listener. The limits are
// set as dynamic broker configs through an admin client on the
// inter-broker listener, whose own connections count too.
func TestConnectionLimitsBrokerWide(t *testing.T) {
	internal, external := freeAddr(t), freeAddr(t)
	b, _ := startBrokerArgs(t, "--listeners", "INTERNAL://"+internal+",EXTERNAL://"+external,
		"--listener-security-protocol-map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
		"--http-addr", "", "--log-level", "warn")
	adm := kadm.NewClient(newClient(t, internal))
	sp := func(s string) *string { return &s }
	alter := func(what string, cfgs ...kadm.AlterConfig) {
		t.Helper()
		if res, err := adm.AlterBrokerConfigs(ctxT(t, 10*time.Second), cfgs, 0); err != nil || res[0].Err != nil {
			t.Fatalf("%s: %v %v", what, err, res)
		}
	}
	open := func() int { n, _ := b.srv.ConnLimits.Open(""); return n }
	alter("warm up the admin client's connections", kadm.AlterConfig{Name: "max.connections", Value: sp("1000")})
	admin := open()
	alter("max.connections: room for two more", kadm.AlterConfig{Name: "max.connections", Value: sp(fmt.Sprint(admin + 2))})

	e1, e2 := dialProbe(t, "e1", 1, external), dialProbe(t, "e2", 1, external)
	e1.want(e1.ask(), "answered")
	e2.want(e2.ask(), "answered")
	e3 := dialProbe(t, "e3 (over max.connections)", 1, external)
	e3.held()
	_ = e1.c.Close()
	e3.want(e3.await(10*time.Second), "answered") // its request, held until e1 closed

	// e2 is now the least recently active EXTERNAL connection.
	time.Sleep(20 * time.Millisecond)
	e3.want(e3.ask(), "answered")
	i1 := dialProbe(t, "i1 (inter-broker listener, at the limit)", 1, internal)
	i1.want(i1.ask(), "answered")
	e2.closedSoon()
	e3.want(e3.ask(), "answered")

	alter("raise max.connections, bound EXTERNAL to 1",
		kadm.AlterConfig{Name: "max.connections", Value: sp("1000")},
		kadm.AlterConfig{Name: "listener.name.external.max.connections", Value: sp("1")})
	e4 := dialProbe(t, "e4 (over EXTERNAL's own limit)", 1, external)
	e4.held()
	i2 := dialProbe(t, "i2", 1, internal)
	i2.want(i2.ask(), "answered")
	alter("unbound EXTERNAL", kadm.AlterConfig{Name: "listener.name.external.max.connections", Op: kadm.DeleteConfig})
	e4.want(e4.await(10*time.Second), "answered")

	// Lowered under what is open (the admin's, i1, i2, e3, e4): EXTERNAL's
	// connections close until the broker is within the limit; the
	// inter-broker listener's stay.
	if n := open(); n != admin+4 {
		t.Fatalf("%d connections open, want %d", n, admin+4)
	}
	alter("lower max.connections by two", kadm.AlterConfig{Name: "max.connections", Value: sp(fmt.Sprint(admin + 2))})
	for _, p := range []*probe{e3, e4} {
		p.closedSoon()
	}
	for _, p := range []*probe{i1, i2} {
		p.want(p.ask(), "answered")
	}
}

// TestConnectionCreationRateLimits: connections over
// max.connection.creation.rate are held for their throttle time, then
// served (none is closed), on every listener but the first (inter-broker)
// one; a listener's own rate (listener.name.<listener>.
// max.connection.creation.rate, set at runtime) holds that one too.
func TestConnectionCreationRateLimits(t *testing.T) {
	internal, external := freeAddr(t), freeAddr(t)
	startBrokerArgs(t, "--listeners", "INTERNAL://"+internal+",EXTERNAL://"+external,
		"--listener-security-protocol-map", "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
		"--http-addr", "", "--log-level", "warn",
		"--quota-window-num", "2", "--quota-window-size", "1s", "--max-connection-creation-rate", "2")
	// burst opens n connections one after another and returns how long
	// it took until each was served.
	burst := func(name, addr string, n int) time.Duration {
		start := time.Now()
		for i := range n {
			p := dialProbe(t, fmt.Sprintf("%s %d", name, i+1), 1, addr)
			p.want(p.ask(), "answered")
			_ = p.c.Close()
		}
		return time.Since(start)
	}
	// Two a second over windows of one second: the third and later wait
	// (0.5 s, then 1 s each); without the rate they take milliseconds.
	ext := burst("EXTERNAL", external, 5)
	if ext < time.Second {
		t.Fatalf("5 connections at 2 a second served within %v", ext)
	}
	in := burst("INTERNAL", internal, 5)
	if in > ext/2 {
		t.Fatalf("the inter-broker listener's 5 connections took %v, EXTERNAL's %v: held by the broker's rate", in, ext)
	}

	adm := kadm.NewClient(newClient(t, internal))
	v := "2"
	if res, err := adm.AlterBrokerConfigs(ctxT(t, 10*time.Second), []kadm.AlterConfig{
		{Name: "listener.name.internal.max.connection.creation.rate", Value: &v}}, 0); err != nil || res[0].Err != nil {
		t.Fatalf("set INTERNAL's creation rate: %v %v", err, res)
	}
	if in := burst("INTERNAL under its own rate", internal, 5); in < time.Second {
		t.Fatalf("5 connections at INTERNAL's 2 a second served within %v", in)
	}
}
