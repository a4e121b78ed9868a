package main

import (
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kaas-project/kaas/storage/assignment"
)

// TestDrainInWaves: with --concurrent-moves 20, a drain of 100 partitions
// and the rebalance back run as waves (real apiserver, three processes, a
// paced idempotent load checked against the logs): no assignment file holds
// more than 20 partitions leaderless, files hold partitions while the
// draining broker still leads others, the drain still ends with everything
// handed on, and no acknowledged record is lost, duplicated or reordered.
func TestDrainInWaves(t *testing.T) {
	const budget, parts = 20, 300
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append(append([]string{}, clusterFlags...), "--concurrent-moves", "20")...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	waitUntil(t, 30*time.Second, "a controller", func() bool { _, ctrl, _ := c.ledBy(); return ctrl != "" })
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), parts, 1, nil, "waves"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	spread := func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == parts/3 && led["kaas-1"] == parts/3 && led["kaas-2"] == parts/3
	}
	waitUntil(t, 60*time.Second, "partitions spread", spread)
	load := startLoad(t, c, "waves", parts, true)
	load.pace(50 * time.Millisecond)
	time.Sleep(time.Second)

	_, ctrl, _ := c.ledBy()
	victim := "kaas-1"
	if ctrl == victim {
		victim = "kaas-2"
	}
	victimID := int32(victim[len(victim)-1] - '0')
	// Watch every file the controller writes (polled; a file missed can
	// only hide a violation, never invent one).
	var mu sync.Mutex
	maxHeld, wavesSeen, versions := 0, 0, map[int64]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if a, err := assignment.ReadFile(assignment.Path(c.dataDir)); err == nil {
				held, ledByVictim := 0, 0
				for _, p := range a.Topics["waves"].Partitions {
					switch p.Leader {
					case assignment.NoLeader:
						held++
					case victimID:
						ledByVictim++
					}
				}
				mu.Lock()
				if !versions[a.AssignmentVersion] {
					versions[a.AssignmentVersion] = true
					maxHeld = max(maxHeld, held)
					if held > 0 && ledByVictim > 0 {
						wavesSeen++
					}
				}
				mu.Unlock()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()

	_ = c.brokers[victim].cmd.Process.Signal(syscall.SIGTERM)
	c.waitExit(t, victim)
	waitUntil(t, 30*time.Second, "the drained partitions led by the others", func() bool {
		led, _, _ := c.ledBy()
		return led[victim] == 0 && led["kaas-0"]+led["kaas-1"]+led["kaas-2"] == parts
	})
	mu.Lock()
	drainHeld, drainWaves := maxHeld, wavesSeen
	mu.Unlock()
	c.start(victim)
	waitUntil(t, 60*time.Second, "rebalanced onto the restarted broker", spread)
	close(stop)
	wg.Wait()
	t.Logf("drain: %d files seen, at most %d partitions held at once, %d files held moves while %s still led others; with the rebalance: at most %d held",
		len(versions), drainHeld, drainWaves, victim, maxHeld)
	if maxHeld > budget {
		t.Errorf("a file held %d partitions leaderless, want at most %d", maxHeld, budget)
	}
	if drainWaves == 0 {
		t.Errorf("no file held a move while %s still led other partitions: the drain did not run in waves", victim)
	}
	load.stop()
	load.verify(c)
}
