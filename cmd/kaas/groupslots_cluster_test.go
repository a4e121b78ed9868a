package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/assignment"
)

// TestBrokerJoinMovesOnlyItsSlots: a third broker registering takes its
// share of the 50 group-coordinator slots (16) from the two running ones.
// FindCoordinator, asked for one group of every slot all along, never
// answers anything but the old coordinator for the groups of the other 34
// slots (never COORDINATOR_NOT_AVAILABLE); the groups that move end at the
// new broker with their committed offsets.
func TestBrokerJoinMovesOnlyItsSlots(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.startAll("kaas-0", "kaas-1")
	ctx := ctxFor(t, 120*time.Second)
	cl := c.client()
	adm := kadm.NewClient(cl)
	groups := commitGroupOfEachSlot(ctx, t, adm)
	slots := func() *assignment.Assignment { return readAssignment(t, c) }
	before := assignment.SlotOwners(slots())

	// coordinators answers FindCoordinator for every group: the node id,
	// or the error code when there is none.
	coordinators := func() ([]int32, []int16, error) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = groups
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, nil, err
		}
		nodes, codes := make([]int32, len(groups)), make([]int16, len(groups))
		for _, co := range resp.Coordinators {
			s := assignment.SlotFor(co.Key, assignment.GroupSlotCount)
			nodes[s], codes[s] = co.NodeID, co.ErrorCode
		}
		return nodes, codes, nil
	}
	var (
		mu      sync.Mutex
		answers = make([]map[string]int, len(groups)) // per slot: "node N" or the error
		rounds  int
	)
	for s := range answers {
		answers[s] = map[string]int{}
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			nodes, codes, err := coordinators()
			if err != nil {
				continue
			}
			mu.Lock()
			rounds++
			for s := range groups {
				if codes[s] != 0 {
					answers[s][kerr.ErrorForCode(codes[s]).Error()]++
				} else {
					answers[s][fmt.Sprintf("node %d", nodes[s])]++
				}
			}
			mu.Unlock()
		}
	}()

	c.start("kaas-2")
	waitUntil(t, 60*time.Second, "kaas-2 serving its slots, none held", func() bool {
		a := slots()
		n := 0
		for _, s := range a.ConsumerGroups.Slots {
			if s == "kaas-2" {
				n++
			}
		}
		return n == 16 && len(a.ConsumerGroups.Held) == 0
	})
	time.Sleep(500 * time.Millisecond) // a few more rounds on the final file
	close(stop)
	<-stopped
	after := assignment.SlotOwners(slots())

	moved := 0
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d FindCoordinator rounds", rounds)
	for s := range groups {
		if before[s] == after[s] {
			want := fmt.Sprintf("node %c", before[s][len(before[s])-1])
			if len(answers[s]) != 1 || answers[s][want] == 0 {
				t.Errorf("slot %d stayed with %s, yet its group %s was answered %v", s, before[s], groups[s], answers[s])
			}
			continue
		}
		moved++
		if after[s] != "kaas-2" {
			t.Errorf("slot %d moved from %s to %s, not to the new broker", s, before[s], after[s])
		}
	}
	if moved != 16 {
		t.Errorf("%d slots moved, want the new broker's 16", moved)
	}
	nodes, codes, err := coordinators()
	if err != nil {
		t.Fatal(err)
	}
	for s, g := range groups {
		if want := int32(after[s][len(after[s])-1] - '0'); codes[s] != 0 || nodes[s] != want {
			t.Errorf("group %s (slot %d): coordinator %d (error %d), want %d", g, s, nodes[s], codes[s], want)
		}
		got, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			t.Fatalf("fetch %s: %v", g, err)
		}
		if o, ok := got.Lookup("orders", int32(s%2)); !ok || o.At != int64(s+1) {
			t.Errorf("group %s (slot %d) after the join: offset %+v, want %d", g, s, o, s+1)
		}
	}
}

// commitGroupOfEachSlot creates the topic "orders" (2 partitions) and
// commits, for the group of each slot (groupOfEachSlot("g")), offset s+1
// of partition s%2; it returns the groups in slot order.
func commitGroupOfEachSlot(ctx context.Context, t *testing.T, adm *kadm.Client) []string {
	t.Helper()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	groups := groupOfEachSlot("g")
	for s, g := range groups {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "orders", Partition: int32(s % 2), At: int64(s + 1), LeaderEpoch: -1})
		if r, err := adm.CommitOffsets(ctx, g, offs); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, r.Error())
		}
	}
	return groups
}

// readAssignment reads the cluster's assignment file.
func readAssignment(t *testing.T, c *kaasCluster) *assignment.Assignment {
	t.Helper()
	a, err := assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// groupOfEachSlot returns a group id of each group-coordinator slot, in
// slot order: prefix-N for the first N that hashes there.
func groupOfEachSlot(prefix string) []string {
	groups := make([]string, assignment.GroupSlotCount)
	for i, filled := 0, 0; filled < len(groups); i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if s := assignment.SlotFor(g, assignment.GroupSlotCount); groups[s] == "" {
			groups[s] = g
			filled++
		}
	}
	return groups
}

// TestDeadBrokersSlotsSpread: a broker killed (SIGKILL) out of three: once
// it is dead, the groups of its 16 or 17 slots are coordinated by both
// survivors, neither serving more than 25 slots, with their committed
// offsets; every other group keeps its coordinator.
func TestDeadBrokersSlotsSpread(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	ctrl := c.startAll("kaas-0", "kaas-1", "kaas-2")
	ctx := ctxFor(t, 120*time.Second)
	adm := kadm.NewClient(c.client())
	groups := commitGroupOfEachSlot(ctx, t, adm)
	file := func() *assignment.Assignment { return readAssignment(t, c) }
	before := file()
	victim := "kaas-2"
	if ctrl == victim {
		victim = "kaas-1"
	}
	c.brokers[victim].kill()
	waitUntil(t, 30*time.Second, victim+" dead in the assignment, no slot held", func() bool {
		a := file()
		b, ok := a.BrokerByName(victim)
		return ok && b.State == assignment.Dead && len(a.ConsumerGroups.Held) == 0
	})

	// FindCoordinator from a survivor, until every group has an answer.
	survivor := "kaas-0"
	if ctrl == "kaas-0" && victim == "kaas-1" {
		survivor = "kaas-2"
	}
	scl := newClient(t, c.brokers[survivor].kafka)
	nodes := make([]int32, len(groups))
	waitUntil(t, 30*time.Second, "a coordinator for every group", func() bool {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = groups
		resp, err := req.RequestWith(ctx, scl)
		if err != nil {
			return false
		}
		for _, co := range resp.Coordinators {
			if co.ErrorCode != 0 {
				return false
			}
			nodes[assignment.SlotFor(co.Key, assignment.GroupSlotCount)] = co.NodeID
		}
		return true
	})
	victimID := int32(victim[len(victim)-1] - '0')
	load := map[int32]int{}
	fellTo := map[int32]int{}
	for s, home := range before.ConsumerGroups.Slots {
		load[nodes[s]]++
		if home == victim {
			fellTo[nodes[s]]++
			continue
		}
		if want := int32(home[len(home)-1] - '0'); nodes[s] != want {
			t.Errorf("slot %d of %s: coordinator %d", s, home, nodes[s])
		}
	}
	t.Logf("%s's slots fell to %v; slots served %v", victim, fellTo, load)
	if len(fellTo) != 2 || fellTo[victimID] != 0 {
		t.Errorf("%s's slots fell to %v, want both survivors", victim, fellTo)
	}
	for id, n := range load {
		if n > 25 {
			t.Errorf("broker %d serves %d slots, more than 25", id, n)
		}
	}
	// Each survivor's kaas_group_slots_served says the same.
	for _, name := range c.namesBut(victim) {
		id := int32(name[len(name)-1] - '0')
		waitUntil(t, 10*time.Second, name+"'s kaas_group_slots_served", func() bool {
			_, fam := scrape(t, c.brokers[name].http)
			return sample(fam, "kaas_group_slots_served") == float64(load[id])
		})
	}
	// A client seeded with a survivor: kgo does not retry every request a
	// refused dial to the dead broker fails.
	sadm := kadm.NewClient(scl)
	for s, g := range groups {
		if before.ConsumerGroups.Slots[s] != victim {
			continue
		}
		var got kadm.OffsetResponses
		waitUntil(t, 30*time.Second, "the offsets of "+g, func() bool {
			var err error
			got, err = sadm.FetchOffsets(ctx, g)
			return err == nil && got.Error() == nil
		})
		if o, ok := got.Lookup("orders", int32(s%2)); !ok || o.At != int64(s+1) {
			t.Errorf("group %s (slot %d) after %s died: offset %+v, want %d", g, s, victim, o, s+1)
		}
	}
}
