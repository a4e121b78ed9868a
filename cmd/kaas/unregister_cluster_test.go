package main

import (
	"context"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/assignment"
)

// A StatefulSet scaled down from three brokers to two: the departed broker
// is dead, then `kaas cluster unregister` (sent to the broker that is not
// the controller, which forwards it) removes its row and slot. Groups keep
// their committed offsets and are coordinated by the two brokers left, both
// of them; an alive broker and an unknown id are refused; the broker
// started again registers anew. `kaas metadata-quorum` and `kaas cluster
// list-endpoints` show the controller as leader and the others as
// observers, the dead broker fenced and a stale observer until it is
// unregistered, and again an observer once restarted.
func TestUnregisterBrokerAfterScaleDown(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	ctrl := c.startAll("kaas-0", "kaas-1", "kaas-2")
	ctx := ctxFor(t, 120*time.Second)
	others := c.namesBut(ctrl)
	victim, via := others[1], others[0]
	victimID, viaID := int32(victim[len(victim)-1]-'0'), int32(via[len(via)-1]-'0')
	t.Logf("controller %s; %s leaves, the request goes to %s", ctrl, victim, via)

	cl := c.client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	produceEverywhere(t, cl, "orders", 6, "before")
	// Groups of slots each of the three serves, four each.
	a, err := assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	owners := assignment.SlotOwners(a)
	var groups []string
	for i := 0; len(groups) < 12; i++ {
		g := fmt.Sprintf("g-%d", i)
		if owners[assignment.SlotFor(g, len(owners))] == fmt.Sprintf("kaas-%d", len(groups)%3) {
			groups = append(groups, g)
		}
	}
	for i, g := range groups {
		offs := kadm.Offsets{}
		offs.Add(kadm.Offset{Topic: "orders", Partition: int32(i % 6), At: int64(i + 1), LeaderEpoch: -1})
		if r, err := adm.CommitOffsets(ctx, g, offs); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, r.Error())
		}
	}

	// DescribeQuorum (kafka-metadata-quorum.sh), forwarded to the
	// controller: the one voter, the others observers of the files.
	quorum := func() kmsg.DescribeQuorumResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDescribeQuorumRequest()
		rt := kmsg.NewDescribeQuorumRequestTopic()
		rt.Topic = "__cluster_metadata"
		rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(int(viaID)))
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("DescribeQuorum: %v %+v", err, resp)
		}
		return resp.Topics[0].Partitions[0]
	}
	ctrlID := int32(ctrl[len(ctrl)-1] - '0')
	waitUntil(t, 10*time.Second, "every broker caught up with the controller's files", func() bool {
		p := quorum()
		if p.LeaderID != ctrlID || p.LeaderEpoch < 0 || len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != ctrlID || len(p.Observers) != 2 {
			t.Fatalf("quorum %+v", p)
		}
		for _, o := range p.Observers {
			if o.LogEndOffset != p.HighWatermark || time.Since(time.UnixMilli(o.LastFetchTimestamp)) > 5*time.Second {
				return false
			}
		}
		return true
	})

	// kaas metadata-quorum and kaas cluster against the broker that is not
	// the controller, cross-checked with what the brokers answer.
	viaAddr := c.brokers[via].kafka
	tool := func(name string, args ...string) []string {
		return append([]string{name, "--bootstrap-server", viaAddr}, args...)
	}
	listed, err := adm.ListBrokers(ctx)
	if err != nil || len(listed) != 3 {
		t.Fatalf("ListBrokers: %v %+v", err, listed)
	}
	endpoints := map[int32]clustertoolsEndpoint{}
	for _, b := range listed {
		rack := "null"
		if b.Rack != nil {
			rack = *b.Rack
		}
		endpoints[b.NodeID] = clustertoolsEndpoint{host: b.Host, port: b.Port, rack: rack, state: "unfenced"}
	}
	clusterID := ""
	for _, name := range c.names() {
		id := int32(name[len(name)-1] - '0')
		resp, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl.Broker(int(id)))
		if err != nil || resp.ClusterID == "" || (clusterID != "" && resp.ClusterID != clusterID) {
			t.Fatalf("DescribeCluster of %s: %v %+v (cluster id so far %q)", name, err, resp, clusterID)
		}
		clusterID = resp.ClusterID
		if out := mustTool(t, "cluster", "cluster-id", "--bootstrap-server", c.brokers[name].kafka); out != "Cluster ID: "+clusterID+"\n" {
			t.Fatalf("cluster-id from %s: %q, want %q", name, out, clusterID)
		}
	}
	status := func() clustertoolsQuorumStatus {
		t.Helper()
		st := clustertoolsParseStatus(t, mustTool(t, tool("metadata-quorum", "describe", "--status")...))
		ctrlEP := endpoints[ctrlID]
		wantVoters := fmt.Sprintf("[{%d <nil> [PLAINTEXT://%s:%d]}]", ctrlID, ctrlEP.host, ctrlEP.port)
		if v := fmt.Sprint(st.voters); v != wantVoters || st.voters[0].DirectoryID != nil {
			t.Fatalf("CurrentVoters %s, want %s", v, wantVoters)
		}
		for _, o := range st.observers {
			if o.DirectoryID != nil || o.Endpoints != nil {
				t.Fatalf("observer %+v: Kafka prints observers without directory or endpoints", o)
			}
		}
		if st.clusterID != clusterID || st.leaderID != int64(ctrlID) || st.maxLag != 0 || st.maxLagTimeMs != 0 {
			t.Fatalf("--status %+v: want cluster %s, leader %d, no voter lag", st, clusterID, ctrlID)
		}
		return st
	}
	replication := func() map[int32]clustertoolsReplicationRow {
		t.Helper()
		return clustertoolsParseReplication(t, mustTool(t, tool("metadata-quorum", "describe", "--replication")...))
	}
	// Polled in case a file is written between the requests.
	var st clustertoolsQuorumStatus
	var rows map[int32]clustertoolsReplicationRow
	waitUntil(t, 10*time.Second, "the tools showing DescribeQuorum's file, every observer caught up", func() bool {
		st, rows = status(), replication()
		p := quorum()
		return st.leaderEpoch == int64(p.LeaderEpoch) && st.highWatermark == p.HighWatermark &&
			rows[ctrlID].logEndOffset == p.HighWatermark && rows[viaID].lag == 0 && rows[victimID].lag == 0
	})
	if ids := clustertoolsReplicaIDs(st.observers); !slices.Equal(ids, []int32{min(viaID, victimID), max(viaID, victimID)}) {
		t.Fatalf("CurrentObservers %v, want %d and %d", ids, viaID, victimID)
	}
	if r := rows[ctrlID]; len(rows) != 3 || r.status != "Leader" || r.logEndOffset != st.highWatermark || r.lag != 0 {
		t.Fatalf("--replication %+v: want the controller %d leading at %d", rows, ctrlID, st.highWatermark)
	}
	for _, id := range []int32{viaID, victimID} {
		r := rows[id]
		if r.status != "Observer" || r.logEndOffset != st.highWatermark || r.lag != 0 || time.Since(time.UnixMilli(r.lastFetch)) > 5*time.Second || r.lastCaughtUp > r.lastFetch {
			t.Fatalf("--replication row of broker %d %+v: want a caught-up observer at %d fetching now", id, r, st.highWatermark)
		}
	}
	for _, args := range [][]string{{"list-endpoints"}, {"list-endpoints", "--include-fenced-brokers"}} {
		if eps := clustertoolsEndpoints(t, mustTool(t, tool("cluster", args...)...)); !maps.Equal(eps, endpoints) {
			t.Fatalf("%v: %+v, ListBrokers %+v", args, eps, endpoints)
		}
	}

	unregister := func(to, id int32) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		resp, err := req.RequestWith(ctx, cl.Broker(int(to)))
		if err != nil {
			t.Fatalf("UnregisterBroker %d via broker %d: %v", id, to, err)
		}
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return resp.ErrorCode, msg
	}
	if code, msg := unregister(viaID, victimID); code != kerr.InvalidRequest.Code {
		t.Fatalf("unregistering alive broker %d: code %d %q, want INVALID_REQUEST", victimID, code, msg)
	}
	if code, _ := unregister(viaID, 7); code != kerr.BrokerIDNotRegistered.Code {
		t.Fatalf("unregistering unknown broker 7: code %d, want BROKER_ID_NOT_REGISTERED", code)
	}
	clusterToolRefused(t, fmt.Sprintf("unregister broker %d: INVALID_REQUEST: broker %d (%s) is alive: only a dead broker can be unregistered", victimID, victimID, victim),
		tool("cluster", "unregister", "--id", strconv.Itoa(int(victimID)))...)
	clusterToolRefused(t, fmt.Sprintf("unregister broker %d: INVALID_REQUEST: broker %d (%s) is alive", ctrlID, ctrlID, ctrl),
		tool("cluster", "unregister", "--id", strconv.Itoa(int(ctrlID)))...)
	if eps := clustertoolsEndpoints(t, mustTool(t, tool("cluster", "list-endpoints")...)); !maps.Equal(eps, endpoints) {
		t.Fatalf("list-endpoints after the refusals: %+v", eps)
	}

	killed := time.Now()
	c.brokers[victim].kill()
	fenced := func() map[int32]bool {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = true
		resp, err := req.RequestWith(ctx, cl.Broker(int(viaID)))
		if err != nil {
			return nil
		}
		out := map[int32]bool{}
		for _, b := range resp.Brokers {
			out[b.NodeID] = b.IsFenced
		}
		return out
	}
	waitUntil(t, 30*time.Second, "the departed broker reported fenced", func() bool {
		return fenced()[victimID]
	})
	brokers := func() (alive, fenced float64) {
		_, fams := scrape(t, c.brokers[via].http)
		return sample(fams, "kaas_brokers", "state", "alive"), sample(fams, "kaas_brokers", "state", "fenced")
	}
	if alive, fenced := brokers(); alive != 2 || fenced != 1 {
		t.Fatalf("kaas_brokers with a dead broker: alive %v, fenced %v", alive, fenced)
	}
	// The dead broker: listed fenced only when asked for; still an
	// observer, as a Kafka observer that stopped fetching is (until its
	// session times out), at the last file it applied, behind the file that
	// fenced it, its last fetch before it died.
	alive := maps.Clone(endpoints)
	delete(alive, victimID)
	if eps := clustertoolsEndpoints(t, mustTool(t, tool("cluster", "list-endpoints")...)); !maps.Equal(eps, alive) {
		t.Fatalf("list-endpoints with broker %d dead: %+v, want %+v", victimID, eps, alive)
	}
	withFenced := maps.Clone(endpoints)
	withFenced[victimID] = clustertoolsEndpoint{host: endpoints[victimID].host, port: endpoints[victimID].port, rack: endpoints[victimID].rack, state: "fenced"}
	if eps := clustertoolsEndpoints(t, mustTool(t, tool("cluster", "list-endpoints", "--include-fenced-brokers")...)); !maps.Equal(eps, withFenced) {
		t.Fatalf("list-endpoints --include-fenced-brokers with broker %d dead: %+v, want %+v", victimID, eps, withFenced)
	}
	waitUntil(t, 10*time.Second, "the broker left caught up with the file fencing the dead one", func() bool {
		return replication()[viaID].lag == 0
	})
	st = status()
	if ids := clustertoolsReplicaIDs(st.observers); !slices.Equal(ids, []int32{min(viaID, victimID), max(viaID, victimID)}) {
		t.Fatalf("CurrentObservers with broker %d dead: %v", victimID, ids)
	}
	rows = replication()
	if r := rows[victimID]; r.status != "Observer" || r.lag < 1 || r.logEndOffset+r.lag != rows[ctrlID].logEndOffset ||
		time.UnixMilli(r.lastFetch).After(killed.Add(time.Second)) || time.Since(time.UnixMilli(r.lastFetch)) < time.Second || r.lastCaughtUp > r.lastFetch {
		t.Fatalf("--replication row of dead broker %d (killed at %d) %+v, leader %+v", victimID, killed.UnixMilli(), r, rows[ctrlID])
	}
	t.Logf("dead observer %d: %+v, leader %+v, killed at %d", victimID, rows[victimID], rows[ctrlID], killed.UnixMilli())
	if out := mustTool(t, tool("cluster", "unregister", "--id", strconv.Itoa(int(victimID)))...); out != fmt.Sprintf("Broker %d is no longer registered.\n", victimID) {
		t.Fatalf("unregister dead broker %d: %q", victimID, out)
	}
	// Answered once the controller wrote the file without it.
	a, err = assignment.ReadFile(assignment.Path(c.dataDir))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.BrokerByName(victim); ok || len(a.ConsumerGroups.Slots) != assignment.GroupSlotCount || slices.Contains(a.ConsumerGroups.Slots, victim) {
		t.Fatalf("assignment %d.%d after unregistering: brokers %+v, slots %v", a.ControllerEpoch, a.AssignmentVersion, a.Brokers, a.ConsumerGroups.Slots)
	}
	waitUntil(t, 10*time.Second, "DescribeCluster without the departed broker", func() bool {
		f := fenced()
		_, listed := f[victimID]
		return len(f) == 2 && !listed
	})
	clusterToolRefused(t, fmt.Sprintf("unregister broker %d: BROKER_ID_NOT_REGISTERED: broker %d is not registered", victimID, victimID),
		tool("cluster", "unregister", "--id", strconv.Itoa(int(victimID)))...)
	if eps := clustertoolsEndpoints(t, mustTool(t, tool("cluster", "list-endpoints", "--include-fenced-brokers")...)); !maps.Equal(eps, alive) {
		t.Fatalf("list-endpoints --include-fenced-brokers after unregistering: %+v, want %+v", eps, alive)
	}
	if ids := clustertoolsReplicaIDs(status().observers); !slices.Equal(ids, []int32{viaID}) {
		t.Fatalf("CurrentObservers after unregistering: %v", ids)
	}
	if alive, fenced := brokers(); alive != 2 || fenced != 0 {
		t.Fatalf("kaas_brokers after unregistering: alive %v, fenced %v", alive, fenced)
	}
	if p := quorum(); len(p.Observers) != 1 || p.Observers[0].ReplicaID != viaID {
		t.Fatalf("quorum after unregistering: %+v", p)
	}

	// Every group: coordinated by one of the two left (both used), its
	// offsets kept. A client seeded with the brokers left: this one knows
	// the departed broker (a seed, the coordinator of a third of the
	// groups), and kgo does not retry every request a refused dial fails.
	adm = kadm.NewClient(c.client())
	coordinators := map[int32]int{}
	for i, g := range groups {
		waitUntil(t, 30*time.Second, "group "+g+" coordinated", func() bool {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKeys = []string{g}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
				return false
			}
			coordinators[resp.Coordinators[0].NodeID]++
			return true
		})
		fetched, err := adm.FetchOffsets(ctx, g)
		if err != nil || fetched.Error() != nil {
			t.Fatalf("fetch offsets of %s: %v %v", g, err, fetched.Error())
		}
		if o, ok := fetched.Lookup("orders", int32(i%6)); !ok || o.At != int64(i+1) {
			t.Fatalf("group %s: committed %+v %v, want %d", g, o, ok, i+1)
		}
	}
	if len(coordinators) != 2 || coordinators[victimID] != 0 {
		t.Fatalf("coordinators after the scale-down: %v", coordinators)
	}
	produceEverywhere(t, cl, "orders", 6, "after")

	// Scaled up again: registered anew, its share of the slots back.
	c.start(victim)
	waitUntil(t, 30*time.Second, "the broker registered again", func() bool {
		f := fenced()
		fencedNow, listed := f[victimID]
		a, err := assignment.ReadFile(assignment.Path(c.dataDir))
		return listed && !fencedNow && err == nil && slices.Contains(a.ConsumerGroups.Slots, victim) && len(a.ConsumerGroups.Held) == 0
	})
	eps := clustertoolsEndpoints(t, mustTool(t, tool("cluster", "list-endpoints")...))
	if len(eps) != 3 || eps[victimID].state != "unfenced" || net.JoinHostPort(eps[victimID].host, strconv.Itoa(int(eps[victimID].port))) != c.brokers[victim].kafka {
		t.Fatalf("list-endpoints after the broker came back: %+v", eps)
	}
	waitUntil(t, 10*time.Second, "the broker back among the observers, caught up", func() bool {
		ids := clustertoolsReplicaIDs(status().observers)
		return slices.Equal(ids, []int32{min(viaID, victimID), max(viaID, victimID)}) && replication()[victimID].lag == 0
	})
	got := consumeAll(t, c, "orders", 12)
	if len(got) != 12 {
		t.Fatalf("read back %d records, want 12", len(got))
	}
}

// The StatefulSet (deploy/base's manifest; no kubelet runs here, the
// brokers are processes named as its pods) scaled down from three replicas
// to two while a producer and a consumer group run: once kaas-2 is dead the
// controller unregisters it on its own, as it never does for a dead broker
// the StatefulSet still has; the group, whose coordinator may change with
// the slot list, consumes every acknowledged record and commits.
func TestScaleDownUnregistersRemovedBroker(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	api.kubectl(t, "-n", c.ns, "apply", "-f", filepath.Join(root, "deploy", "base", "statefulset.yaml"))
	c.startAll("kaas-0", "kaas-1", "kaas-2")
	ctx := ctxFor(t, 120*time.Second)
	cl := c.client()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	produceEverywhere(t, cl, "orders", 6, "before")

	// A producer and a consumer group running throughout.
	var mu sync.Mutex
	acked, seen := map[string]bool{}, map[string]bool{}
	prod := c.client(kgo.DefaultProduceTopic("orders"), kgo.RequiredAcks(kgo.AllISRAcks()))
	stopProducing := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := 0; ; i++ {
			select {
			case <-stopProducing:
				return
			case <-time.After(10 * time.Millisecond):
			}
			v := fmt.Sprintf("live-%05d", i)
			prod.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked[string(r.Value)] = true
					mu.Unlock()
				}
			})
		}
	}()
	cons := c.client(kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("live"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	consumed := make(chan struct{})
	cctx, stopConsuming := context.WithCancel(ctx)
	go func() {
		defer close(consumed)
		for cctx.Err() == nil {
			cons.PollFetches(cctx).EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[string(r.Value)] = true
				mu.Unlock()
			})
		}
	}()
	time.Sleep(2 * time.Second)

	row := func() (present, slots bool) {
		a, err := assignment.ReadFile(assignment.Path(c.dataDir))
		if err != nil {
			t.Fatal(err)
		}
		_, present = a.BrokerByName("kaas-2")
		return present, slices.Contains(a.ConsumerGroups.Slots, "kaas-2")
	}

	c.brokers["kaas-2"].kill()
	waitUntil(t, 30*time.Second, "kaas-2 dead in assignment.json", func() bool {
		a, err := assignment.ReadFile(assignment.Path(c.dataDir))
		if err != nil {
			return false
		}
		b, ok := a.BrokerByName("kaas-2")
		return ok && b.State == assignment.Dead
	})
	// Still a replica: kept (a restart, not a scale-down), past a few
	// controller ticks and StatefulSet reads.
	time.Sleep(6 * time.Second)
	if present, slots := row(); !present || !slots {
		t.Fatalf("dead broker within the replicas: row %v, slots %v", present, slots)
	}

	api.kubectl(t, "-n", c.ns, "scale", "statefulset/kaas", "--replicas=2")
	waitUntil(t, 30*time.Second, "kaas-2 unregistered", func() bool {
		present, slots := row()
		return !present && !slots
	})
	time.Sleep(2 * time.Second)
	close(stopProducing)
	<-produced
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "the group consumed every acknowledged record", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for v := range acked {
			if !seen[v] {
				return false
			}
		}
		return true
	})
	stopConsuming()
	<-consumed
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("the group's commit after the scale-down: %v", err)
	}
	// A client seeded with the brokers left: kgo sends a request that is
	// for any broker to a seed it picks, the departed one included, and
	// does not retry a refused dial.
	adm = kadm.NewClient(c.client())
	committed, err := adm.FetchOffsets(ctx, "live")
	if err != nil || committed.Error() != nil {
		t.Fatalf("fetch the group's offsets: %v %v", err, committed.Error())
	}
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		if o, ok := committed.Lookup("orders", e.Partition); !ok || o.At != e.Offset {
			t.Errorf("partition %d: committed %+v, end %d", e.Partition, o, e.Offset)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d records acknowledged while kaas-2 left, all consumed by the group", len(acked))
}
