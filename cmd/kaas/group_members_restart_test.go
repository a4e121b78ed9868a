package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupProtocols are the group protocols the membership tests run.
var groupProtocols = []struct {
	name string
	opts []kgo.Opt
}{
	{"classic-cooperative", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
	{"classic-eager", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
	{"kip848", []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}},
}

// TestGroupMembershipSurvivesRestart: with --data-dir a group's members are
// saved beside its offsets, so a broker restart (the coordinator gone and
// back, as in a rolling restart) does not rebalance a stable group: after
// the restart the consumers keep their member ids (KIP-848: and epochs)
// and partitions, with no revoked, lost or newly assigned callback, and go
// on consuming new records.
func TestGroupMembershipSurvivesRestart(t *testing.T) {
	for _, p := range groupProtocols {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"--data-dir", dir, "--group-initial-rebalance-delay", "0"}
			_, addr, stop := startTestBroker(t, args...)
			const topic, group = "members-restart", "members-restart-g"
			createTopic(t, addr, topic, 4, nil)
			w := watchGroup(t, group, topic, 4, func(opts ...kgo.Opt) *kgo.Client { return newClient(t, addr, opts...) }, p.opts)
			produceKeys(t, addr, topic, 0, 100)
			before := w.settle(t, newAdmin(t, addr), 100)

			stop()
			startTestBroker(t, append(args, "--kafka-addr", addr)...) // the last --kafka-addr wins
			produceKeys(t, addr, topic, 100, 200)
			w.unchanged(t, newAdmin(t, addr), before, 200)
		})
	}
}

// watchedGroup is two consumers of one group that count the records they
// read, every assignment callback after the group settled, and every
// session a consumer ended on its own because it could not dial its
// coordinator.
type watchedGroup struct {
	group, topic string
	parts        int
	changes      atomic.Int32
	settled      atomic.Bool
	undialed     atomic.Int32
	mu           sync.Mutex
	seen         map[string]bool
	owned        [2]map[int32]bool
	ownedBefore  []string
}

func watchGroup(t *testing.T, group, topic string, parts int, client func(...kgo.Opt) *kgo.Client, opts []kgo.Opt) *watchedGroup {
	w := &watchedGroup{group: group, topic: topic, parts: parts, seen: map[string]bool{}, owned: [2]map[int32]bool{{}, {}}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for i := range 2 {
		change := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
			return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
				if w.settled.Load() {
					w.changes.Add(1)
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				for _, p := range ps[topic] {
					if add {
						w.owned[i][p] = true
					} else {
						delete(w.owned[i], p)
					}
				}
			}
		}
		cl := client(append([]kgo.Opt{
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.SessionTimeout(30 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond),
			kgo.OnPartitionsAssigned(change(true)), kgo.OnPartitionsRevoked(change(false)), kgo.OnPartitionsLost(change(false)),
			kgo.WithLogger(undialedSessions{w}),
		}, opts...)...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cl.PollRecords(ctx, 100).EachRecord(func(r *kgo.Record) {
					w.mu.Lock()
					w.seen[string(r.Key)] = true
					w.mu.Unlock()
				})
			}
		}()
	}
	return w
}

func (w *watchedGroup) consumed(n int) func() bool {
	return func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.seen) == n
	}
}

// ownership lists "consumer/partition" for every partition each consumer
// owns.
func (w *watchedGroup) ownership() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for i, ps := range w.owned {
		for p := range ps {
			out = append(out, strconv.Itoa(i)+"/"+strconv.Itoa(int(p)))
		}
	}
	slices.Sort(out)
	return out
}

// settle waits until both consumers own partitions and read the n records
// produced, and returns the group as described then.
func (w *watchedGroup) settle(t *testing.T, adm *kadm.Client, n int) string {
	t.Helper()
	waitUntil(t, 60*time.Second, w.group+": both consumers own partitions and read every record", func() bool {
		w.mu.Lock()
		both := len(w.owned[0]) > 0 && len(w.owned[1]) > 0 && len(w.owned[0])+len(w.owned[1]) == w.parts
		w.mu.Unlock()
		return both && w.consumed(n)()
	})
	w.settled.Store(true)
	before := describeMembers(t, adm, w.group)
	w.ownedBefore = w.ownership()
	if c := w.changes.Load(); c != 0 {
		t.Fatalf("%s was still rebalancing (%d callbacks) when it was described", w.group, c)
	}
	return before
}

// undialedSessions is a kgo.Logger that counts the group sessions a
// franz-go consumer ends because its heartbeat could not dial the
// coordinator. A classic member does so when its coordinator lookup
// (FindCoordinator) is sent to a broker that is gone, which franz-go does
// not retry; the member then rejoins with its member id, and the group
// rebalances because its subscription no longer lists the partitions it
// owned. A KIP-848 member retries such errors in place.
type undialedSessions struct{ w *watchedGroup }

func (undialedSessions) Level() kgo.LogLevel { return kgo.LogLevelInfo }

func (u undialedSessions) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	if msg != "heartbeat errored" || !u.w.settled.Load() {
		return
	}
	for i := 0; i+1 < len(keyvals); i += 2 {
		err, _ := keyvals[i+1].(error)
		if op := (*net.OpError)(nil); keyvals[i] == "err" && errors.As(err, &op) && op.Op == "dial" {
			u.w.undialed.Add(1)
		}
	}
}

// unchanged waits for the n records produced and checks that the group
// did not rebalance since settle. If a consumer left its session because
// it could not dial the coordinator (undialedSessions), the rebalance its
// rejoin starts is the client's, and only what the coordinator kept is
// checked: the group is Stable with the same members (an unknown member
// id would have been refused and replaced by a new one).
func (w *watchedGroup) unchanged(t *testing.T, adm *kadm.Client, before string, n int) {
	t.Helper()
	waitUntil(t, 90*time.Second, w.group+": every record produced is read", w.consumed(n))
	if u := w.undialed.Load(); u != 0 {
		t.Logf("%s: %d sessions ended by consumers that could not dial the coordinator; checking the members only", w.group, u)
		if after := describeMembers(t, adm, w.group); after != before {
			t.Fatalf("%s now %s, before %s", w.group, after, before)
		}
		return
	}
	if c := w.changes.Load(); c != 0 {
		t.Fatalf("%s: %d assignment callbacks: the group rebalanced", w.group, c)
	}
	if after := describeMembers(t, adm, w.group); after != before {
		t.Fatalf("%s now %s, before %s", w.group, after, before)
	}
	if now := w.ownership(); !slices.Equal(now, w.ownedBefore) {
		t.Fatalf("%s: partitions owned %v, before %v", w.group, now, w.ownedBefore)
	}
}

// describeMembers is a group's state and member ids (KIP-848: with the
// group and member epochs), as one comparable string, once it is stable.
func describeMembers(t *testing.T, adm *kadm.Client, group string) string {
	t.Helper()
	var out, last string
	defer func() {
		if out == "" {
			t.Logf("group %s last described as %s", group, last)
		}
	}()
	waitUntil(t, 60*time.Second, "group "+group+" described stable", func() bool {
		if cg, err := adm.DescribeConsumerGroups(ctxT(t, 10*time.Second), group); err == nil {
			if d := cg[group]; d.Err == nil && len(d.Members) > 0 {
				ids := make([]string, 0, len(d.Members))
				for _, m := range d.Members {
					ids = append(ids, m.MemberID+"@"+strconv.Itoa(int(m.MemberEpoch)))
				}
				slices.Sort(ids)
				last = fmt.Sprintf("%s epoch %d members %q", d.State, d.Epoch, ids)
				if d.State == "Stable" {
					out = last
				}
				return out != ""
			}
		}
		dg, err := adm.DescribeGroups(ctxT(t, 10*time.Second), group)
		if err != nil {
			last = err.Error()
			return false
		}
		d := dg[group]
		if d.Err != nil || d.State != "Stable" {
			last = fmt.Sprintf("%s (%v), %d members", d.State, d.Err, len(d.Members))
			return false
		}
		ids := make([]string, 0, len(d.Members))
		for _, m := range d.Members {
			ids = append(ids, m.MemberID)
		}
		slices.Sort(ids)
		out = fmt.Sprintf("%s %s members %q", d.State, d.Protocol, ids)
		return true
	})
	return out
}

// TestShareGroupMembershipSurvivesRestart: a share group's members keep
// their ids and epochs and the group its epoch through a broker restart on
// the same data dir (the membership is saved beside the group's offsets),
// and the consumers go on reading the records produced after it. A third
// member comes and goes first, so the group epoch is one that two members
// rejoining a forgotten group would not reach.
func TestShareGroupMembershipSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--share-auto-offset-reset", "earliest"}
	_, addr, stop := startTestBroker(t, args...)
	const topic, group = "share-restart", "share-restart-g"
	createTopic(t, addr, topic, 4, nil)
	var mu sync.Mutex
	seen := map[string]bool{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range 2 {
		cl := shareConsumer(t, addr, group, topic)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cl.PollRecords(ctx, 100).EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Key)] = true
					mu.Unlock()
				})
				cl.MarkAcks(kgo.AckAccept)
			}
		}()
	}
	consumed := func(n int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) == n
		}
	}
	describe := func(adm *kadm.Client) string {
		t.Helper()
		waitShareStable(t, adm, group, 2)
		d, err := adm.DescribeShareGroups(ctxT(t, 10*time.Second), group)
		if err != nil {
			t.Fatal(err)
		}
		g := d[group]
		ids := make([]string, 0, len(g.Members))
		for _, m := range g.Members {
			ids = append(ids, m.MemberID+"@"+strconv.Itoa(int(m.MemberEpoch)))
		}
		slices.Sort(ids)
		return fmt.Sprintf("epoch %d members %q", g.GroupEpoch, ids)
	}
	produceKeys(t, addr, topic, 0, 100)
	waitUntil(t, 60*time.Second, "the records produced before the restart read", consumed(100))
	adm := newAdmin(t, addr)
	third := shareConsumer(t, addr, group, topic)
	waitUntil(t, 30*time.Second, "a third member joined", func() bool {
		third.PollRecords(ctxT(t, 200*time.Millisecond), 1)
		d, err := adm.DescribeShareGroups(ctxT(t, 10*time.Second), group)
		return err == nil && len(d[group].Members) == 3
	})
	third.Close() // leaves the group
	before := describe(adm)

	stop()
	startTestBroker(t, append(args, "--kafka-addr", addr)...) // the last --kafka-addr wins
	produceKeys(t, addr, topic, 100, 200)
	waitUntil(t, 90*time.Second, "the records produced after the restart read", consumed(200))
	if after := describe(newAdmin(t, addr)); after != before {
		t.Fatalf("share group after the restart %s, before %s", after, before)
	}
}
