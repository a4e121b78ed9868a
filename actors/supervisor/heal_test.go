package supervisor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/actors/internal/scripttest"
	"github.com/kaas-project/kaas/actors/routing"
)

// healScenarios script the supervision events (coreScenarios' harness).
// Extra commands:
//
//	died t/P gN REASON               partition actor gN stopped (panic, stopped)
//	controller-died N REASON         controller incarnation N stopped
//	reloaded N                       the file was read for controller N's restart
var healScenarios = []struct {
	name   string
	script []string
}{
	{"a partition actor that dies is respawned at the file's epoch, with backoff", []string{
		"file 1 1 t:a:1@0,1@0 -> spawn t/0 g1 e0; spawn t/1 g2 e0; applied 1.1; publish broker local=t/0,t/1; kick",
		"opened t/0 g1 -> ping-soon",
		// Down: not routed, listed as opening (still moving for the controller).
		"died t/0 g1 panic -> restarted partition t/0 panic 0s #0; after 0s supervisor.RespawnDue; publish broker local=t/1; ping-soon",
		"ping -> ping 1.1 t/0@0*,t/1@0*",
		"opened t/0 g1 ->", // the dead incarnation's report, late
		"ping -> ping 1.1 t/0@0*,t/1@0*",
		"file 1 2 t:a:1@3,1@0 -> applied 1.2; publish broker local=t/1; kick",
		"advance 0s -> spawn t/0 g3 e3; publish broker local=t/0,t/1",
		"opened t/0 g3 -> ping-soon",
		"ping -> ping 1.2 t/0@3,t/1@0*",
		// A storm backs off: 100 ms, then 200 ms.
		"died t/0 g3 stopped -> restarted partition t/0 stopped 100ms #1; after 100ms supervisor.RespawnDue; publish broker local=t/1; ping-soon",
		"advance 99ms ->",
		"advance 1ms -> spawn t/0 g4 e3; publish broker local=t/0,t/1",
		"died t/0 g4 panic -> restarted partition t/0 panic 200ms #2; after 200ms supervisor.RespawnDue; publish broker local=t/1; ping-soon",
		"died t/0 g4 panic ->", // reported twice: once is enough
		"advance 200ms -> spawn t/0 g5 e3; publish broker local=t/0,t/1",
	}},
	{"a partition moved away while its actor is down is released at once", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"died t/0 g1 panic -> restarted partition t/0 panic 0s #0; after 0s supervisor.RespawnDue; publish broker; ping-soon",
		"file 1 2 t:a:2@1 -> ping-now; applied 1.2; publish broker; kick",
		"ping -> ping 1.2",
		"advance 1s ->", // the respawn finds nothing to lead
	}},
	{"a partition whose topic is gone when the backoff ends is not respawned", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"died t/0 g1 stopped -> restarted partition t/0 stopped 0s #0; after 0s supervisor.RespawnDue; publish broker; ping-soon",
		"file 1 2 t:b:1@0 -> ping-now; spawn t/0 g2 e0; applied 1.2; publish broker local=t/0; kick", // re-created
		"advance 1s ->",
	}},
	{"a partition actor that dies while releasing counts as released", []string{
		"file 1 1 t:a:1@0 -> spawn t/0 g1 e0; applied 1.1; publish broker local=t/0; kick",
		"file 1 2 t:a:2@1 -> relinquish t/0 g1; applied 1.2; publish broker; kick",
		"died t/0 g1 panic -> after 5s retire g1; ping-now",
		"ping -> ping 1.2",
	}},
	{"a controller that dies is restarted from the file on the volume; one that keeps dying is given up", []string{
		"elected 3 -> start-controller e3 #1; publish controller",
		"controller-died 1 panic -> restarted controller epoch 3 panic 0s #0; after 0s supervisor.ControllerRestartDue",
		"advance 0s -> reload-controller #1",
		"reloaded 1 -> start-controller e3 #2; publish controller",
		"controller-died 1 panic ->", // an older incarnation
		"controller-died 2 stopped -> restarted controller epoch 3 stopped 200ms #1; after 200ms supervisor.ControllerRestartDue",
		// Deposed during the backoff: no restart.
		"deposed -> stop-controller; publish broker",
		"advance 1s ->",
		"elected 4 -> start-controller e4 #3; publish controller",
		"controller-died 3 panic -> restarted controller epoch 4 panic 400ms #2; after 400ms supervisor.ControllerRestartDue",
		"advance 400ms -> reload-controller #3",
		"reloaded 3 -> start-controller e4 #4; publish controller",
		"controller-died 4 panic -> restarted controller epoch 4 panic 800ms #3; after 800ms supervisor.ControllerRestartDue",
		"advance 800ms -> reload-controller #4",
		"reloaded 4 -> start-controller e4 #5; publish controller",
		"controller-died 5 panic -> restarted controller epoch 4 panic 1.6s #4; after 1.6s supervisor.ControllerRestartDue",
		"advance 1600ms -> reload-controller #5",
		"reloaded 5 -> start-controller e4 #6; publish controller",
		"controller-died 6 panic -> restarted controller epoch 4 gave_up 0s #5; give-up controller",
		"ping -> ping",
	}},
}

func TestHealScenarios(t *testing.T) {
	for _, sc := range healScenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := newCoreHarness(t)
			scripttest.Run(t, sc.script, h.run)
		})
	}
}

// runHeal runs the supervision commands.
func (h *coreHarness) runHeal(args []string) bool {
	switch args[0] {
	case "died":
		topic, p, _ := strings.Cut(args[1], "/")
		delete(h.live, uint64(h.atoi(strings.TrimPrefix(args[2], "g"))))
		h.step(PartitionDied{TP: routing.TP{Topic: topic, Partition: int32(h.atoi(p))}, Gen: uint64(h.atoi(strings.TrimPrefix(args[2], "g"))), Reason: args[3]})
	case "controller-died":
		h.step(ControllerDied{Seq: uint64(h.atoi(args[1])), Reason: args[2]})
	case "reloaded":
		h.step(ControllerReloaded{Seq: uint64(h.atoi(args[1]))})
	default:
		return false
	}
	return true
}

// execHeal renders the supervision effects.
func (h *coreHarness) execHeal(e Effect) (string, bool) {
	switch e := e.(type) {
	case Restarted:
		return fmt.Sprintf("restarted %s %s %s %v #%d", e.Kind, e.Key, e.Reason, e.Delay, e.Recent), true
	case ReloadController:
		return fmt.Sprintf("reload-controller #%d", e.Seq), true
	case GiveUp:
		return "give-up " + e.Kind, true
	}
	return "", false
}
