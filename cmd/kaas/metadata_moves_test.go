package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/assignment"
)

// metadataPoller asks one broker for a topic's metadata as fast as it
// answers and checks every answer: no partition leaderless, every leader
// one of the brokers listed, and no partition's epoch going back.
type metadataPoller struct {
	broker string
	polls  int
	errs   []string
	epochs map[int32]int32
}

func (p *metadataPoller) run(ctx context.Context, t *testing.T, addr, topic string, wg *sync.WaitGroup) {
	defer wg.Done()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	seed := cl.SeedBrokers()[0]
	p.epochs = map[int32]int32{}
	for ctx.Err() == nil {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		r, err := seed.Request(ctx, req)
		if err != nil {
			if ctx.Err() == nil {
				p.errs = append(p.errs, fmt.Sprintf("request: %v", err))
			}
			continue
		}
		resp := r.(*kmsg.MetadataResponse)
		p.polls++
		listed := map[int32]bool{}
		for _, b := range resp.Brokers {
			listed[b.NodeID] = true
		}
		for _, mt := range resp.Topics {
			for _, mp := range mt.Partitions {
				switch {
				case mp.ErrorCode != 0:
					p.errs = append(p.errs, fmt.Sprintf("partition %d: %v (leader %d epoch %d)", mp.Partition, kerr.ErrorForCode(mp.ErrorCode), mp.Leader, mp.LeaderEpoch))
				case !listed[mp.Leader]:
					p.errs = append(p.errs, fmt.Sprintf("partition %d: leader %d is not among the brokers listed", mp.Partition, mp.Leader))
				case mp.LeaderEpoch < p.epochs[mp.Partition]:
					p.errs = append(p.errs, fmt.Sprintf("partition %d: epoch %d after %d", mp.Partition, mp.LeaderEpoch, p.epochs[mp.Partition]))
				}
				p.epochs[mp.Partition] = max(p.epochs[mp.Partition], mp.LeaderEpoch)
			}
		}
	}
}

// TestMetadataDuringPlannedMoves: a two-phase move holds each partition
// leaderless in assignment.json until its old leader has released it, but
// Metadata never shows that: brokers that applied the file before the hold
// answer with the old leader and epoch (as a broker one file behind would)
// until the file that grants the partition, as Kafka's controlled shutdown
// never leaves a partition leaderless. A LEADER_NOT_AVAILABLE there costs a
// franz-go producer at its defaults 5 s (its metadata min age). Checked on
// both kinds of planned move: a drain (SIGTERM) and the rebalance back onto
// the restarted broker, with the two other brokers polled throughout. The
// drained broker exits only once the file granting its partitions is in.
// Then the controller drains: its successor moves its partitions two-phase
// too, never taking it for dead while it runs.
func TestMetadataDuringPlannedMoves(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	waitUntil(t, 30*time.Second, "a controller", func() bool { _, ctrl, _ := c.ledBy(); return ctrl != "" })
	// Enough partitions that each move's hold lasts a few milliseconds,
	// many polls long.
	const parts = 600
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), parts, 1, nil, "moving"); err != nil || resp.Err != nil {
		t.Fatalf("create: %v %v", err, resp.Err)
	}
	spread := func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == parts/3 && led["kaas-1"] == parts/3 && led["kaas-2"] == parts/3
	}
	waitUntil(t, 60*time.Second, "partitions spread", spread)
	_, ctrl, _ := c.ledBy()
	victim := "kaas-0"
	if ctrl == victim {
		victim = "kaas-1"
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var pollers []*metadataPoller
	for name, b := range c.brokers {
		if name == victim {
			continue
		}
		p := &metadataPoller{broker: name}
		pollers = append(pollers, p)
		wg.Add(1)
		go p.run(ctx, t, b.kafka, "moving", &wg)
	}
	time.Sleep(200 * time.Millisecond)

	// 1. Drain the victim: all its partitions move to the other two.
	before, err := assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	_ = c.brokers[victim].cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.brokers[victim].exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit after SIGTERM", victim)
	}
	// The drained broker stays up until it has applied the file that gives
	// its partitions on (its NOT_LEADER hints name the new leaders until
	// then): by its exit, none is held any more.
	atExit, err := assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, p := range atExit.Topics["moving"].Partitions {
		if p.Leader == assignment.NoLeader {
			held++
		}
	}
	if held > 0 {
		t.Errorf("%s exited with %d of its partitions still held (version %d)", victim, held, atExit.AssignmentVersion)
	}
	waitUntil(t, 30*time.Second, "the drained partitions led by the others", func() bool {
		led, _, _ := c.ledBy()
		return led[victim] == 0 && led["kaas-0"]+led["kaas-1"]+led["kaas-2"] == parts
	})
	// 2. Restart it: the controller moves a third back from the live two.
	c.start(victim)
	waitUntil(t, 60*time.Second, "rebalanced onto the restarted broker", spread)
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()

	after, err := assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	if after.AssignmentVersion < before.AssignmentVersion+4 {
		t.Fatalf("assignment went from version %d to %d: two two-phase moves write at least four files", before.AssignmentVersion, after.AssignmentVersion)
	}
	for _, p := range pollers {
		t.Logf("%s answered %d metadata requests", p.broker, p.polls)
		if p.polls < 50 {
			t.Errorf("%s answered only %d metadata requests: too few to have seen the moves", p.broker, p.polls)
		}
		for i, e := range p.errs {
			if i == 10 {
				t.Errorf("%s: %d more", p.broker, len(p.errs)-10)
				break
			}
			t.Errorf("%s: %s", p.broker, e)
		}
	}

	// 3. Drain the controller. It gives up the Lease first; its successor
	// knows the Lease was released, not lost, so it presumes the drained
	// broker alive, then draining, and moves its partitions two-phase: no
	// file of the successor's epochs declares it dead while it runs (a
	// failover would give its partitions away while it still writes).
	_, ctrl, epoch := c.ledBy()
	if ctrl == "" {
		t.Fatal("no controller")
	}
	watched := make(chan struct{})
	var newer, deadWhileRunning []int64
	go func() {
		defer close(watched)
		for {
			select {
			case <-c.brokers[ctrl].exited:
				return
			case <-time.After(2 * time.Millisecond):
			}
			a, err := assignment.ReadFile(assignment.Path(c.dataDir))
			if err != nil || a.ControllerEpoch <= epoch {
				continue
			}
			if len(newer) == 0 || newer[len(newer)-1] != a.AssignmentVersion {
				newer = append(newer, a.AssignmentVersion)
			}
			for _, b := range a.Brokers {
				if b.Name == ctrl && b.State == assignment.Dead && !slices.Contains(deadWhileRunning, a.AssignmentVersion) {
					deadWhileRunning = append(deadWhileRunning, a.AssignmentVersion)
				}
			}
		}
	}()
	_ = c.brokers[ctrl].cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.brokers[ctrl].exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("controller %s did not exit after SIGTERM", ctrl)
	}
	<-watched
	if len(newer) == 0 {
		t.Fatalf("no file of an epoch above %d was written while %s drained", epoch, ctrl)
	}
	if len(deadWhileRunning) > 0 {
		t.Errorf("files %v of the new controller declared the draining %s dead while it ran (files seen: %v)", deadWhileRunning, ctrl, newer)
	}
	waitUntil(t, 30*time.Second, "the drained controller's partitions led by the others", func() bool {
		led, _, _ := c.ledBy()
		return led[ctrl] == 0 && led["kaas-0"]+led["kaas-1"]+led["kaas-2"] == parts
	})
}
