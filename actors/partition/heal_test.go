package partition

import (
	"testing"

	"github.com/kaas-project/kaas/actors/internal/scripttest"
)

// healScenarios are core scenarios (coreScenarios' commands and effects)
// of a partition actor that stops without a release, and of storage that
// fails and recovers.
var healScenarios = []struct {
	name   string
	script []string
}{
	{"a stop while opening answers what was queued for the open", []string{
		"take 3 -> open g1 e3",
		"produce p1",
		"fetch f1",
		"stop -> p1: NOT_LEADER_FOR_PARTITION; f1: NOT_LEADER_FOR_PARTITION",
		"opened g1 L1 -> discard L1", // the open finishing late is closed
	}},
	{"a stop while leading fails the waiters and closes the log now", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"stop -> close-now L1; p1: NOT_LEADER_FOR_PARTITION",
		"synced #1",
	}},
	{"a failed commit stops the actor, to be reopened and recovered", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"produce p2",
		"synced #1 failed -> p1: KAFKA_STORAGE_ERROR; p2: KAFKA_STORAGE_ERROR; stop-self",
		"produce p3 -> p3: KAFKA_STORAGE_ERROR", // what reaches it before it stops
		"stop -> close-now L1",
	}},
	{"a failed last commit of a release does not stop the actor", []string{
		"take 3 -> open g1 e3",
		"opened g1 L1 -> take3: opened",
		"produce p1 -> sync #1 L1; watchdog #1",
		"relinquish -> close g2 L1",
		"synced #1 failed -> p1: NOT_LEADER_FOR_PARTITION",
	}},
}

func TestHealScenarios(t *testing.T) {
	for _, sc := range healScenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := newHarness(t)
			scripttest.Run(t, sc.script, h.run)
		})
	}
}
