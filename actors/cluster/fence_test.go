package cluster

import (
	"testing"
	"time"
)

func TestFence(t *testing.T) {
	var nilFence *Fence
	if nilFence.Fenced() {
		t.Fatal("a nil fence must never fence (local mode)")
	}
	f := NewFence(50 * time.Millisecond)
	if !f.Fenced() {
		t.Fatal("fenced until the first exchange")
	}
	sent := time.Now()
	f.Exchanged(sent)
	if f.Fenced() {
		t.Fatal("fenced right after an exchange")
	}
	f.Exchanged(sent.Add(-time.Second)) // an older ping's late pong changes nothing
	if f.Fenced() {
		t.Fatal("an older exchange moved the clock back")
	}
	time.Sleep(70 * time.Millisecond)
	if !f.Fenced() {
		t.Fatal("not fenced fence_after after the last exchanged ping was sent")
	}
	f.Exchanged(time.Now())
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
