package main

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A static member (group.instance.id) that restarts within its session
// timeout gets its partitions back without a rebalance: same generation,
// the other member undisturbed.
func TestGroupStaticMemberRejoinsWithoutRebalance(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)
	const topic, group = "static", "static-group"
	if _, err := adm.CreateTopic(ctx, 4, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	start := func(instance string) (*kgo.Client, chan map[string][]int32) {
		assigned := make(chan map[string][]int32, 8)
		opts := append(groupClientOpts(addr, topic, group),
			kgo.InstanceID(instance), kgo.Balancers(kgo.RangeBalancer()),
			kgo.SessionTimeout(10*time.Second),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) { assigned <- a }))
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				if fs := cl.PollFetches(ctx); fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
			}
		}()
		return cl, assigned
	}
	a, aAssigned := start("instance-a")
	defer func() { a.Close() }()
	b, bAssigned := start("instance-b")
	defer b.Close()
	stable := func() {
		waitFor(t, ctx, "a stable group of two", func() bool {
			d, err := adm.DescribeGroups(ctx, group)
			return err == nil && d[group].State == "Stable" && len(d[group].Members) == 2
		})
	}
	stable()
	_, genBefore := b.GroupMetadata()
	aMember, _ := a.GroupMetadata()
	// DescribeGroups can show the group Stable before a client has run its
	// assignment callback: wait until each member holds its half.
	settled := func(name string, ch chan map[string][]int32) map[string][]int32 {
		for {
			select {
			case got := <-ch:
				if len(got[topic]) == 2 && len(ch) == 0 {
					return got
				}
			case <-ctx.Done():
				t.Fatalf("%s never held its half of the partitions", name)
			}
		}
	}
	aParts := settled("instance-a", aAssigned)
	settled("instance-b", bAssigned)

	// a restarts: static members do not leave the group on close.
	a.Close()
	a, aAssigned = start("instance-a")
	select {
	case got := <-aAssigned:
		if len(got[topic]) != len(aParts[topic]) {
			t.Errorf("restarted member got %v, had %v", got, aParts)
		}
	case <-ctx.Done():
		t.Fatal("restarted static member got no assignment")
	}
	stable()
	newMember, genAfter := a.GroupMetadata()
	if newMember == aMember {
		t.Errorf("restarted static member kept member id %s", newMember)
	}
	if genAfter != genBefore {
		t.Errorf("generation %d after the static rejoin, was %d (a rebalance ran)", genAfter, genBefore)
	}
	if _, gen := b.GroupMetadata(); gen != genBefore {
		t.Errorf("the other member moved to generation %d", gen)
	}
	if len(bAssigned) > 0 {
		t.Errorf("the other member was reassigned: %v", <-bAssigned)
	}
	d, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	instances := map[string]string{}
	for _, m := range d[group].Members {
		if m.InstanceID != nil {
			instances[*m.InstanceID] = m.MemberID
		}
	}
	if instances["instance-a"] != newMember || len(instances) != 2 {
		t.Errorf("described members %v, want instance-a -> %s", instances, newMember)
	}
}
