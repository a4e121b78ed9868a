package streams

import "testing"

func TestSmoke(t *testing.T) {
	g := New(testConfig())
	topics := topicsOf("in", 4, "app-store-changelog", 4)
	a := newSim("a", "pa", oneSub("in"))
	b := newSim("b", "pb", oneSub("in"))
	settle(t, g, t0, topics, a)
	t.Logf("a %v state %s epoch %d", a.active(), g.State(), g.Epoch())
	settle(t, g, t0, topics, a, b)
	t.Logf("a %v b %v state %s epoch %d", a.active(), b.active(), g.State(), g.Epoch())
}
