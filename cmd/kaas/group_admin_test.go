package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestGroupAdmin(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	cl := newClient(t, addr)
	ctx := ctxT(t, 60*time.Second)
	const topic = "admin-groups"
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	for i := 0; i < 30; i++ {
		if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// OffsetFetch of a group that does not exist: -1 offsets, no error.
	of := kmsg.NewPtrOffsetFetchRequest()
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = "nobody"
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = topic, []int32{0, 2}
	rg.Topics = append(rg.Topics, rt)
	of.Groups = append(of.Groups, rg)
	ofr, err := of.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	g0 := ofr.Groups[0]
	if g0.ErrorCode != 0 || len(g0.Topics) != 1 || len(g0.Topics[0].Partitions) != 2 {
		t.Fatalf("OffsetFetch of an unknown group: %+v", g0)
	}
	for _, p := range g0.Topics[0].Partitions {
		if p.Offset != -1 || p.ErrorCode != 0 {
			t.Errorf("unknown group, partition %d: offset %d error %d", p.Partition, p.Offset, p.ErrorCode)
		}
	}
	if fo, err := adm.FetchOffsets(ctx, "nobody"); err != nil || len(fo) != 0 {
		t.Fatalf("kadm FetchOffsets of an unknown group: %v %v", fo, err)
	}

	// A commit by a non-member (generation -1, as kcat and admin tools
	// commit) creates an offsets-only group.
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 7, LeaderEpoch: -1, Metadata: "note"})
	if rs, err := adm.CommitOffsets(ctx, "offsets-only", os); err != nil || rs.Error() != nil {
		t.Fatalf("commit by a non-member: %v %v", err, rs.Error())
	}
	fo, err := adm.FetchOffsets(ctx, "offsets-only")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := fo.Lookup(topic, 0); o.At != 5 {
		t.Errorf("offset p0: %+v", o)
	}
	if o, _ := fo.Lookup(topic, 1); o.At != 7 || o.Metadata != "note" {
		t.Errorf("offset p1: %+v", o)
	}
	// Commits for unknown topics or partitions are refused per partition.
	var bad kadm.Offsets
	bad.Add(kadm.Offset{Topic: "no-such-topic", Partition: 0, At: 1, LeaderEpoch: -1})
	bad.Add(kadm.Offset{Topic: topic, Partition: 9, At: 1, LeaderEpoch: -1})
	rs, err := adm.CommitOffsets(ctx, "offsets-only", bad)
	if err != nil {
		t.Fatal(err)
	}
	rs.Each(func(r kadm.OffsetResponse) {
		if !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("commit to %s-%d: %v, want UNKNOWN_TOPIC_OR_PARTITION", r.Topic, r.Partition, r.Err)
		}
	})

	// A live classic group that consumed everything and committed.
	cons := newClient(t, addr, append(groupClientOpts(addr, topic, "live"), kgo.DisableAutoCommit())...)
	n := 0
	for n < 30 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the live group to stabilize", func() bool {
		d, err := adm.DescribeGroups(ctx, "live")
		return err == nil && d["live"].State == "Stable"
	})

	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := listed["live"]; l.State != "Stable" || l.ProtocolType != "consumer" {
		t.Errorf("listed live group: %+v", l)
	}
	if l := listed["offsets-only"]; l.State != "Empty" || l.ProtocolType != "" {
		t.Errorf("listed offsets-only group: %+v", l)
	}
	if _, ok := listed["nobody"]; ok {
		t.Error("a fetch of an unknown group created it")
	}
	if stable, err := adm.ListGroups(ctx, "Stable"); err != nil || len(stable) != 1 || stable["live"].Group != "live" {
		t.Errorf("ListGroups(Stable): %v %v", stable, err)
	}
	if c, err := adm.ListGroupsByType(ctx, []string{"consumer"}); err != nil || len(c) != 0 {
		t.Errorf("ListGroups(type consumer): %v %v", c, err)
	}

	described, err := adm.DescribeGroups(ctx, "live", "offsets-only", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	live := described["live"]
	if live.Err != nil || live.Protocol != "cooperative-sticky" || len(live.Members) != 1 {
		t.Errorf("described live group: %+v", live)
	} else if ca, ok := live.Members[0].Assigned.AsConsumer(); !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) != 3 {
		t.Errorf("live member assignment: %+v", live.Members[0].Assigned)
	}
	if d := described["offsets-only"]; d.Err != nil || d.State != "Empty" {
		t.Errorf("described offsets-only group: %+v", d)
	}
	if d := described["nobody"]; !errors.Is(d.Err, kerr.GroupIDNotFound) || d.State != "Dead" {
		t.Errorf("described unknown group: %+v", d)
	}

	lags, err := adm.Lag(ctx, "live")
	if err != nil {
		t.Fatal(err)
	}
	lag := lags["live"]
	if lag.Error() != nil || lag.Lag.Total() != 0 || len(lag.Lag[topic]) != 3 {
		t.Errorf("lag of the live group: total %d, %+v (%v)", lag.Lag.Total(), lag.Lag, lag.Error())
	}
	lags, err = adm.Lag(ctx, "offsets-only")
	if err != nil {
		t.Fatal(err)
	}
	if l := lags["offsets-only"]; l.Lag.Total() != 30-5-7 {
		t.Errorf("lag of the offsets-only group: %d, want 18", l.Lag.Total())
	}

	// OffsetDelete: a live group's subscribed topic is protected.
	ds, err := adm.DeleteOffsets(ctx, "live", kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := ds.Lookup(topic, 0); !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Errorf("deleting a subscribed topic's offset: %v", e)
	}
	if ds, err := adm.DeleteOffsets(ctx, "offsets-only", kadm.TopicsSet{topic: {1: {}}}); err != nil || ds.Error() != nil {
		t.Errorf("deleting an offset of an empty group: %v %v", err, ds.Error())
	}
	if fo, _ := adm.FetchOffsets(ctx, "offsets-only"); len(fo[topic]) != 1 {
		t.Errorf("offsets after OffsetDelete: %v", fo)
	}

	// DeleteGroups: a group with members is not deleted.
	del, err := adm.DeleteGroups(ctx, "live", "offsets-only", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(del["live"].Err, kerr.NonEmptyGroup) {
		t.Errorf("delete of a live group: %v", del["live"].Err)
	}
	if del["offsets-only"].Err != nil {
		t.Errorf("delete of an empty group: %v", del["offsets-only"].Err)
	}
	if !errors.Is(del["nobody"].Err, kerr.GroupIDNotFound) {
		t.Errorf("delete of an unknown group: %v", del["nobody"].Err)
	}
	if fo, err := adm.FetchOffsets(ctx, "offsets-only"); err != nil || len(fo) != 0 {
		t.Errorf("offsets of a deleted group: %v %v", fo, err)
	}
	cons.Close() // leaves the group
	waitFor(t, ctx, "the live group to empty", func() bool {
		d, err := adm.DescribeGroups(ctx, "live")
		return err == nil && d["live"].State == "Empty"
	})
	if del, err := adm.DeleteGroups(ctx, "live"); err != nil || del["live"].Err != nil {
		t.Errorf("delete after the members left: %v %v", err, del["live"].Err)
	}
	if listed, _ := adm.ListGroups(ctx); len(listed) != 0 {
		t.Errorf("groups left after deletion: %v", listed)
	}
}

// FindCoordinator: groups and transactional ids are coordinated here.
func TestGroupFindCoordinator(t *testing.T) {
	_, addr := testBroker(t)
	cl := newClient(t, addr)
	ctx := ctxT(t, 20*time.Second)
	for _, v := range []int16{0, 3, 4, 6} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = "g1"
		req.CoordinatorKeys = []string{"g1", "g2"}
		resp, err := cl.Request(ctx, pinVersion{req, v})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.FindCoordinatorResponse)
		if v < 4 {
			if r.ErrorCode != 0 || r.NodeID != 0 || r.Host == "" {
				t.Errorf("v%d: %+v", v, r)
			}
			continue
		}
		if len(r.Coordinators) != 2 || r.Coordinators[1].Key != "g2" || r.Coordinators[1].ErrorCode != 0 || r.Coordinators[1].Port <= 0 {
			t.Errorf("v%d: %+v", v, r.Coordinators)
		}
	}
	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.CoordinatorType = 1
	txn.CoordinatorKeys = []string{"tx"}
	txn.CoordinatorKey = "tx"
	resp, err := txn.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 || resp.Coordinators[0].NodeID != 0 || resp.Coordinators[0].Port <= 0 {
		t.Errorf("transaction coordinator: %+v", resp.Coordinators)
	}
}

// pinVersion issues a request at a fixed version.
type pinVersion struct {
	kmsg.Request
	v int16
}

func (p pinVersion) MaxVersion() int16 { return p.v }

// TestOffsetsOfDeletedTopic: as in Kafka, deleting a topic removes its
// committed offsets from every group: after the delete a group has none for
// it, and a topic created again under the same name starts with none (a
// consumer would otherwise resume the new topic at the old one's offsets).
// With --data-dir this holds across a restart: each commit records its
// topic's id.
func TestOffsetsOfDeletedTopic(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startDiskBroker(t, dir)
	ctx := ctxT(t, 60*time.Second)
	adm := newAdmin(t, addr)
	const topic, other = "recreated", "kept"
	for _, name := range []string{topic, other} {
		if _, err := adm.CreateTopic(ctx, 2, 1, nil, name); err != nil {
			t.Fatal(err)
		}
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 6, LeaderEpoch: -1})
	os.Add(kadm.Offset{Topic: other, Partition: 0, At: 9, LeaderEpoch: -1})
	if rs, err := adm.CommitOffsets(ctx, "readers", os); err != nil || rs.Error() != nil {
		t.Fatalf("commit: %v %v", err, rs.Error())
	}
	offsets := func(adm *kadm.Client) map[string]map[int32]int64 {
		t.Helper()
		fo, err := adm.FetchOffsets(ctx, "readers")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]map[int32]int64{}
		fo.Each(func(o kadm.OffsetResponse) {
			if o.Err != nil {
				t.Fatalf("fetch %s-%d: %v", o.Topic, o.Partition, o.Err)
			}
			if out[o.Topic] == nil {
				out[o.Topic] = map[int32]int64{}
			}
			out[o.Topic][o.Partition] = o.At
		})
		return out
	}
	if got := offsets(adm); got[topic][1] != 6 || got[other][0] != 9 {
		t.Fatalf("before the delete: %v", got)
	}
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if got := offsets(adm); len(got[topic]) != 0 || got[other][0] != 9 {
		t.Fatalf("after the delete: %v, want only %s", got, other)
	}
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	if got := offsets(adm); len(got[topic]) != 0 || got[other][0] != 9 {
		t.Fatalf("after creating %s again: %v, want none of it", topic, got)
	}
	// A commit to the new topic is the new topic's, and survives a restart.
	var again kadm.Offsets
	again.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
	// The client first commits by the old topic's id from its metadata
	// cache (UNKNOWN_TOPIC_ID, retriable), then by the new one.
	waitUntil(t, 30*time.Second, "a commit to the new topic", func() bool {
		rs, err := adm.CommitOffsets(ctx, "readers", again)
		return err == nil && rs.Error() == nil
	})
	stop()
	addr, _ = startDiskBroker(t, dir)
	adm = newAdmin(t, addr)
	var got map[string]map[int32]int64
	waitUntil(t, 30*time.Second, "offsets after the restart", func() bool {
		fo, err := adm.FetchOffsets(ctx, "readers")
		if err != nil || fo.Error() != nil {
			return false // COORDINATOR_LOAD_IN_PROGRESS while the group loads
		}
		got = offsets(adm)
		return true
	})
	if len(got[topic]) != 1 || got[topic][0] != 1 || got[other][0] != 9 {
		t.Fatalf("after a restart: %v, want %s-0 at 1 and %s-0 at 9", got, topic, other)
	}
}
