package share

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// step is one event of a share-partition script in virtual time.
type step struct {
	at     time.Duration // since the script's start
	do     string        // "fetch m first last [max]", "ack m first last type...", "release m", "truncate o"
	want   string        // acquired ranges "f-l/c ..." (fetch) or error code (ack)
	states string        // optional: the states from Start to End after the step, e.g. "10:aaA" (a=acquired ...)
}

func runScript(t *testing.T, cfg Config, logStart, hw int64, steps []step) {
	t.Helper()
	t0 := time.Unix(1_000_000, 0)
	p := NewPartition(cfg)
	p.Initialize(logStart, hw)
	for i, s := range steps {
		now := t0.Add(s.at)
		f := strings.Fields(s.do)
		var got string
		switch f[0] {
		case "fetch":
			var first, last int64
			maxRecs := 0
			fmt.Sscan(f[2], &first)
			fmt.Sscan(f[3], &last)
			if len(f) > 4 {
				fmt.Sscan(f[4], &maxRecs)
			}
			from, ok := p.FetchOffset(now)
			if !ok {
				got = "full"
				break
			}
			var rs []string
			for _, r := range p.Acquire(now, f[1], max(first, from), last, maxRecs) {
				rs = append(rs, fmt.Sprintf("%d-%d/%d", r.First, r.Last, r.DeliveryCount))
			}
			got = fmt.Sprintf("@%d %s", from, strings.Join(rs, " "))
		case "ack":
			var first, last int64
			fmt.Sscan(f[2], &first)
			fmt.Sscan(f[3], &last)
			var types []AckType
			for _, x := range f[4:] {
				var n int8
				fmt.Sscan(x, &n)
				types = append(types, AckType(n))
			}
			got = fmt.Sprint(p.Acknowledge(now, f[1], first, last, types))
		case "release":
			p.ReleaseMember(f[1])
			got = ""
		case "truncate":
			var o int64
			fmt.Sscan(f[1], &o)
			p.Truncate(o)
			got = ""
		case "expire":
			p.Expire(now)
			got = ""
		case "letters":
			var rs []string
			for _, d := range p.DeadLetters() {
				cause := "limit"
				if d.Rejected {
					cause = "rejected"
				}
				rs = append(rs, fmt.Sprintf("%d-%d/%d/%s", d.First, d.Last, d.DeliveryCount, cause))
			}
			got = strings.Join(rs, " ")
		case "lettered":
			var first, last int64
			fmt.Sscan(f[1], &first)
			fmt.Sscan(f[2], &last)
			got = fmt.Sprint(p.DeadLettered(first, last))
		}
		if got != s.want {
			t.Fatalf("step %d %q: got %q, want %q", i, s.do, got, s.want)
		}
		if s.states != "" {
			if st := statesString(p); st != s.states {
				t.Fatalf("step %d %q: states %q, want %q", i, s.do, st, s.states)
			}
		}
	}
}

// statesString renders start and the states from start to End: a
// available, q acquired, k acknowledged, x archived, d archiving (waiting
// for its dead-letter write).
func statesString(p *Partition) string {
	start, states, _ := p.Snapshot()
	var b strings.Builder
	fmt.Fprintf(&b, "%d:", start)
	for _, s := range states {
		b.WriteByte("aqkxd"[s])
	}
	return b.String()
}

var (
	ok           = "0"
	invalidState = fmt.Sprint(kerr.InvalidRecordState.Code)
	invalidReq   = fmt.Sprint(kerr.InvalidRequest.Code)
)

func TestPartitionScripts(t *testing.T) {
	lock := 30 * time.Second
	cfg := Config{LockDuration: lock, DeliveryLimit: 3}
	cases := []struct {
		name         string
		cfg          Config
		logStart, hw int64
		steps        []step
	}{
		{"accept moves the start", cfg, 0, 0, []step{
			{do: "fetch m1 0 4", want: "@0 0-4/1", states: "0:qqqqq"},
			{do: "ack m1 0 2 1", want: ok, states: "3:qq"},
			{do: "ack m1 3 4 1", want: ok, states: "5:"},
		}},
		{"two members split a read", cfg, 0, 0, []step{
			{do: "fetch m1 0 9 4", want: "@0 0-3/1"},
			{do: "fetch m2 0 9 4", want: "@4 4-7/1"},
			{do: "ack m2 4 7 1", want: ok, states: "0:qqqqkkkk"},
			{do: "ack m1 0 3 1", want: ok, states: "8:"},
		}},
		{"release redelivers with a higher count", cfg, 0, 0, []step{
			{do: "fetch m1 0 2", want: "@0 0-2/1"},
			{do: "ack m1 1 1 2", want: ok, states: "0:qaq"},
			{do: "fetch m2 0 5", want: "@1 1-1/2 3-5/1"},
		}},
		{"lock timeout makes records available", cfg, 0, 0, []step{
			{do: "fetch m1 0 1", want: "@0 0-1/1"},
			{at: lock - time.Millisecond, do: "fetch m2 0 1", want: "@2 "},
			{at: lock, do: "fetch m2 0 1", want: "@0 0-1/2"},
			{at: lock, do: "ack m1 0 1 1", want: invalidState},
			{at: lock + time.Second, do: "ack m2 0 1 1", want: ok, states: "2:"},
		}},
		{"delivery limit archives a poison record", cfg, 0, 0, []step{
			{do: "fetch m1 0 0", want: "@0 0-0/1"},
			{do: "ack m1 0 0 2", want: ok},
			{do: "fetch m1 0 0", want: "@0 0-0/2"},
			{at: lock, do: "fetch m1 0 0", want: "@0 0-0/3"},
			{at: 2 * lock, do: "expire", want: "", states: "1:"},
			{at: 2 * lock, do: "fetch m1 0 0", want: "@1 "},
		}},
		{"release at the limit archives", cfg, 0, 0, []step{
			{do: "fetch m1 0 1", want: "@0 0-1/1"},
			{do: "ack m1 0 1 2", want: ok},
			{do: "fetch m1 0 1", want: "@0 0-1/2"},
			{do: "ack m1 0 1 2", want: ok},
			{do: "fetch m1 0 1", want: "@0 0-1/3"},
			{do: "ack m1 0 1 2", want: ok, states: "2:"},
		}},
		{"reject and gap archive", cfg, 0, 0, []step{
			{do: "fetch m1 0 3", want: "@0 0-3/1"},
			{do: "ack m1 0 3 3 0 1 2", want: ok, states: "3:a"},
		}},
		{"renew extends the lock", cfg, 0, 0, []step{
			{do: "fetch m1 0 0", want: "@0 0-0/1"},
			{at: lock - time.Second, do: "ack m1 0 0 4", want: ok},
			{at: lock + time.Second, do: "fetch m2 0 0", want: "@1 "},
			{at: 2*lock - time.Second, do: "fetch m2 0 0", want: "@0 0-0/2"},
		}},
		{"renew refused when the group disables it", Config{LockDuration: lock, DeliveryLimit: 3, RenewDisabled: true}, 0, 0, []step{
			{do: "fetch m1 0 1", want: "@0 0-1/1"},
			{at: lock - time.Second, do: "ack m1 0 1 1 4", want: invalidState, states: "0:qq"},
			{at: lock, do: "fetch m2 0 1", want: "@0 0-1/2"},
		}},
		{"acks of another member's records are refused whole", cfg, 0, 0, []step{
			{do: "fetch m1 0 1", want: "@0 0-1/1"},
			{do: "fetch m2 2 3", want: "@2 2-3/1"},
			{do: "ack m1 1 2 1", want: invalidState, states: "0:qqqq"},
			{do: "ack m1 5 6 1", want: invalidState},
		}},
		{"malformed acks", cfg, 0, 0, []step{
			{do: "fetch m1 0 3", want: "@0 0-3/1"},
			{do: "ack m1 3 1 1", want: invalidReq},
			{do: "ack m1 0 3 1 1", want: invalidReq},
			{do: "ack m1 0 3 9", want: invalidReq, states: "0:qqqq"},
		}},
		{"member leaving releases its records", cfg, 0, 0, []step{
			{do: "fetch m1 0 1", want: "@0 0-1/1"},
			{do: "fetch m2 2 2", want: "@2 2-2/1"},
			{do: "release m1", want: "", states: "0:aaq"},
		}},
		{"latest starts at the high watermark", Config{ResetLatest: true}, 3, 10, []step{
			{do: "fetch m1 3 12", want: "@10 10-12/1"},
		}},
		{"earliest starts at the log start", Config{}, 3, 10, []step{
			{do: "fetch m1 3 4", want: "@3 3-4/1"},
		}},
		{"the log start passing the start drops records", cfg, 0, 0, []step{
			{do: "fetch m1 0 4", want: "@0 0-4/1"},
			{do: "truncate 3", want: "", states: "3:qq"},
			{do: "truncate 9", want: "", states: "9:"},
		}},
		{"in-flight window bounds acquisition", Config{MaxInFlight: 3}, 0, 0, []step{
			{do: "fetch m1 0 9", want: "@0 0-2/1"},
			{do: "fetch m2 0 9", want: "full"},
			{do: "ack m1 0 0 1", want: ok},
			{do: "fetch m2 0 9", want: "@3 3-3/1"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runScript(t, c.cfg, c.logStart, c.hw, c.steps) })
	}
}

// TestPartitionDeadLetterScripts: with a dead-letter topic (KIP-1191) a
// rejected record, and one released or expired at the delivery limit,
// waits Archiving for its write and holds the start until it is written
// or failed; a gap, an accept and a release below the limit are as
// without one.
func TestPartitionDeadLetterScripts(t *testing.T) {
	lock := 30 * time.Second
	cfg := Config{LockDuration: lock, DeliveryLimit: 2, DeadLetterTopic: "dlq.t"}
	cases := []struct {
		name  string
		steps []step
	}{
		{"rejects wait for their write", []step{
			{do: "fetch m1 0 5", want: "@0 0-5/1"},
			{do: "ack m1 0 5 3 3 1 0 3 3", want: ok, states: "0:ddkxdd"},
			{do: "letters", want: "0-1/1/rejected 4-5/1/rejected"},
			{do: "letters", want: ""}, // each run is handed out once
			{do: "lettered 0 1", want: "true", states: "4:dd"},
			{do: "lettered 0 1", want: "false", states: "4:dd"},
			{do: "lettered 4 5", want: "true", states: "6:"},
		}},
		{"the delivery limit dead-letters, by release and by expiry", []step{
			{do: "fetch m1 0 1", want: "@0 0-1/1"},
			{do: "ack m1 0 1 2", want: ok, states: "0:aa"},
			{do: "fetch m1 0 1", want: "@0 0-1/2"},
			{do: "ack m1 0 0 2", want: ok, states: "0:dq"},
			{at: lock, do: "expire", want: "", states: "0:dd"},
			{at: lock, do: "letters", want: "0-1/2/limit"},
			{at: lock, do: "fetch m2 0 1", want: "@2 "},
			{at: lock, do: "lettered 0 1", want: "true", states: "2:"},
		}},
		{"a reject at the limit is a reject", []step{
			{do: "fetch m1 0 0", want: "@0 0-0/1"},
			{do: "ack m1 0 0 2", want: ok},
			{do: "fetch m1 0 1", want: "@0 0-0/2 1-1/1"},
			{do: "ack m1 0 1 3", want: ok, states: "0:dd"},
			{do: "letters", want: "0-0/2/rejected 1-1/1/rejected"},
		}},
		{"archiving records count in the window and are not delivered", []step{
			{do: "fetch m1 0 2", want: "@0 0-2/1"},
			{do: "ack m1 1 1 3", want: ok, states: "0:qdq"},
			{do: "release m1", want: "", states: "0:ada"},
			{do: "fetch m2 0 2", want: "@0 0-0/2 2-2/2"},
		}},
		{"a truncation drops archiving records", []step{
			{do: "fetch m1 0 2", want: "@0 0-2/1"},
			{do: "ack m1 0 2 3", want: ok},
			{do: "truncate 2", want: "", states: "2:d"},
			{do: "letters", want: "2-2/1/rejected"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runScript(t, cfg, 0, 0, c.steps) })
	}
}

// TestPartitionRestoreDeadLetters: archiving records come back from a
// snapshot to be written again (their write may not have happened), their
// cause inferred from the delivery count.
func TestPartitionRestoreDeadLetters(t *testing.T) {
	p := NewPartition(Config{DeliveryLimit: 3, DeadLetterTopic: "dlq.t"})
	p.Restore(5, []State{Archiving, Archiving, Available, Archiving}, []int16{1, 3, 1, 2})
	if got := statesString(p); got != "5:ddad" {
		t.Fatalf("restored states %q, want 5:ddad", got)
	}
	var got []string
	for _, d := range p.DeadLetters() {
		got = append(got, fmt.Sprintf("%d-%d/%d/%v", d.First, d.Last, d.DeliveryCount, d.Rejected))
	}
	if want := "[5-5/1/true 6-6/3/false 8-8/2/true]"; fmt.Sprint(got) != want {
		t.Fatalf("dead letters %v, want %s", got, want)
	}
	if n := p.DeliveryComplete(); n != 3 {
		t.Fatalf("delivery complete %d, want 3 (archiving records are done)", n)
	}
}

func TestPartitionRestoreReleasesAcquired(t *testing.T) {
	p := NewPartition(Config{})
	p.Restore(5, []State{Acknowledged, Acquired, Available, Archived}, []int16{1, 2, 1, 5})
	if got := statesString(p); got != "6:aax" {
		t.Fatalf("restored states %q, want 6:aax", got)
	}
	if _, c := p.At(6); c != 2 {
		t.Fatalf("delivery count of 6 is %d, want 2", c)
	}
}

// TestShareLag: Kafka's share-partition lag (KIP-1226), the end offset
// less the start offset and the records after it already done, from the
// state in memory and from a saved snapshot alike.
func TestShareLag(t *testing.T) {
	t0 := time.Unix(0, 0)
	p := NewPartition(Config{LockDuration: time.Minute})
	p.Initialize(0, 0)
	if got := p.Acquire(t0, "m", 0, 9, 100); len(got) != 1 {
		t.Fatalf("acquired %+v", got)
	}
	// 2-3 accepted, 5 rejected (archived), 7 released: 0-1 still held,
	// so the start stays at 0 with three records done after it.
	p.Acknowledge(t0, "m", 2, 3, []AckType{AckAccept})
	p.Acknowledge(t0, "m", 5, 5, []AckType{AckReject})
	p.Acknowledge(t0, "m", 7, 7, []AckType{AckRelease})
	start, states, _ := p.Snapshot()
	saved := make([]uint8, len(states))
	for i, s := range states {
		saved[i] = uint8(s)
	}
	if start != 0 || p.DeliveryComplete() != 3 || DeliveryComplete(saved) != 3 {
		t.Fatalf("start %d, done %d (saved %d); want 0, 3", start, p.DeliveryComplete(), DeliveryComplete(saved))
	}
	cases := []struct{ end, want int64 }{
		{10, 7},  // 0, 1, 4, 6, 7, 8, 9 not done
		{25, 22}, // and 15 more produced
		{3, 0},   // an end behind what is known (never below 0)
	}
	for _, c := range cases {
		if got := Lag(c.end, start, p.DeliveryComplete()); got != c.want {
			t.Errorf("Lag(end %d) = %d, want %d", c.end, got, c.want)
		}
	}
	// Accepting 0-1 moves the start past what is done.
	p.Acknowledge(t0, "m", 0, 1, []AckType{AckAccept})
	if p.Start() != 4 || p.DeliveryComplete() != 1 || Lag(10, p.Start(), p.DeliveryComplete()) != 5 {
		t.Fatalf("start %d, done %d: lag %d, want 4, 1, 5", p.Start(), p.DeliveryComplete(), Lag(10, p.Start(), p.DeliveryComplete()))
	}
}
