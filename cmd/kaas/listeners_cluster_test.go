package main

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consecutivePorts returns the first of n loopback ports in a row that
// were free.
func consecutivePorts(t *testing.T, n int) int {
	t.Helper()
next:
	for range 100 {
		base := freeLoopbackPort(t)
		for p := base + 1; p < base+n; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				continue next
			}
			ln.Close()
		}
		return base
	}
	t.Fatalf("no %d free loopback ports in a row", n)
	return 0
}

// TestClusterListenerAddressesPerBroker: brokers whose second listener
// each broker is reached at on an address of its own (a NodePort or load
// balancer per pod; here a port per broker, from one set of flags for all,
// as a StatefulSet gives them: {ordinal+N}) are advertised at those
// addresses to that listener's clients. A client that knows only one
// broker's EXTERNAL address produces to and consumes from partitions led
// by each broker; Metadata and FindCoordinator on EXTERNAL name the
// EXTERNAL addresses, and on the primary listener the primary ones.
func TestClusterListenerAddressesPerBroker(t *testing.T) {
	api := startAPIServer(t)
	base := consecutivePorts(t, 2)
	ext := fmt.Sprintf("EXTERNAL://127.0.0.1:{ordinal+%d}", base)
	c := newKaasCluster(t, api, append(clusterFlags, "--listener-security-protocol-map", "EXTERNAL:PLAINTEXT")...)
	c.listeners = func(b *clusterBroker) []string {
		return []string{"--listeners", "PLAINTEXT://" + b.kafka + "," + ext, "--advertised-listeners", "PLAINTEXT://" + b.kafka + "," + ext}
	}
	c.startAll("kaas-0", "kaas-1")
	extAddr := func(id int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(base+id)) }

	cl := newClient(t, extAddr(0), kgo.RetryTimeout(60*time.Second), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ConsumeTopics("ext"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), clientLog(t))
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 90*time.Second)
	if r, err := adm.CreateTopic(ctx, 4, 1, nil, "ext"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	waitUntil(t, 30*time.Second, "both brokers leading partitions of ext", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] > 0 && led["kaas-1"] > 0
	})
	addrsOn := func(seed string) map[int32]string {
		m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, newClient(t, seed))
		if err != nil {
			t.Fatalf("Metadata through %s: %v", seed, err)
		}
		out := map[int32]string{}
		for _, b := range m.Brokers {
			out[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		return out
	}
	for id := range 2 {
		got := addrsOn(extAddr(id))
		if got[0] != extAddr(0) || got[1] != extAddr(1) {
			t.Errorf("Metadata on kaas-%d's EXTERNAL listener: %v, want %s and %s", id, got, extAddr(0), extAddr(1))
		}
		got = addrsOn(c.brokers[fmt.Sprintf("kaas-%d", id)].kafka)
		if got[0] != c.brokers["kaas-0"].kafka || got[1] != c.brokers["kaas-1"].kafka {
			t.Errorf("Metadata on kaas-%d's primary listener: %v", id, got)
		}
	}
	const n = 40
	for i := range n {
		r := &kgo.Record{Topic: "ext", Partition: int32(i % 4), Value: []byte(strconv.Itoa(i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d through EXTERNAL: %v", i, err)
		}
	}
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume through EXTERNAL after %d records: %v", len(seen), err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
	}
	// A group's coordinator, wherever it is, is found at its EXTERNAL address.
	for _, g := range []string{"g-a", "g-b", "g-c", "g-d"} {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKeys = []string{g}
		resp, err := fc.RequestWith(ctx, cl)
		if err != nil || len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
			t.Fatalf("FindCoordinator %s: %v %+v", g, err, resp)
		}
		co := resp.Coordinators[0]
		if got := net.JoinHostPort(co.Host, strconv.Itoa(int(co.Port))); got != extAddr(int(co.NodeID)) {
			t.Errorf("coordinator of %s: broker %d at %s, want %s", g, co.NodeID, got, extAddr(int(co.NodeID)))
		}
	}
}
