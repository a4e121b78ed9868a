package conn

import (
	"net"
	"strconv"
	"testing"

	"github.com/kaas-project/kaas/actors/routing"
)

func TestListenerAdvertisesItsAddresses(t *testing.T) {
	v := &routing.View{Self: 1, Brokers: []routing.Broker{
		{ID: 0, Host: "kaas-0.kaas.ns.svc", Port: 9092},
		{ID: 1, Host: "kaas-1.kaas.ns.svc", Port: 9092},
		{ID: 2, Host: "", Port: 0}, // not registered yet: left alone
	}}
	v.Coordinator = func(string) (routing.Broker, bool) { return v.Brokers[0], false }

	primary := &Listener{Name: "PLAINTEXT", SecurityProtocol: ProtocolPlaintext}
	if primary.view(v) != v {
		t.Fatal("the primary listener rewrote the view")
	}
	l := &Listener{Name: "EXTERNAL", SecurityProtocol: ProtocolSASLSSL, AdvertisedHost: "kafka-1.example.com", AdvertisedPort: 19093}
	got := l.view(v)
	want := []routing.Broker{
		{ID: 0, Host: "kaas-0.kaas.ns.svc", Port: 19093},
		{ID: 1, Host: "kafka-1.example.com", Port: 19093},
		{ID: 2},
	}
	for i, b := range got.Brokers {
		if b.ID != want[i].ID || b.Host != want[i].Host || b.Port != want[i].Port {
			t.Errorf("broker %d: %s:%d, want %s:%d", b.ID, b.Host, b.Port, want[i].Host, want[i].Port)
		}
	}
	if c, _ := got.CoordinatorFor("g"); c.Port != 19093 || c.Host != "kaas-0.kaas.ns.svc" {
		t.Errorf("coordinator %s:%d", c.Host, c.Port)
	}
	if v.Brokers[1].Port != 9092 {
		t.Fatal("the published view was mutated")
	}
	if l.view(v) != got {
		t.Fatal("the same view was rewritten twice")
	}
	v2 := *v
	if l.view(&v2) == got {
		t.Fatal("a new view was not rewritten")
	}
}

// TestListenerAdvertisesPublishedAddresses: a broker that published an
// address for a listener (one load balancer or NodePort per pod) is
// advertised there to that listener's clients; one that published none, at
// its host with the listener's port.
func TestListenerAdvertisesPublishedAddresses(t *testing.T) {
	v := &routing.View{Self: 1, Brokers: []routing.Broker{
		{ID: 0, Host: "kaas-0.kaas.ns.svc", Port: 9092, Listeners: "EXTERNAL://10.0.0.7:31090,INTERNAL://kaas-0.kaas.ns.svc:9095"},
		{ID: 1, Host: "kaas-1.kaas.ns.svc", Port: 9092, Listeners: "EXTERNAL://10.0.0.8:31091"},
		{ID: 2, Host: "kaas-2.kaas.ns.svc", Port: 9092},
		{ID: 3, Host: "kaas-3.kaas.ns.svc", Port: 9092, Listeners: "not a listener list"},
	}}
	v.Coordinator = func(string) (routing.Broker, bool) { return v.Brokers[0], false }
	l := &Listener{Name: "EXTERNAL", SecurityProtocol: ProtocolSASLSSL, AdvertisedHost: "10.0.0.8", AdvertisedPort: 31091}
	got := l.view(v)
	want := []string{"10.0.0.7:31090", "10.0.0.8:31091", "kaas-2.kaas.ns.svc:31091", "kaas-3.kaas.ns.svc:31091"}
	for i, b := range got.Brokers {
		if addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))); addr != want[i] {
			t.Errorf("broker %d at %s, want %s", b.ID, addr, want[i])
		}
	}
	if c, _ := got.CoordinatorFor("g"); c.Host != "10.0.0.7" || c.Port != 31090 {
		t.Errorf("coordinator %s:%d, want 10.0.0.7:31090", c.Host, c.Port)
	}
	internal := (&Listener{Name: "INTERNAL", AdvertisedHost: "kaas-1.kaas.ns.svc", AdvertisedPort: 9095}).view(v)
	if b := internal.Brokers[0]; b.Host != "kaas-0.kaas.ns.svc" || b.Port != 9095 {
		t.Errorf("broker 0 on INTERNAL at %s:%d", b.Host, b.Port)
	}
}
