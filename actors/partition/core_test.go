package partition

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/internal/scripttest"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
)

// The core's scenarios: each line of a script is an event (or a change of
// the world: time, the fence, the revocation) and, after "->", the effects
// it has, as the harness below executes them, in order. Time is virtual:
// "advance" fires the due timers (the watchdog, the open retry) as events.
//
// Commands:
//
//	take E                       TakeLeadership at epoch E (its Opened reports as "takeE")
//	relinquish [delete] [fenced] (its Done reports as "release")
//	opened gN L [end=N] [durable=N] | open-failed gN
//	produce P [acks=1]           acks=all unless said; one record, appended at the log end
//	fetch F | watch W OFFSET     served from the core's state (fetch: "F: hw=N")
//	abandon W                    W's fetch was answered: the watch is no longer needed
//	fsynced #N                   sync #N's data is durable (the log's Durable covers it);
//	                             its Synced, with the claim read after it, comes later
//	synced #N [failed|superseded] | closed [failed]
//	advance DURATION | fence | unfence | revoke | stop
//	disk-full | disk-freed       the log refuses appends, or takes them again
//
// Effects: "open gN eE", "abort-open", "discard L", "close gN L [delete] [fenced]",
// "close-now L", "remove", "assign-epoch E", "sync #N L", "watchdog #N" (armed),
// "watchdog! #N" (fired), "retry-open in D", "retry-writes in D", "notify W", "P: ok@BASE" or
// "P: ERROR", "takeE: opened" / "takeE: open failed", "release: ok|failed".
var coreScenarios = []struct {
	name   string
	script []string
}{
	{"take, produce, group commit", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"produce p2 acks=1 -> p2: ok@1",
		"produce p3", // waits for the next commit: one is in flight
		"synced #1 -> p1: ok@0; sync #2 L1; watchdog #2",
		"synced #2 -> p3: ok@2",
		"advance 1m", // returned commits disarmed their watchdogs
	}},
	{"requests queued while opening are served once open", []string{
		"take 3 -> open g1 e3",
		"produce p1",
		"fetch f1",
		"take 5", // a newer epoch while opening: stamped once open
		"opened g1 L1 end=2 durable=2 -> take3: opened; assign-epoch 5; sync #1 L1; watchdog #1; f1: hw=2",
		"synced #1 -> p1: ok@2",
	}},
	{"release during open waits for the open, then closes its log", []string{
		"take 3 -> open g1 e3",
		"produce p1",
		"relinquish -> p1: NOT_LEADER_FOR_PARTITION; abort-open",
		"produce p2 -> p2: NOT_LEADER_FOR_PARTITION",
		"take 4", // ignored while closing: the supervisor re-sends it after the release
		"opened g1 L1 -> take3: opened; close g2 L1",
		"closed -> release: ok",
		"take 4 -> open g3 e4",
	}},
	{"release during an open that fails reports without a close", []string{
		"take 3 -> open g1 e3",
		"relinquish delete -> abort-open",
		"open-failed g1 -> take3: open failed; remove; release: ok",
		"advance 10s", // no retry after the release
	}},
	{"retake after a release starts a new generation", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"synced #1 -> p1: ok@0",
		"relinquish -> close g2 L1",
		"closed -> release: ok",
		"produce p2 -> p2: NOT_LEADER_FOR_PARTITION",
		"take 4 -> open g3 e4",
		"opened g3 L1 end=1 durable=1 -> take4: opened",
		"produce p3 -> sync #2 L1; watchdog #2",
		"synced #2 -> p3: ok@1",
	}},
	{"a stale open result after a newer generation is discarded", []string{
		"take 3 -> open g1 e3",
		"relinquish -> abort-open",
		"opened g1 L1 -> take3: opened; close g2 L1",
		"closed -> release: ok",
		"take 4 -> open g3 e4",
		"opened g1 L2 -> discard L2", // a late answer of the first open
		"opened g3 L3 -> take4: opened",
		"produce p1 -> sync #1 L3; watchdog #1",
	}},
	{"an open that finishes after the actor stopped is discarded", []string{
		"take 3 -> open g1 e3",
		"stop",
		"opened g1 L1 -> discard L1",
	}},
	{"relinquish while a group commit is in flight", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"watch w1 0",
		"produce p1 -> sync #1 L1; watchdog #1",
		"produce p2", // appended after the commit began
		// The commit in flight acknowledges what it covers; the rest is
		// answered at once, before the close.
		"relinquish -> notify w1; close g2 L1",
		"synced #1 -> p1: ok@0; p2: NOT_LEADER_FOR_PARTITION",
		"closed -> release: ok",
	}},
	{"a commit in flight on a closed log does not block the retake", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"relinquish -> close g2 L1",
		"closed -> p1: NOT_LEADER_FOR_PARTITION; release: ok",
		"take 4 -> open g3 e4",
		"opened g3 L2 -> take4: opened",
		"produce p2 -> sync #2 L2; watchdog #2",
		"synced #1",                                                        // the closed log's answer: ignored...
		"advance 15s -> watchdog! #1; watchdog! #2; p2: REQUEST_TIMED_OUT", // ...and #2's watchdog still armed
	}},
	{"fence while a commit is in flight", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"fence",
		"produce p2 -> p2: NOT_LEADER_FOR_PARTITION",
		// The commit in flight still answers: the leader claim checked
		// after it is what guards against a newer leader.
		"synced #1 -> p1: ok@0",
		"unfence",
		"produce p3 -> sync #2 L1; watchdog #2",
	}},
	{"revoke while a commit is in flight", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"revoke",
		"produce p2 -> p2: NOT_LEADER_FOR_PARTITION",
		"synced #1 -> p1: ok@0",
		"relinquish fenced -> close g2 L1 fenced",
		"closed -> release: ok",
	}},
	{"a commit that finds a newer claim acknowledges nothing", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"produce p2",
		"synced #1 superseded -> p1: NOT_LEADER_FOR_PARTITION; p2: NOT_LEADER_FOR_PARTITION",
		"produce p3 -> p3: NOT_LEADER_FOR_PARTITION",
	}},
	{"a produce between a commit's fsync and its claim check acknowledges nothing", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"fsynced #1", // the log's Durable now covers p1; the claim is read next
		"produce p2", // its append reads that Durable: p1 still waits for the check
		"synced #1 superseded -> p1: NOT_LEADER_FOR_PARTITION; p2: NOT_LEADER_FOR_PARTITION",
	}},
	{"the watchdog fails the waiters of a hung commit", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"advance 14s",
		"produce p2",
		"advance 1s -> watchdog! #1; p1: REQUEST_TIMED_OUT; p2: REQUEST_TIMED_OUT",
		"produce p3 -> p3: KAFKA_STORAGE_ERROR", // unhealthy until the commit returns
		"synced #1 -> sync #2 L1; watchdog #2",  // covered p1; p2 is past it
		"produce p4",
		"synced #2 -> sync #3 L1; watchdog #3", // covered p2; p4 is past it
		"synced #3 -> p4: ok@2",
	}},
	{"a failed commit fails its waiters and the partition", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"synced #1 failed -> p1: KAFKA_STORAGE_ERROR; stop-self",
		"produce p2 -> p2: KAFKA_STORAGE_ERROR",
	}},
	{"a failed append refuses writes until the retry, then they are tried again", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"disk-full",
		"produce p2 -> retry-writes in 1s; p2: KAFKA_STORAGE_ERROR",
		"produce p3 -> p3: KAFKA_STORAGE_ERROR", // refused without an append, not out of order
		"synced #1 -> p1: ok@0",                 // a commit of what was appended readmits nothing
		"produce p4 -> p4: KAFKA_STORAGE_ERROR",
		"advance 1s",
		"produce p5 -> retry-writes in 1s; p5: KAFKA_STORAGE_ERROR", // still full: one append tried per retry
		"disk-freed",
		"advance 500ms",
		"produce p6 -> p6: KAFKA_STORAGE_ERROR",
		"advance 500ms",
		"produce p7 -> sync #2 L1; watchdog #2",
		"synced #2 -> p7: ok@1",
	}},
	{"a failed append's retry belongs to its leadership", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"disk-full",
		"produce p1 -> retry-writes in 1s; p1: KAFKA_STORAGE_ERROR",
		"relinquish -> close g2 L1",
		"closed -> release: ok",
		"disk-freed",
		"take 4 -> open g3 e4",
		"opened g3 L2 -> take4: opened",
		"produce p2 -> sync #1 L2; watchdog #1", // a new open starts writable
		"advance 1s",                            // the old retry is stale
		"synced #1 -> p2: ok@0",
	}},
	{"a failed open is retried while still leader", []string{
		"take 3 -> open g1 e3",
		"produce p1",
		"open-failed g1 -> take3: open failed; p1: NOT_LEADER_FOR_PARTITION; retry-open in 1s",
		"advance 1s -> open g2 e3",
		"open-failed g2 -> retry-open in 1s", // reported once only
		"advance 1s -> open g3 e3",
		"opened g3 L1 -> ",
		"produce p2 -> sync #1 L1; watchdog #1",
	}},
	{"a failed open's retry stops at the release", []string{
		"take 3 -> open g1 e3",
		"open-failed g1 -> take3: open failed; retry-open in 1s",
		"relinquish -> release: ok",
		"advance 1m",
	}},
	{"an inherited tail is synced at once", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 end=2 -> take3: opened; sync #1 L1; watchdog #1",
		"fetch f1 -> f1: hw=0",
		"watch w1 1",
		"synced #1 -> notify w1",
		"fetch f2 -> f2: hw=2",
	}},
	{"a newer epoch while leading is stamped at once, an older one never", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"take 4 -> assign-epoch 4",
		"take 2",
		"take 4",
	}},
	{"a deleted partition's log is closed and removed", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"relinquish delete -> close g2 L1 delete",
		"closed -> release: ok",
		"relinquish delete -> remove; release: ok", // again, idle: the files only
	}},
	{"watchers of answered fetches are dropped when another watches", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"watch w1 0",
		"watch w2 0",
		"abandon w1",
		"watch w3 0", // drops w1
		"abandon w3", // still held: nobody watched since
		"produce p1 acks=1 -> p1: ok@0; sync #1 L1; watchdog #1",
		"synced #1 -> notify w2; notify w3",
	}},
	{"stop answers everything and closes the log", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"watch w1 0",
		"produce p1 -> sync #1 L1; watchdog #1",
		"stop -> notify w1; close-now L1; p1: NOT_LEADER_FOR_PARTITION",
		"advance 1m",
	}},
}

func TestCoreScenarios(t *testing.T) {
	for _, sc := range coreScenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := newHarness(t)
			scripttest.Run(t, sc.script, h.run)
		})
	}
}

// fakeLog is a log handle for the core, which must never call it (the
// nil embedded interface panics if it does); the harness keeps its end.
type fakeLog struct {
	storage.Log
	name          string
	end, durable  int64
	superseded    bool
	syncsInFlight map[uint64]int64 // seq -> the end it covers
}

// harness is a minimal shell around a Core: it executes effects in virtual
// time and records what they did.
type harness struct {
	t        *testing.T
	core     *Core
	clock    *clock.Fake
	logs     map[string]*fakeLog
	opens    map[uint64]Open
	syncs    map[uint64]Sync
	close    *Close
	watchdog clock.Timer
	fenced   bool
	revoked  bool
	// full: the log refuses appends ("disk-full" / "disk-freed").
	full bool
	out  []string
	// abandoned: watchers whose fetch was answered ("abandon W").
	abandoned map[string]bool
}

func newHarness(t *testing.T) *harness {
	return &harness{
		t:     t,
		core:  NewCore(CoreConfig{SyncTimeout: 15 * time.Second, OpenRetryDelay: time.Second, WriteRetryDelay: time.Second, MaintenanceInterval: time.Hour, Log: zerolog.Nop()}),
		clock: clock.NewFake(time.Unix(1_700_000_000, 0)),
		logs:  map[string]*fakeLog{},
		opens: map[uint64]Open{},
		syncs: map[uint64]Sync{},

		abandoned: map[string]bool{},
	}
}

func (h *harness) record(format string, args ...any) {
	h.out = append(h.out, fmt.Sprintf(format, args...))
}

func (h *harness) step(ev Event) {
	for _, e := range h.core.Step(ev, h.clock.Now()) {
		h.exec(e)
	}
}

func (h *harness) run(f []string) []string {
	h.out = nil
	if len(f) == 0 {
		h.t.Fatal("empty command")
	}
	has := func(word string) bool {
		for _, x := range f[1:] {
			if x == word {
				return true
			}
		}
		return false
	}
	switch f[0] {
	case "take":
		epoch := h.atoi(f[1])
		name := "take" + f[1]
		h.step(Take{Msg: &messages.TakeLeadership{TopicID: "id", LeaderEpoch: int32(epoch), Config: map[string]string{},
			Opened: func(err error) {
				if err != nil {
					h.record("%s: open failed", name)
					return
				}
				h.record("%s: opened", name)
			}}})
	case "relinquish":
		h.step(Relinquish{Delete: has("delete"), Fenced: has("fenced"), Done: func(err error) {
			if err != nil {
				h.record("release: failed")
				return
			}
			h.record("release: ok")
		}})
	case "opened":
		gen := h.gen(f[1])
		l := h.log(f[2])
		for _, kv := range f[3:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "end":
				l.end = int64(h.atoi(v))
			case "durable":
				l.durable = int64(h.atoi(v))
			}
		}
		h.step(Opened{Gen: gen, Epoch: h.opens[gen].Take.LeaderEpoch, Log: l, Durable: l.durable, LogEnd: l.end})
	case "open-failed":
		gen := h.gen(f[1])
		h.step(Opened{Gen: gen, Epoch: h.opens[gen].Take.LeaderEpoch, Err: errors.New("disk on fire")})
	case "produce":
		name := f[1]
		h.step(Request{Msg: &messages.Produce{Acks: map[bool]int16{true: 1, false: -1}[has("acks=1")], Reply: func(r messages.ProduceResult) {
			if r.ErrorCode != 0 {
				h.record("%s: %s", name, errName(r.ErrorCode))
				return
			}
			h.record("%s: ok@%d", name, r.BaseOffset)
		}}})
	case "fetch":
		name := f[1]
		h.step(Request{Msg: &messages.Fetch{Reply: func(r messages.FetchResult) {
			if r.ErrorCode != 0 {
				h.record("%s: %s", name, errName(r.ErrorCode))
				return
			}
			h.record("%s: hw=%d", name, r.HighWatermark)
		}}})
	case "watch":
		name := f[1]
		h.step(Request{Msg: &messages.WatchHighWatermark{Offset: int64(h.atoi(f[2])), Notify: func() { h.record("notify %s", name) },
			Abandoned: func() bool { return h.abandoned[name] }}})
	case "abandon":
		h.abandoned[f[1]] = true
	case "fsynced":
		_, seq, l := h.sync(f[1])
		l.durable = max(l.durable, l.syncsInFlight[seq])
	case "synced":
		s, seq, l := h.sync(f[1])
		ev := Synced{Gen: s.Gen, Seq: seq, UpTo: l.syncsInFlight[seq], LogEnd: l.end}
		switch {
		case has("failed"):
			ev.Err = errors.New("EIO")
		case has("superseded"):
			ev.Err = errSuperseded
		default:
			l.durable = max(l.durable, ev.UpTo)
		}
		if cur := h.core.Log(); cur != nil {
			ev.LogEnd = cur.(*fakeLog).end // the shell reads the log it has now
		}
		h.step(ev)
	case "closed":
		c := h.close
		if c == nil {
			h.t.Fatal("no close in flight")
		}
		h.close = nil
		ev := Closed{Gen: c.Gen, Done: c.Done}
		if has("failed") {
			ev.Err = errors.New("EIO")
		}
		if l, ok := c.Log.(*fakeLog); ok {
			ev.UpTo = l.durable
			if l.superseded {
				ev.UpTo = c.HW
			}
		}
		h.step(ev)
	case "advance":
		d, err := time.ParseDuration(f[1])
		if err != nil {
			h.t.Fatal(err)
		}
		h.clock.Advance(d)
	case "fence", "unfence":
		h.fenced = f[0] == "fence"
	case "revoke":
		h.revoked = true
	case "disk-full", "disk-freed":
		h.full = f[0] == "disk-full"
	case "stop":
		h.step(Stop{})
	default:
		h.t.Fatalf("unknown command %q", f[0])
	}
	return h.out
}

func (h *harness) exec(e Effect) {
	switch e := e.(type) {
	case Open:
		h.opens[e.Gen] = e
		h.record("open g%d e%d", e.Gen, e.Take.LeaderEpoch)
	case AbortOpen:
		h.record("abort-open")
	case Discard:
		h.record("discard %s", e.Log.(*fakeLog).name)
	case Close:
		h.close = &e
		s := fmt.Sprintf("close g%d %s", e.Gen, e.Log.(*fakeLog).name)
		if e.Del {
			s += " delete"
		}
		if e.Fenced {
			s += " fenced"
		}
		h.record("%s", s)
	case CloseNow:
		h.record("close-now %s", e.Log.(*fakeLog).name)
	case Remove:
		h.record("remove")
		e.Done(nil)
	case AssignEpoch:
		h.record("assign-epoch %d", e.Epoch)
	case ApplyConfig, Maintain:
	case Sync:
		l := e.Log.(*fakeLog)
		if l.syncsInFlight == nil {
			l.syncsInFlight = map[uint64]int64{}
		}
		l.syncsInFlight[e.Seq] = l.end
		h.syncs[e.Seq] = e
		h.record("sync #%d %s", e.Seq, l.name)
	case ArmWatchdog:
		h.record("watchdog #%d", e.Seq)
		h.watchdog = h.clock.AfterFunc(e.After, func() {
			h.record("watchdog! #%d", e.Seq)
			h.step(WatchdogFired{Gen: e.Gen, Seq: e.Seq})
		})
	case DisarmWatchdog:
		if h.watchdog != nil {
			h.watchdog.Stop()
			h.watchdog = nil
		}
	case After:
		switch e.Event.(type) {
		case RetryOpen:
			h.record("retry-open in %v", e.D)
		case RetryWrites:
			h.record("retry-writes in %v", e.D)
		}
		h.clock.AfterFunc(e.D, func() { h.step(e.Event) })
	case Serve:
		h.serve(e.Msg)
	case Reply:
		e.To(e.Result)
	case Notify:
		e.Watch.Notify()
	case Report:
		e.To(e.Err)
	case Abandon:
		abandon(e.Msgs)
	case StopSelf:
		h.record("stop-self")
	default:
		h.t.Fatalf("unknown effect %T", e)
	}
}

// serve is the shell's request handling, reduced to what the scenarios need.
func (h *harness) serve(m any) {
	switch m := m.(type) {
	case *messages.Produce:
		if code, _ := h.core.Admit(h.fenced, h.revoked); code != 0 {
			m.Reply(messages.ProduceResult{ErrorCode: code})
			return
		}
		if h.full {
			h.step(AppendFailed{})
			m.Reply(messages.ProduceResult{ErrorCode: kerr.KafkaStorageError.Code})
			return
		}
		l := h.core.Log().(*fakeLog)
		base := l.end
		l.end++
		h.step(Produced{AcksAll: m.Acks == -1, Appended: true, End: l.end, Result: messages.ProduceResult{BaseOffset: base},
			Reply: m.Reply, LogEnd: l.end, Durable: l.durable})
	case *messages.Fetch:
		if !h.core.Leading() {
			m.Reply(messages.FetchResult{ErrorCode: kerr.NotLeaderForPartition.Code})
			return
		}
		m.Reply(messages.FetchResult{HighWatermark: h.core.HighWatermark()})
	default:
		h.t.Fatalf("serve %T", m)
	}
}

// sync returns the Sync effect named "#N", its sequence and its log.
func (h *harness) sync(name string) (Sync, uint64, *fakeLog) {
	seq := uint64(h.atoi(strings.TrimPrefix(name, "#")))
	s, ok := h.syncs[seq]
	if !ok {
		h.t.Fatalf("no sync #%d", seq)
	}
	return s, seq, s.Log.(*fakeLog)
}

func (h *harness) log(name string) *fakeLog {
	if l, ok := h.logs[name]; ok {
		return l
	}
	l := &fakeLog{name: name}
	h.logs[name] = l
	return l
}

func (h *harness) gen(s string) uint64 { return uint64(h.atoi(strings.TrimPrefix(s, "g"))) }

func (h *harness) atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		h.t.Fatalf("%q: %v", s, err)
	}
	return n
}

func errName(code int16) string {
	var ke *kerr.Error
	if errors.As(kerr.ErrorForCode(code), &ke) {
		return ke.Message
	}
	return strconv.Itoa(int(code))
}
