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

// TestLeaseBackingFencesTheController drives a broker's fence in virtual
// time through the exchanges it completes, with its own hub (epoch 7, the
// one it leads) or another broker's (epoch 6), and its Lease renewals.
func TestLeaseBackingFencesTheController(t *testing.T) {
	const fenceAfter = time.Second
	const fenced, open = "fenced", "open"
	type step struct {
		at    time.Duration // since the start
		renew bool          // a Lease write started at this time succeeds
		pong  int64         // a ping sent at this time is answered at this epoch (0: none)
		late  bool          // its PONG arrives at the next step, not this one
		want  string        // after the step: "fenced", "open" or "" (not checked)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"own pongs lift the fence only behind a renewal", []step{
			{at: 0, pong: 7, want: fenced},
			{at: ms(100), renew: true, want: fenced},
			{at: ms(200), pong: 7, want: open},
		}},
		{"cut off from the apiserver: fenced fence-after past the last renewal although its hub answers", []step{
			{at: 0, renew: true, want: fenced},
			{at: ms(250), pong: 7, want: open},
			{at: ms(500), renew: true, want: open},
			{at: ms(750), pong: 7, want: open},
			{at: ms(1000), pong: 7, want: open},
			{at: ms(1250), pong: 7, want: open},
			{at: ms(1500), pong: 7, want: open},
			{at: ms(1501), pong: 7, want: fenced},
			{at: ms(2500), pong: 7, want: fenced},
		}},
		{"renewals resume: the next own pong lifts the fence", []step{
			{at: 0, renew: true},
			{at: ms(100), pong: 7, want: open},
			{at: ms(1200), pong: 7, want: fenced},
			{at: ms(1300), renew: true, want: fenced},
			{at: ms(1400), pong: 7, want: open},
		}},
		{"another controller's pong counts from the ping's send", []step{
			{at: 0, pong: 6, want: open},
			{at: ms(900), pong: 6, want: open},
			{at: ms(1900), want: open},
			{at: ms(1901), want: fenced},
		}},
		{"renewals alone lift nothing", []step{
			{at: 0, renew: true, want: fenced},
			{at: ms(500), renew: true, want: fenced},
		}},
		{"a renewal started after the ping does not date it later", []step{
			{at: 0, renew: true},
			{at: ms(300), pong: 7, late: true},
			{at: ms(400), renew: true},
			{at: ms(1300), want: open},
			{at: ms(1301), want: fenced},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			clk := clock.NewFake(start)
			f := NewFenceOn(clk, fenceAfter)
			var b LeaseBacking
			b.Leading(7)
			var pending []struct {
				sent  time.Time
				epoch int64
			}
			for i, s := range tc.steps {
				clk.Set(start.Add(s.at))
				if s.renew {
					b.Renewed(clk.Now())
				}
				if s.pong != 0 {
					pending = append(pending, struct {
						sent  time.Time
						epoch int64
					}{clk.Now(), s.pong})
				}
				if s.late {
					continue
				}
				// PONGs arrive after the step's renewal.
				for _, p := range pending {
					if at, ok := b.Date(p.sent, p.epoch); ok {
						f.Exchanged(at)
					}
				}
				pending = pending[:0]
				got := open
				if f.Fenced() {
					got = fenced
				}
				if s.want != "" && got != s.want {
					t.Fatalf("step %d (+%v): %s, want %s", i, s.at, got, s.want)
				}
			}
		})
	}
}

func TestExchangeDate(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name      string
		own       bool
		renewed   time.Time
		want      time.Time
		wantCount bool
	}{
		{"another controller", false, time.Time{}, t0, true},
		{"another controller, renewals ignored", false, t0.Add(-time.Hour), t0, true},
		{"own hub, never renewed", true, time.Time{}, time.Time{}, false},
		{"own hub, renewed before the ping", true, t0.Add(-300 * time.Millisecond), t0.Add(-300 * time.Millisecond), true},
		{"own hub, renewed after the ping", true, t0.Add(time.Millisecond), t0, true},
	} {
		got, ok := exchangeDate(t0, tc.own, tc.renewed)
		if ok != tc.wantCount || !got.Equal(tc.want) {
			t.Errorf("%s: got %v %v, want %v %v", tc.name, got, ok, tc.want, tc.wantCount)
		}
	}
}
