package main

import (
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// racksSeen is each broker's rack ("-": none) as Metadata and as
// DescribeCluster answer through the client's bootstrap broker.
func racksSeen(t *testing.T, cl *kgo.Client) (metadata, cluster map[int32]string) {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	rackOf := func(r *string) string {
		if r == nil {
			return "-"
		}
		return *r
	}
	m, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("Metadata: %v", err)
	}
	metadata = map[int32]string{}
	for _, b := range m.Brokers {
		metadata[b.NodeID] = rackOf(b.Rack)
	}
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil || dc.ErrorCode != 0 {
		t.Fatalf("DescribeCluster: %v %+v", err, dc)
	}
	cluster = map[int32]string{}
	for _, b := range dc.Brokers {
		cluster[b.NodeID] = rackOf(b.Rack)
	}
	return metadata, cluster
}

func sameRacks(got, want map[int32]string) bool {
	if len(got) != len(want) {
		return false
	}
	for id, r := range want {
		if got[id] != r {
			return false
		}
	}
	return true
}

// TestRackLocal: --rack reaches Metadata, DescribeCluster and the broker's
// broker.rack config; without it a broker has no rack (null, not "").
func TestRackLocal(t *testing.T) {
	_, addr := testBroker(t, "--rack", "eu-west-1a")
	cl := newClient(t, addr)
	md, dc := racksSeen(t, cl)
	if want := map[int32]string{0: "eu-west-1a"}; !sameRacks(md, want) || !sameRacks(dc, want) {
		t.Fatalf("racks: Metadata %v, DescribeCluster %v, want %v", md, dc, want)
	}
	if c, ok := brokerConfig(t, ctxFor(t, 10*time.Second), cl, 0, "0", "broker.rack"); !ok || c.Value == nil || *c.Value != "eu-west-1a" {
		t.Fatalf("broker.rack: %+v (found %v)", c, ok)
	}

	_, plain := testBroker(t)
	md, dc = racksSeen(t, newClient(t, plain))
	if want := map[int32]string{0: "-"}; !sameRacks(md, want) || !sameRacks(dc, want) {
		t.Fatalf("no --rack: Metadata %v, DescribeCluster %v", md, dc)
	}
}

func TestRackRefusedWhenTooLong(t *testing.T) {
	long := make([]byte, maxRackLen+1)
	for i := range long {
		long[i] = 'z'
	}
	if _, err := parseServe([]string{"--rack", string(long)}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a 256-byte --rack was accepted")
	}
}

// TestClusterRacks: each broker's KAAS_RACK reaches every broker's
// Metadata and DescribeCluster through the assignment file, and a broker
// restarted in another zone is shown there.
func TestClusterRacks(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.startWith("kaas-0", "KAAS_RACK=zone-a")
	c.startWith("kaas-1", "KAAS_RACK=zone-b")
	c.start("kaas-2")
	waitUntil(t, 30*time.Second, "a controller elected and every broker alive", func() bool {
		led, ctrl, _ := c.ledBy()
		return ctrl != "" && len(led) == 3
	})

	want := map[int32]string{0: "zone-a", 1: "zone-b", 2: "-"}
	for _, name := range c.names() {
		cl := newClient(t, c.brokers[name].kafka)
		waitUntil(t, 30*time.Second, name+" answers every broker's rack", func() bool {
			md, dc := racksSeen(t, cl)
			return sameRacks(md, want) && sameRacks(dc, want)
		})
	}
	adm := kadm.NewClient(newClient(t, c.brokers["kaas-1"].kafka))
	if m, err := adm.BrokerMetadata(ctxFor(t, 10*time.Second)); err != nil || len(m.Brokers) != 3 {
		t.Fatalf("kadm BrokerMetadata: %v %+v", err, m)
	}

	c.brokers["kaas-2"].kill()
	c.startWith("kaas-2", "KAAS_RACK=zone-c")
	want[2] = "zone-c"
	cl := newClient(t, c.brokers["kaas-0"].kafka)
	waitUntil(t, 60*time.Second, "the restarted broker's new rack in Metadata", func() bool {
		md, dc := racksSeen(t, cl)
		return sameRacks(md, want) && sameRacks(dc, want)
	})
}
