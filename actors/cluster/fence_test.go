package cluster

import (
	"testing"
	"time"

	"github.com/kaas-project/kaas/actors/clock"
)

func TestFence(t *testing.T) {
	var nilFence *Fence
	if nilFence.Fenced() {
		t.Fatal("a nil fence must never fence (local mode)")
	}
	clk := clock.NewFake(time.Now())
	f := NewFenceOn(clk, 50*time.Millisecond)
	if !f.Fenced() {
		t.Fatal("fenced until the first exchange")
	}
	sent := clk.Now()
	f.Exchanged(sent)
	if f.Fenced() {
		t.Fatal("fenced right after an exchange")
	}
	f.Exchanged(sent.Add(-time.Second)) // an older ping's late pong changes nothing
	if f.Fenced() {
		t.Fatal("an older exchange moved the clock back")
	}
	clk.Advance(50 * time.Millisecond)
	if f.Fenced() {
		t.Fatal("fenced at fence_after, not past it")
	}
	clk.Advance(time.Nanosecond)
	if !f.Fenced() {
		t.Fatal("not fenced fence_after after the last exchanged ping was sent")
	}
	f.Exchanged(clk.Now())
	if f.Fenced() {
		t.Fatal("a new exchange must lift the fence")
	}
}

func TestFenceExchangedSince(t *testing.T) {
	f := NewFence(time.Second)
	t0 := time.Now()
	if f.ExchangedSince(t0) {
		t.Fatal("no exchange yet")
	}
	f.Exchanged(t0.Add(-time.Millisecond)) // a ping sent before t0
	if f.ExchangedSince(t0) {
		t.Fatal("an exchange of a ping sent before t0 counted")
	}
	f.Exchanged(t0)
	if !f.ExchangedSince(t0) {
		t.Fatal("an exchange of a ping sent at t0 did not count")
	}
}
