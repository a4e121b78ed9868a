package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runChurn: a producer writes while group members join and leave; every
// record must be processed, none twice, and the group's committed offsets
// must end at the log end.
func runChurn(t *testing.T, group string, protocolOpts ...kgo.Opt) {
	runChurnWith(t, group, func(string) []kgo.Opt { return protocolOpts }, nil)
}

// runChurnWith is runChurn with each member's protocol options given by
// its name (m1, m2, m3) and settled, when set, called after each member
// joins or leaves (named "m2 joined", "m1 left", ...) once the group has
// processed records since.
func runChurnWith(t *testing.T, group string, memberOpts func(name string) []kgo.Opt, settled func(ctx context.Context, addr, step string)) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 90*time.Second)
	topic := "churn-" + group
	const partitions, total = 6, 3000
	if _, err := adm.CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}

	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
	produced := make(chan error, 1)
	go func() {
		for i := 0; i < total; i++ {
			prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 13)), Value: []byte(fmt.Sprintf("v-%05d", i))}, nil)
			if i%20 == 19 {
				time.Sleep(20 * time.Millisecond) // ~3 s of production
			}
		}
		produced <- prod.Flush(ctx)
	}()

	led := newLedger()
	var members []*member
	join := func(name string) {
		opts := append(groupClientOpts(addr, topic, group), memberOpts(name)...)
		members = append(members, startMember(t, ctx, name, led, opts))
	}
	atLeast := func(n int64, step string) {
		waitFor(t, ctx, fmt.Sprintf("%d records processed", n), func() bool { return led.count.Load() >= n })
		if settled != nil {
			settled(ctx, addr, step)
		}
	}

	join("m1")
	atLeast(300, "m1 joined")
	join("m2")
	atLeast(800, "m2 joined")
	join("m3")
	atLeast(1300, "m3 joined")
	members[0].leave() // m1
	atLeast(1800, "m1 left")
	members[1].leave() // m2
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	atLeast(total, "m2 left")
	members[2].leave() // m3 commits what it processed, then leaves

	sum := checkProcessedOnce(t, ctx, adm, led, group, topic, total)
	if sum != total {
		t.Errorf("log end offsets sum to %d, want %d", sum, total)
	}
}

func TestGroupChurnEagerRange(t *testing.T) {
	runChurn(t, "eager-range", kgo.Balancers(kgo.RangeBalancer()))
}

func TestGroupChurnCooperativeSticky(t *testing.T) {
	runChurn(t, "coop-sticky", kgo.Balancers(kgo.CooperativeStickyBalancer()))
}

func TestGroupChurnKIP848Uniform(t *testing.T) {
	runChurn(t, "kip848-uniform", kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()))
}

func TestGroupChurnKIP848Range(t *testing.T) {
	runChurn(t, "kip848-range", kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
}

// runGroupMigration: m1 and m3 are classic consumers, m2 a KIP-848 one.
// m2's join turns the classic group into a consumer group; m3 joins it
// through the classic protocol; m1 leaves it through LeaveGroup; m2's leave
// turns it classic again. ListGroups reports the group's type at each step.
func runGroupMigration(t *testing.T, group string, classic, kip848 []kgo.Opt) {
	want := map[string]string{"m1 joined": "classic", "m2 joined": "consumer", "m3 joined": "consumer",
		"m1 left": "consumer", "m2 left": "classic"}
	var adm *kgo.Client
	runChurnWith(t, group, func(name string) []kgo.Opt {
		if name == "m2" {
			return kip848
		}
		return classic
	}, func(ctx context.Context, addr, step string) {
		if adm == nil {
			adm = newClient(t, addr)
		}
		waitFor(t, ctx, group+" listed as a "+want[step]+" group after "+step, func() bool {
			return groupType(ctx, adm, group) == want[step]
		})
	})
}

// groupType is a group's type as ListGroups v5 reports it ("" if unlisted).
func groupType(ctx context.Context, cl *kgo.Client, group string) string {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return ""
	}
	for _, g := range resp.Groups {
		if g.Group == group {
			return g.GroupType
		}
	}
	return ""
}

func TestGroupMigrationEager(t *testing.T) {
	runGroupMigration(t, "migrate-eager", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())},
		[]kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer())})
}

func TestGroupMigrationCooperative(t *testing.T) {
	runGroupMigration(t, "migrate-coop", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())},
		[]kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())})
}
