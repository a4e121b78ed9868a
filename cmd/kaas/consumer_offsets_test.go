package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/assignment"
)

// offsetsRecord is one record of __consumer_offsets decoded as Kafka's
// OffsetsMessageFormatter decodes it: an offset commit (key version 0 or
// 1) with its value, or a group's GroupMetadata (key version 2, Group
// set); either one's tombstone.
type offsetsRecord struct {
	Group, Topic string
	Partition    int32
	Tombstone    bool
	Offset       int64
	LeaderEpoch  int32
	Metadata     string
	// GroupMetadata is the value of a GroupMetadata record (nil for its
	// tombstone); IsGroup marks the record as one.
	IsGroup       bool
	GroupMetadata *kmsg.GroupMetadataValue
}

func (r offsetsRecord) String() string {
	if r.IsGroup {
		if r.Tombstone {
			return r.Group + "=group tombstone"
		}
		return fmt.Sprintf("%s=group generation %d, %d members", r.Group, r.GroupMetadata.Generation, len(r.GroupMetadata.Members))
	}
	if r.Tombstone {
		return fmt.Sprintf("%s/%s/%d=tombstone", r.Group, r.Topic, r.Partition)
	}
	return fmt.Sprintf("%s/%s/%d=%d", r.Group, r.Topic, r.Partition, r.Offset)
}

// readOffsetsRecords reads partition of __consumer_offsets from its start
// to its end offset and decodes its offset-commit and group-metadata
// records.
func readOffsetsRecords(t *testing.T, ctx context.Context, cl *kgo.Client, partition int32) []offsetsRecord {
	t.Helper()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, assignment.OffsetsTopic)
	if err != nil {
		t.Fatalf("end offsets of %s: %v", assignment.OffsetsTopic, err)
	}
	end, _ := ends.Lookup(assignment.OffsetsTopic, partition)
	if end.Err != nil {
		t.Fatalf("end offset of %s/%d: %v", assignment.OffsetsTopic, partition, end.Err)
	}
	if end.Offset == 0 {
		return nil
	}
	seeds := cl.OptValue(kgo.SeedBrokers).([]string)
	rd, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		assignment.OffsetsTopic: {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []offsetsRecord
	for next := int64(0); next < end.Offset; {
		fs := rd.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading %s/%d: %v", assignment.OffsetsTopic, partition, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if len(r.Key) >= 2 && r.Key[0] == 0 && r.Key[1] == 2 {
				out = append(out, readGroupMetadataRecord(t, r))
				return
			}
			var k kmsg.OffsetCommitKey
			if err := k.ReadFrom(r.Key); err != nil || k.Version > 1 {
				t.Fatalf("record %d: key %x is no offset commit key (version %d): %v", r.Offset, r.Key, k.Version, err)
			}
			rec := offsetsRecord{Group: k.Group, Topic: k.Topic, Partition: k.Partition, Tombstone: r.Value == nil}
			if r.Value != nil {
				var v kmsg.OffsetCommitValue
				if err := v.ReadFrom(r.Value); err != nil || v.Version != 3 {
					t.Fatalf("record %d: value %x (version %d): %v", r.Offset, r.Value, v.Version, err)
				}
				rec.Offset, rec.LeaderEpoch, rec.Metadata = v.Offset, v.LeaderEpoch, v.Metadata
			}
			out = append(out, rec)
		})
	}
	return out
}

// readGroupMetadataRecord decodes a GroupMetadata record (key version 2):
// Kafka 4 writes value version 3, kaas version 1 (what Burrow 1.2.1 reads).
func readGroupMetadataRecord(t *testing.T, r *kgo.Record) offsetsRecord {
	t.Helper()
	var k kmsg.GroupMetadataKey
	if err := k.ReadFrom(r.Key); err != nil {
		t.Fatalf("record %d: group metadata key %x: %v", r.Offset, r.Key, err)
	}
	rec := offsetsRecord{Group: k.Group, IsGroup: true, Tombstone: r.Value == nil}
	if r.Value != nil {
		v := new(kmsg.GroupMetadataValue)
		if err := v.ReadFrom(r.Value); err != nil || v.Version != 1 {
			t.Fatalf("record %d: group metadata value %x (version %d): %v", r.Offset, r.Value, v.Version, err)
		}
		rec.GroupMetadata = v
	}
	return rec
}

// latestGroupMetadata is group's last GroupMetadata record, and whether
// there is one.
func latestGroupMetadata(recs []offsetsRecord, group string) (offsetsRecord, bool) {
	for i := len(recs) - 1; i >= 0; i-- {
		if r := recs[i]; r.IsGroup && r.Group == group {
			return r, true
		}
	}
	return offsetsRecord{}, false
}

// latestOffsets is what compaction keeps of the offset records: the last
// per key, a tombstone dropping it.
func latestOffsets(recs []offsetsRecord) []string {
	last := map[string]offsetsRecord{}
	for _, r := range recs {
		if r.IsGroup {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d", r.Group, r.Topic, r.Partition)
		if r.Tombstone {
			delete(last, key)
			continue
		}
		last[key] = r
	}
	var out []string
	for _, r := range last {
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

// TestConsumerOffsetsRecords: a group's commits, offset deletions and its
// deletion reach its partition of __consumer_offsets (the one Kafka would
// store it in) as Kafka's records, in memory and with --data-dir (where
// they outlive a restart).
func TestConsumerOffsetsRecords(t *testing.T) {
	for _, mode := range []string{"memory", "data-dir"} {
		t.Run(mode, func(t *testing.T) {
			var args []string
			if mode == "data-dir" {
				args = []string{"--data-dir", t.TempDir()}
			}
			_, addr, stop, err := restartableBroker(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 60*time.Second)
			cl := newClient(t, addr)
			adm := kadm.NewClient(cl)
			createTopic(t, addr, "co-orders", 2, nil)
			const group = "co-group"
			p := int32(assignment.SlotFor(group, assignment.GroupSlotCount))
			commit := func(part int32, at int64, meta string) {
				t.Helper()
				o := kadm.Offsets{}
				o.Add(kadm.Offset{Topic: "co-orders", Partition: part, At: at, LeaderEpoch: -1, Metadata: meta})
				if r, err := adm.CommitOffsets(ctx, group, o); err != nil || r.Error() != nil {
					t.Fatalf("commit: %v %v", err, r.Error())
				}
			}
			commit(0, 5, "first")
			commit(1, 7, "")
			commit(0, 9, "second")
			want := func(what string, latest ...string) []offsetsRecord {
				t.Helper()
				var recs []offsetsRecord
				waitUntil(t, 20*time.Second, what, func() bool {
					recs = readOffsetsRecords(t, ctx, cl, p)
					return slices.Equal(latestOffsets(recs), latest)
				})
				return recs
			}
			recs := want("the commits in __consumer_offsets", "co-group/co-orders/0=9", "co-group/co-orders/1=7")
			if last := recs[len(recs)-1]; last.Partition == 0 && last.Metadata != "second" {
				t.Fatalf("metadata of the last commit: %+v", last)
			}

			if mode == "data-dir" {
				stop()
				_, addr, _, err = restartableBroker(t, args...)
				if err != nil {
					t.Fatal(err)
				}
				cl = newClient(t, addr)
				adm = kadm.NewClient(cl)
				want("the records after a restart", "co-group/co-orders/0=9", "co-group/co-orders/1=7")
			}

			// OffsetDelete: a tombstone for the partition.
			del := kadm.TopicsSet{}
			del.Add("co-orders", 1)
			if r, err := adm.DeleteOffsets(ctx, group, del); err != nil || r.Error() != nil {
				t.Fatalf("delete offsets: %v %v", err, r.Error())
			}
			recs = want("the deleted offset's tombstone", "co-group/co-orders/0=9")
			if last := recs[len(recs)-1]; !last.Tombstone || last.Partition != 1 {
				t.Fatalf("last record %v, want partition 1's tombstone", last)
			}
			// DeleteGroups: a tombstone for every offset left.
			if r, err := adm.DeleteGroup(ctx, group); err != nil || r.Err != nil {
				t.Fatalf("delete group: %v %v", err, r.Err)
			}
			want("every offset tombstoned with the group")
		})
	}
}

// TestConsumerOffsetsTombstonesAfterRestart: a group deleted and an offset
// deleted while the coordinator cannot write __consumer_offsets (every
// fsync of the partitions' storage fails, --debug-chaos, until the broker
// stops) are tombstoned there by the coordinator of the next start on the
// same --data-dir: the deleted group's offsets and GroupMetadata record,
// the deleted offset; the other offsets stay.
func TestConsumerOffsetsTombstonesAfterRestart(t *testing.T) {
	dir, httpAddr := t.TempDir(), freeAddr(t)
	_, addr, stop, err := restartableBroker(t, "--data-dir", dir, "--debug-chaos", "--http-addr", httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 90*time.Second)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	createTopic(t, addr, "tb-orders", 2, nil)
	const gone, kept = "tb-gone", "tb-kept"
	for _, g := range []string{gone, kept} {
		o := kadm.Offsets{}
		o.Add(kadm.Offset{Topic: "tb-orders", Partition: 0, At: 5, LeaderEpoch: -1})
		o.Add(kadm.Offset{Topic: "tb-orders", Partition: 1, At: 6, LeaderEpoch: -1})
		if r, err := adm.CommitOffsets(ctx, g, o); err != nil || r.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, r.Error())
		}
	}
	// gone also has a GroupMetadata record: a consumer's generation.
	consumer := newGroupConsumer(t, addr, gone, "tb-client", "tb-orders")
	parts := map[string]int32{gone: int32(assignment.SlotFor(gone, assignment.GroupSlotCount)), kept: int32(assignment.SlotFor(kept, assignment.GroupSlotCount))}
	// latest is what the partitions of both groups hold: their live
	// offsets and whether gone has a live GroupMetadata record.
	latest := func() ([]string, bool) {
		var out []string
		meta := false
		for _, p := range slices.Compact(slices.Sorted(maps.Values(parts))) {
			recs := readOffsetsRecords(t, ctx, cl, p)
			for _, r := range latestOffsets(recs) {
				if strings.HasPrefix(r, gone+"/") || strings.HasPrefix(r, kept+"/") {
					out = append(out, r)
				}
			}
			if r, ok := latestGroupMetadata(recs, gone); ok && !r.Tombstone {
				meta = true
			}
		}
		slices.Sort(out)
		return out, meta
	}
	all := []string{"tb-gone/tb-orders/0=5", "tb-gone/tb-orders/1=6", "tb-kept/tb-orders/0=5", "tb-kept/tb-orders/1=6"}
	waitUntil(t, 30*time.Second, "both groups' records", func() bool {
		got, meta := latest()
		return slices.Equal(got, all) && meta
	})
	consumer.Close()
	waitUntil(t, 30*time.Second, "the consumer's group Empty", func() bool {
		described, err := adm.DescribeGroups(ctx, gone)
		return err == nil && described[gone].State == "Empty"
	})

	if _, err := chaosPost(httpAddr, "/debug/chaos/fsync?fail=1"); err != nil {
		t.Fatal(err)
	}
	del := kadm.TopicsSet{}
	del.Add("tb-orders", 1)
	if r, err := adm.DeleteOffsets(ctx, kept, del); err != nil || r.Error() != nil {
		t.Fatalf("delete offsets: %v %v", err, r.Error())
	}
	if r, err := adm.DeleteGroup(ctx, gone); err != nil || r.Err != nil {
		t.Fatalf("delete group: %v %v", err, r.Err)
	}
	stop() // the tombstones' writes still failing

	_, addr, stop, err = restartableBroker(t, "--data-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	cl = newClient(t, addr)
	waitUntil(t, 30*time.Second, "the partitions open after the restart", func() bool {
		ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, assignment.OffsetsTopic)
		if err != nil {
			return false
		}
		for _, p := range parts {
			if end, _ := ends.Lookup(assignment.OffsetsTopic, p); end.Err != nil {
				return false
			}
		}
		return true
	})
	want := []string{"tb-kept/tb-orders/0=5"}
	seen := ""
	took := waitUntil(t, 30*time.Second, "the deletions tombstoned after the restart", func() bool {
		got, meta := latest()
		if slices.Equal(got, want) && !meta {
			return true
		}
		if s := fmt.Sprintf("live: %v, %s's GroupMetadata record live: %v", got, gone, meta); s != seen {
			seen = s
			t.Log(s)
		}
		return false
	})
	t.Logf("the deleted group's and offset's tombstones were in __consumer_offsets %v after the restart", took)
}

// TestConsumerOffsetsGroupMetadata: a classic group's GroupMetadata record
// in its partition of __consumer_offsets, as Kafka's coordinator writes it:
// once a franz-go consumer's generation is assigned, the member with its
// client id, client host, protocol and assignment; after it leaves, the
// Empty group, which a new member's join takes to the next generation;
// after DeleteGroups, a tombstone. With --data-dir, across a restart: a
// coordinator that loads the Stable group finds its record in the topic and
// does not write it again; one that loads the Empty group keeps its
// generation (DescribeGroups answers the Empty group, its record stays,
// and the next join takes the generation after it).
func TestConsumerOffsetsGroupMetadata(t *testing.T) {
	for _, mode := range []string{"memory", "data-dir"} {
		t.Run(mode, func(t *testing.T) {
			var args []string
			fixed := ""
			if mode == "data-dir" {
				// One address across the restart, for the consumer (the
				// last --kafka-addr wins).
				fixed = freeAddr(t)
				args = []string{"--data-dir", t.TempDir(), "--kafka-addr", fixed}
			}
			_, addr, stop, err := restartableBroker(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			addr = cmp.Or(fixed, addr)
			ctx := ctxT(t, 90*time.Second)
			cl := newClient(t, addr)
			createTopic(t, addr, "gm-orders", 2, nil)
			const group, clientID = "gm-group", "gm-client"
			p := int32(assignment.SlotFor(group, assignment.GroupSlotCount))

			consumer := newGroupConsumer(t, addr, group, clientID, "gm-orders")
			// record waits until group's last GroupMetadata record
			// passes ok, and returns it.
			record := func(what string, ok func(offsetsRecord) bool) (offsetsRecord, []offsetsRecord) {
				t.Helper()
				var last offsetsRecord
				var recs []offsetsRecord
				waitUntil(t, 30*time.Second, what, func() bool {
					recs = readOffsetsRecords(t, ctx, cl, p)
					r, found := latestGroupMetadata(recs, group)
					last = r
					return found && ok(r)
				})
				return last, recs
			}
			stable, _ := record("the group's assigned generation", func(r offsetsRecord) bool {
				return !r.Tombstone && len(r.GroupMetadata.Members) == 1
			})
			v := stable.GroupMetadata
			m := v.Members[0]
			if v.ProtocolType != "consumer" || v.Generation < 1 || v.Protocol == nil || *v.Protocol != "cooperative-sticky" || v.Leader == nil || *v.Leader != m.MemberID {
				t.Fatalf("group metadata: protocol type %q generation %d protocol %v leader %v (member %s)", v.ProtocolType, v.Generation, v.Protocol, v.Leader, m.MemberID)
			}
			if m.ClientID != clientID || m.ClientHost != "/127.0.0.1" || m.SessionTimeoutMillis != 45000 || m.RebalanceTimeoutMillis != 60000 {
				t.Fatalf("member %s: client %q host %q session %d rebalance %d", m.MemberID, m.ClientID, m.ClientHost, m.SessionTimeoutMillis, m.RebalanceTimeoutMillis)
			}
			var sub kmsg.ConsumerMemberMetadata
			if err := sub.ReadFrom(m.Subscription); err != nil || !slices.Equal(sub.Topics, []string{"gm-orders"}) {
				t.Fatalf("subscription %x: %+v %v", m.Subscription, sub, err)
			}
			var asg kmsg.ConsumerMemberAssignment
			if err := asg.ReadFrom(m.Assignment); err != nil || len(asg.Topics) != 1 || asg.Topics[0].Topic != "gm-orders" || !slices.Equal(slices.Sorted(slices.Values(asg.Topics[0].Partitions)), []int32{0, 1}) {
				t.Fatalf("assignment %x: %+v %v", m.Assignment, asg, err)
			}
			described, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
			if err != nil {
				t.Fatal(err)
			}
			if d := described[group]; len(d.Members) != 1 || d.Members[0].MemberID != m.MemberID || d.Members[0].ClientHost != "/127.0.0.1" {
				t.Fatalf("DescribeGroups: %+v, want member %s on /127.0.0.1 (Kafka's form of a client host)", d.Members, m.MemberID)
			}

			restart := func() {
				t.Helper()
				stop()
				_, addr, stop, err = restartableBroker(t, args...)
				if err != nil {
					t.Fatal(err)
				}
				addr = cmp.Or(fixed, addr)
				cl = newClient(t, addr)
			}
			before := 0
			if mode == "data-dir" {
				// The consumer stays in the group across the restart.
				_, recs := record("the record before the restart", func(offsetsRecord) bool { return true })
				before = len(recs)
				restart()
			}

			consumer.Close() // LeaveGroup
			empty, recs := record("the Empty group after the member left", func(r offsetsRecord) bool {
				return !r.Tombstone && len(r.GroupMetadata.Members) == 0
			})
			if e := empty.GroupMetadata; e.ProtocolType != "consumer" || e.Generation <= v.Generation || e.Protocol != nil || e.Leader != nil {
				t.Fatalf("Empty group: protocol type %q generation %d (was %d) protocol %v leader %v", e.ProtocolType, e.Generation, v.Generation, e.Protocol, e.Leader)
			}
			if mode == "data-dir" {
				// The coordinator that loaded the Stable group found its
				// record in the topic: the Empty one is its only write.
				for _, r := range recs[before:] {
					if r.IsGroup && r.Group == group && (r.Tombstone || len(r.GroupMetadata.Members) > 0) {
						t.Fatalf("after the restart the coordinator wrote %v, want only the Empty group's record", r)
					}
				}
				restart()
			}
			// Loaded again after a restart (or still there): the Empty
			// group, its record kept.
			waitUntil(t, 30*time.Second, "DescribeGroups of the Empty group", func() bool {
				described, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
				d := described[group]
				return err == nil && d.Err == nil && d.State == "Empty" && d.ProtocolType == "consumer"
			})
			next := newGroupConsumer(t, addr, group, clientID, "gm-orders")
			rejoined, recs := record("the next generation", func(r offsetsRecord) bool {
				return !r.Tombstone && len(r.GroupMetadata.Members) == 1
			})
			if g := rejoined.GroupMetadata.Generation; g != empty.GroupMetadata.Generation+1 {
				t.Fatalf("a new member's join after the Empty group's generation %d: generation %d, want the next", empty.GroupMetadata.Generation, g)
			}
			for _, r := range recs {
				if r.IsGroup && r.Group == group && r.Tombstone {
					t.Fatalf("the Empty group's record was tombstoned: %v", recs)
				}
			}
			next.Close()
			record("the Empty group again", func(r offsetsRecord) bool { return !r.Tombstone && len(r.GroupMetadata.Members) == 0 })

			if r, err := kadm.NewClient(cl).DeleteGroup(ctx, group); err != nil || r.Err != nil {
				t.Fatalf("delete group: %v %v", err, r.Err)
			}
			record("the group's tombstone", func(r offsetsRecord) bool { return r.Tombstone })
		})
	}
}

// newGroupConsumer is a franz-go consumer of topic in a classic group
// (its default balancer, cooperative-sticky), polling until the test ends
// or it is closed; it commits nothing.
func newGroupConsumer(t *testing.T, addr, group, clientID, topic string) *kgo.Client {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if fs := c.PollFetches(ctx); fs.IsClientClosed() {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		c.Close()
		<-done
	})
	return c
}
