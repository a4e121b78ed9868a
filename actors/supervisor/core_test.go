package supervisor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/internal/scripttest"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// coreScenarios are event scripts for the supervisor core in virtual
// time. Each line is "command args -> effects", effects separated by ";".
// This broker is 1. Commands:
//
//	file E V topic:id:leader@epoch,...[:key=value]...  the follower accepts a file
//	opened t/P gN | released t/P gN                   partition actor reports
//	fail-next-spawn                                   the next spawn fails
//	elected E | elected-ended E | deposed             Lease changes
//	lease-lost E | controller-failed N                controller reports
//	groups NAME...                                    the groups coordinated
//	txn-ids NAME...                                   the transactional ids coordinated
//	defaults-changed                                  the broker defaults of topic configs changed
//	advance DURATION                                  virtual time passes
//	ping                                              shows the heartbeat's ping
var coreScenarios = []struct {
	name   string
	script []string
}{
	{"a new file grants partitions: takes", []string{
		"file 1 1 t:a:1@0,1@0,2@0 -> spawn t/0 g1 e0; spawn t/1 g2 e0; applied 1.1; publish broker local=t/0,t/1; kick",
		"ping -> ping 1.1 t/0@0*,t/1@0*",
		"opened t/0 g1 -> ping-soon",
		"opened t/0 g1 ->", // reported twice: once is enough
		"ping -> ping 1.1 t/0@0,t/1@0*",
		"file 1 2 t:a:1@1,1@0,1@0 -> spawn t/2 g3 e0; take g1 e1; applied 1.2; publish broker local=t/0,t/1,t/2; kick",
		"ping -> ping 1.2 t/0@1,t/1@0*,t/2@0*",
	}},
	{"a bounded controller hears of finished opens at once", []string{
		"moves 2 ->",
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"opened t/0 g1 -> ping-now",
	}},
	{"a partition moved away is revoked and relinquished", []string{
		"file 1 1 t:a:1@0,1@0 -> spawn t/0 g1 e0; spawn t/1 g2 e0; applied 1.1; publish broker local=t/0,t/1; kick",
		"opened t/0 g1 -> ping-soon",
		"file 1 2 t:a:2@1,1@0 -> relinquish t/0 g1; applied 1.2; publish broker local=t/1; kick",
		// Closing: still listed, no longer routed to.
		"ping -> ping 1.2 t/0@0,t/1@0*",
		"released t/0 g1 -> after 5s retire g1; ping-now",
		"ping -> ping 1.2 t/1@0*",
	}},
	{"revoked while still opening: released only once the open finished and closed", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:a:2@1 -> relinquish t/0 g1; applied 1.2; publish broker; kick",
		"ping -> ping 1.2 t/0@0*",
		// The actor closes only after its open finished: both reports
		// come, in that order, and the partition counts until the second.
		"opened t/0 g1 -> ping-soon",
		"ping -> ping 1.2 t/0@0",
		"released t/0 g1 -> after 5s retire g1; ping-now",
		"ping -> ping 1.2",
	}},
	{"a deleted topic's partitions are released for deletion", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 -> relinquish t/0 g1 delete; applied 1.2; publish broker; kick",
	}},
	{"a re-created topic: the old incarnation is deleted before the new one opens", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:b:1@0 -> relinquish t/0 g1 delete; applied 1.2; publish broker; kick",
		"released t/0 g1 -> after 5s retire g1; spawn t/0 g2 e0; publish broker local=t/0; ping-now",
	}},
	{"granted back before the release completes: retaken as a new generation", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"opened t/0 g1 -> ping-soon",
		"file 1 2 t:a:2@1 -> relinquish t/0 g1; applied 1.2; publish broker; kick",
		"file 1 3 t:a:1@2 -> applied 1.3; publish broker; kick", // one open per process: wait for the close
		"released t/0 g1 -> after 5s retire g1; spawn t/0 g2 e2; publish broker local=t/0; ping-now",
		"ping -> ping 1.3 t/0@2*",
	}},
	{"granted back after the release completed: a fresh take", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:a:2@1 -> relinquish t/0 g1; applied 1.2; publish broker; kick",
		"released t/0 g1 -> after 5s retire g1; ping-now",
		"file 1 3 t:a:1@2 -> spawn t/0 g2 e2; applied 1.3; publish broker local=t/0; kick",
	}},
	{"a retake at the epoch the release completes under", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:a:2@1 -> relinquish t/0 g1; applied 1.2; publish broker; kick",
		"file 1 3 t:a:1@2 -> applied 1.3; publish broker; kick",
		"file 1 4 t:a:1@3 -> applied 1.4; publish broker; kick",
		"released t/0 g1 -> after 5s retire g1; spawn t/0 g2 e3; publish broker local=t/0; ping-now",
	}},
	{"a retake moved away again before the release completes is dropped", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:a:2@1 -> relinquish t/0 g1; applied 1.2; publish broker; kick",
		"file 1 3 t:a:1@2 -> applied 1.3; publish broker; kick",
		"file 1 4 t:a:2@3 -> applied 1.4; publish broker; kick",
		"released t/0 g1 -> after 5s retire g1; ping-now",
		"ping -> ping 1.4",
	}},
	{"a stale report of an older generation changes nothing", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:a:2@1 -> relinquish t/0 g1; applied 1.2; publish broker; kick",
		"released t/0 g1 -> after 5s retire g1; ping-now",
		"file 1 3 t:a:1@2 -> spawn t/0 g2 e2; applied 1.3; publish broker local=t/0; kick",
		"opened t/0 g1 ->",
		"released t/0 g1 -> after 5s retire g1; ping-now", // the old actor retires again; g2 stays
		"ping -> ping 1.3 t/0@2*",
	}},
	{"a stale file is ignored", []string{
		"file 2 5 t:a:1@4 -> spawn t/0 g1 e4; applied 2.5; publish broker local=t/0; kick",
		"file 2 4 t:a:2@3 ->",
		"file 1 9 t:a:2@3 ->",
		"ping -> ping 2.5 t/0@4*",
		"file 3 1 t:a:2@5 -> relinquish t/0 g1; applied 3.1; publish broker; kick",
	}},
	{"held partitions publish the leader they move from", []string{
		"file 1 1 t:a:2@3,1@0 -> spawn t/1 g1 e0; applied 1.1; publish broker local=t/1; kick",
		"file 1 2 t:a:-1@3,-1@0 -> relinquish t/1 g1; applied 1.2; publish broker held=t/0<-2@3,t/1<-1@0; kick",
		"file 1 3 t:a:-1@3,-1@0 -> applied 1.3; publish broker held=t/0<-2@3,t/1<-1@0; kick", // a hold over several files
		"released t/1 g1 -> after 5s retire g1; ping-now",
		"file 1 4 t:a:1@4,-1@0 -> spawn t/0 g2 e4; applied 1.4; publish broker local=t/0 held=t/1<-1@0; kick",
	}},
	{"the controller starts when the Lease is won and stops when it is lost", []string{
		"elected 3 -> start-controller e3 #1; publish controller",
		"deposed -> stop-controller; publish broker",
		"deposed -> publish broker",
		// Won back at the same epoch: the old controller may still stop.
		"elected 3 -> start-controller e3 #2; publish controller",
		"lease-lost 2 ->", // an older controller's report
		"lease-lost 3 -> clear-leader; stop-controller; publish broker",
		"lease-lost 3 ->",
		"elected-ended 4 ->", // deposed before the event was handled
		"elected 4 -> start-controller e4 #3; publish controller",
		"elected 5 -> stop-controller; start-controller e5 #4; publish controller",
		"controller-failed 4 ->",
		"deposed -> publish broker",
	}},
	{"the controller role shows in the published view with the file", []string{
		"elected 2 -> start-controller e2 #1; publish controller",
		"file 2 1 t:a:1@0 -> spawn t/0 g1 e0; applied 2.1; publish controller local=t/0; kick",
	}},
	{"the retire timer fires only after its delay", []string{
		"file 1 1 t:a:1@0,1@0 -> spawn t/0 g1 e0; spawn t/1 g2 e0; applied 1.1; publish broker local=t/0,t/1; kick",
		"file 1 2 t:a:2@1,2@1 -> relinquish t/0 g1; relinquish t/1 g2; applied 1.2; publish broker; kick",
		"released t/0 g1 -> after 5s retire g1; ping-now",
		"advance 3s ->",
		"released t/1 g2 -> after 5s retire g2; ping-now",
		"advance 1999ms ->",
		"advance 1ms -> poison g1",
		"advance 2999ms ->",
		"advance 1ms -> poison g2",
	}},
	{"group slots gained and lost ride the ping", []string{
		"groups a b -> update-ping; kick",
		"ping -> ping groups=a,b",
		"groups b c -> update-ping; kick",
		"ping -> ping groups=b,c",
		"groups -> update-ping; kick",
		"ping -> ping",
	}},
	{"transactional ids ride the ping with the groups", []string{
		"groups a -> update-ping; kick",
		"txn-ids x y -> update-ping; kick",
		"ping -> ping groups=a,x,y",
		"groups -> update-ping; kick",
		"ping -> ping groups=x,y",
		"txn-ids -> update-ping; kick",
		"ping -> ping",
	}},
	{"a kept partition gets its topic's new config", []string{
		"file 1 1 t:a:1@0:retention.ms=1 -> spawn t/0 g1 e0 retention.ms=1; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:a:1@0:retention.ms=2 -> config g1 retention.ms=2; applied 1.2; publish broker local=t/0; kick",
		"file 1 3 t:a:1@0:retention.ms=2 -> applied 1.3; publish broker local=t/0; kick",
	}},
	{"a spawn that fails leaves nothing behind", []string{
		"fail-next-spawn ->",
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0 failed; applied 1.1; publish broker; kick",
		"ping -> ping 1.1",
		"file 1 2 t:a:1@1 -> spawn t/0 g2 e1; applied 1.2; publish broker local=t/0; kick",
	}},
	{"new broker defaults reach every partition led, not those closing", []string{
		"defaults-changed ->", // no assignment yet: nothing led
		"file 1 1 t:a:1@0,1@0:retention.ms=5 u:b:1@0 -> spawn t/0 g1 e0 retention.ms=5; spawn t/1 g2 e0 retention.ms=5; spawn u/0 g3 e0; applied 1.1; publish broker local=t/0,t/1,u/0; kick",
		"file 1 2 t:a:1@0,2@1:retention.ms=5 u:b:1@0 -> relinquish t/1 g2; applied 1.2; publish broker local=t/0,u/0; kick",
		"defaults-changed -> config g1 retention.ms=5; config g3",
	}},
}

func TestCoreScenarios(t *testing.T) {
	for _, sc := range coreScenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := newCoreHarness(t)
			scripttest.Run(t, sc.script, h.run)
		})
	}
}

// coreHarness is a minimal shell around a Core: it executes effects in
// virtual time and records what they did.
type coreHarness struct {
	t         *testing.T
	core      *Core
	clock     *clock.Fake
	fired     []Event // After events due, in firing order
	live      map[uint64]bool
	failSpawn bool
	out       []string
}

func newCoreHarness(t *testing.T) *coreHarness {
	return &coreHarness{
		t:     t,
		core:  NewCore(CoreConfig{Self: routing.Broker{ID: 1, Name: "b1"}, RetireAfter: retireAfter, Log: zerolog.Nop()}),
		clock: clock.NewFake(time.Unix(1_700_000_000, 0)),
		live:  map[uint64]bool{},
	}
}

func (h *coreHarness) run(args []string) []string {
	h.out = nil
	tpGen := func() (routing.TP, uint64) {
		topic, p, _ := strings.Cut(args[1], "/")
		return routing.TP{Topic: topic, Partition: int32(h.atoi(p))}, uint64(h.atoi(strings.TrimPrefix(args[2], "g")))
	}
	switch args[0] {
	case "file":
		next := h.file(args[1:])
		h.step(Applied{Prev: h.core.current, Next: next, Changes: assignment.Diff(h.core.current, next, 1, "b1")})
	case "opened":
		tp, gen := tpGen()
		h.step(Opened{TP: tp, Gen: gen})
	case "released":
		tp, gen := tpGen()
		h.step(Released{TP: tp, Gen: gen})
	case "fail-next-spawn":
		h.failSpawn = true
	case "moves":
		h.core.cfg.ConcurrentMoves = h.atoi(args[1])
	case "elected":
		h.step(Elected{Epoch: int64(h.atoi(args[1]))})
	case "elected-ended":
		h.step(Elected{Epoch: int64(h.atoi(args[1])), Ended: true})
	case "deposed":
		h.step(Deposed{})
	case "lease-lost":
		h.step(ControllerLostLease{Epoch: int64(h.atoi(args[1]))})
	case "controller-failed":
		h.step(ControllerFailed{Seq: uint64(h.atoi(args[1]))})
	case "groups":
		h.step(GroupsReported{Names: args[1:]})
	case "txn-ids":
		h.step(TxnIDsReported{Names: args[1:]})
	case "defaults-changed":
		h.step(DefaultsChanged{})
	case "advance":
		d, err := time.ParseDuration(args[1])
		if err != nil {
			h.t.Fatal(err)
		}
		h.clock.Advance(d)
		fired := h.fired
		h.fired = nil
		for _, ev := range fired {
			h.step(ev)
		}
	case "ping":
		h.out = append(h.out, h.ping())
	default:
		if !h.runHeal(args) {
			h.t.Fatalf("unknown command %q", args[0])
		}
	}
	return h.out
}

func (h *coreHarness) atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// file builds an assignment: E V, then topics as name:id:leader@epoch,...
// with optional :key=value config entries.
func (h *coreHarness) file(args []string) *assignment.Assignment {
	a := &assignment.Assignment{ControllerEpoch: int64(h.atoi(args[0])), AssignmentVersion: int64(h.atoi(args[1])),
		Brokers: []assignment.Broker{{ID: 1, Name: "b1"}, {ID: 2, Name: "b2"}}, Topics: map[string]assignment.Topic{}}
	for _, spec := range args[2:] {
		f := strings.Split(spec, ":")
		t := assignment.Topic{ID: f[1], Config: map[string]string{}}
		for _, p := range strings.Split(f[2], ",") {
			l, e, _ := strings.Cut(p, "@")
			t.Partitions = append(t.Partitions, assignment.Partition{Leader: int32(h.atoi(l)), LeaderEpoch: int32(h.atoi(e))})
		}
		for _, kv := range f[3:] {
			k, v, _ := strings.Cut(kv, "=")
			t.Config[k] = v
		}
		a.Topics[f[0]] = t
	}
	return a
}

func (h *coreHarness) step(ev Event) {
	for _, e := range h.core.Step(ev, h.clock.Now()) {
		h.out = append(h.out, h.exec(e))
	}
}

func (h *coreHarness) exec(e Effect) string {
	switch e := e.(type) {
	case Spawn:
		s := fmt.Sprintf("spawn %s/%d g%d e%d%s", e.Ref.Topic, e.Ref.Partition, e.Gen, e.Ref.LeaderEpoch, configString(e.Config))
		if h.failSpawn {
			h.failSpawn = false
			h.core.Step(SpawnFailed{TP: routing.TP{Topic: e.Ref.Topic, Partition: e.Ref.Partition}, Gen: e.Gen}, h.clock.Now())
			return s + " failed"
		}
		h.live[e.Gen] = true
		return s
	case Take:
		return fmt.Sprintf("take g%d e%d", e.Gen, e.Ref.LeaderEpoch)
	case Relinquish:
		s := fmt.Sprintf("relinquish %s/%d g%d", e.TP.Topic, e.TP.Partition, e.Gen)
		if e.Delete {
			s += " delete"
		}
		return s
	case UpdateConfig:
		return fmt.Sprintf("config g%d%s", e.Gen, configString(e.Config))
	case After:
		h.clock.AfterFunc(e.D, func() { h.fired = append(h.fired, e.Event) })
		if r, ok := e.Event.(RetireDue); ok {
			return fmt.Sprintf("after %v retire g%d", e.D, r.Gen)
		}
		return fmt.Sprintf("after %v %T", e.D, e.Event)
	case Poison:
		delete(h.live, e.Gen)
		return fmt.Sprintf("poison g%d", e.Gen)
	case SetApplied:
		return fmt.Sprintf("applied %d.%d", e.Position.Epoch, e.Position.Version)
	case Publish:
		return h.publish()
	case RefreshPing:
		if e.Send {
			return "ping-now"
		}
		return "ping-soon"
	case UpdatePing:
		return "update-ping"
	case Kick:
		return "kick"
	case StartController:
		return fmt.Sprintf("start-controller e%d #%d", e.Epoch, e.Seq)
	case StopController:
		return "stop-controller"
	case ClearLeader:
		return "clear-leader"
	}
	if s, ok := h.execHeal(e); ok {
		return s
	}
	h.t.Fatalf("unknown effect %T", e)
	return ""
}

func configString(cfg map[string]string) string {
	var s string
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		s += " " + k + "=" + cfg[k]
	}
	return s
}

// publish renders the view published: role, partitions routed here and
// held partitions with the leader they move from.
func (h *coreHarness) publish() string {
	v := h.core.View("c", func(gen uint64) (actorsys.Ref, bool) { return actorsys.Ref{}, h.live[gen] })
	s := "publish " + v.Role
	var local, held []string
	for tp := range v.Local {
		local = append(local, fmt.Sprintf("%s/%d", tp.Topic, tp.Partition))
	}
	for name, t := range v.Topics {
		for i, p := range t.Partitions {
			if p.HeldFrom != nil {
				held = append(held, fmt.Sprintf("%s/%d<-%d@%d", name, i, p.HeldFrom.Leader, p.HeldFrom.LeaderEpoch))
			}
		}
	}
	slices.Sort(local)
	slices.Sort(held)
	if len(local) > 0 {
		s += " local=" + strings.Join(local, ",")
	}
	if len(held) > 0 {
		s += " held=" + strings.Join(held, ",")
	}
	return s
}

// ping renders the heartbeat's ping: the file applied, the partitions
// listed (* while opening) and the groups coordinated.
func (h *coreHarness) ping() string {
	p := h.core.Ping(&heartbeatpb.Ping{})
	s := "ping"
	if p.ControllerEpoch != 0 {
		s += fmt.Sprintf(" %d.%d", p.ControllerEpoch, p.AssignmentVersion)
	}
	var parts []string
	for _, pl := range p.Partitions {
		x := fmt.Sprintf("%s/%d@%d", pl.Topic, pl.Partition, pl.LeaderEpoch)
		if pl.Opening {
			x += "*"
		}
		parts = append(parts, x)
	}
	slices.Sort(parts)
	if len(parts) > 0 {
		s += " " + strings.Join(parts, ",")
	}
	if len(p.Groups) > 0 {
		s += " groups=" + strings.Join(p.Groups, ",")
	}
	return s
}
