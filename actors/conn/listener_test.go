package conn

import (
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
