package main

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// shareStart is the share-partition start offset DescribeShareGroupOffsets
// reports for topic's partition 0 (-1: no state). While the partition is
// still opening (a broker just started) its entry carries the lag
// lookup's NOT_LEADER_OR_FOLLOWER: it asks again.
func shareStart(t *testing.T, adm *kadm.Client, group, topic string) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		offs, err := adm.DescribeShareGroupOffsets(ctxT(t, 10*time.Second), group)
		if err != nil {
			t.Fatalf("describe share group offsets: %v", err)
		}
		o, ok := offs[group].Offsets[topic][0]
		if !ok {
			return -1
		}
		opening := errors.Is(o.Err, kerr.NotLeaderForPartition) || errors.Is(o.Err, kerr.LeaderNotAvailable)
		if o.Err != nil && (!opening || time.Now().After(deadline)) {
			t.Fatalf("describe share group offsets: %v", o.Err)
		}
		if o.Err == nil {
			return o.StartOffset
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitShareEmpty waits until the share group has no members.
func waitShareEmpty(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	ctx := ctxT(t, 60*time.Second)
	for {
		d, err := adm.DescribeShareGroups(ctx, group)
		if err == nil && d[group].Err == nil && len(d[group].Members) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("share group %s kept members: %v", group, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// consumeOffsets reads with a new share consumer until it got want
// records, accepting them, and returns their offsets, sorted.
func consumeOffsets(t *testing.T, addr, group, topic string, want int) []int64 {
	t.Helper()
	cl := shareConsumer(t, addr, group, topic)
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	var got []int64
	for len(got) < want {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("got offsets %v, want %d records: %v", got, want, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r.Offset) })
		cl.MarkAcks(kgo.AckAccept)
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

func offsetsFrom(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

// TestShareGroupOffsetsAdminKadm: kadm's AlterShareGroupOffsets and
// DeleteShareGroupOffsets (keys 91, 92) with Kafka's rules: an absent
// group is created empty, a group with members is NON_EMPTY_GROUP, another
// kind of group or none GROUP_ID_NOT_FOUND, an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION; the start offset set is where consumers
// start (the leader's in-memory state replaced), a deleted state starts
// again at share.auto.offset.reset, and both outlive a restart.
func TestShareGroupOffsetsAdminKadm(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--share-auto-offset-reset", "earliest"}
	_, addr, stop := startTestBroker(t, args...)
	const topic, group, n = "share-admin", "sg-admin", 10
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, n)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)

	alter := func(group, topic string, p int32, at int64) (kadm.AlterShareGroupOffsetsResponses, error) {
		var os kadm.Offsets
		os.AddOffset(topic, p, at, -1)
		return adm.AlterShareGroupOffsets(ctx, group, os)
	}
	// The group does not exist yet: Alter creates it.
	if r, err := alter(group, topic, 0, 6); err != nil || r.Error() != nil {
		t.Fatalf("alter on a new group: %v %v", err, r.Error())
	}
	if s := shareStart(t, adm, group, topic); s != 6 {
		t.Fatalf("start after alter %d, want 6", s)
	}
	if r, err := alter(group, "no-such-topic", 0, 1); err != nil || !errors.Is(r.Error(), kerr.UnknownTopicOrPartition) {
		t.Fatalf("alter of an unknown topic: %v %v", err, r.Error())
	}
	if r, err := alter(group, topic, 3, 1); err != nil || !errors.Is(r.Error(), kerr.UnknownTopicOrPartition) {
		t.Fatalf("alter of an unknown partition: %v %v", err, r.Error())
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, "sg-none", topic); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("delete on a group that does not exist: %v", err)
	}
	// A consumer group's id is not a share group's.
	cg := newClient(t, addr, kgo.ConsumerGroup("cg-admin"), kgo.ConsumeTopics(topic))
	if err := cg.CommitRecords(ctx, &kgo.Record{Topic: topic, Partition: 0, Offset: 1, LeaderEpoch: -1}); err != nil {
		t.Fatal(err)
	}
	cg.Close()
	if _, err := alter("cg-admin", topic, 0, 1); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Fatalf("alter of a consumer group: %v", err)
	}

	// Consumers start at the start offset set.
	if got := consumeOffsets(t, addr, group, topic, n-6); !slices.Equal(got, offsetsFrom(6, n)) {
		t.Fatalf("after alter to 6 consumed %v", got)
	}
	// While a member is in the group, both are refused.
	member := shareConsumer(t, addr, group, topic)
	waitShareStable(t, adm, group, 1)
	if _, err := alter(group, topic, 0, 0); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("alter of a group with a member: %v", err)
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, group, topic); !errors.Is(err, kerr.NonEmptyGroup) {
		t.Fatalf("delete of a group with a member: %v", err)
	}
	member.Close()
	waitShareEmpty(t, adm, group)

	// Moving the start back makes the accepted records available again:
	// the partition leader's in-memory state is replaced.
	if r, err := alter(group, topic, 0, 2); err != nil || r.Error() != nil {
		t.Fatalf("alter to 2: %v %v", err, r.Error())
	}
	if got := consumeOffsets(t, addr, group, topic, n-2); !slices.Equal(got, offsetsFrom(2, n)) {
		t.Fatalf("after alter to 2 consumed %v", got)
	}
	waitShareEmpty(t, adm, group)

	// Delete: no state; the next consumer starts at the reset position
	// (earliest).
	if r, err := adm.DeleteShareGroupOffsets(ctx, group, topic, "no-such-topic"); err != nil ||
		r["no-such-topic"] == nil || !errors.Is(r["no-such-topic"], kerr.UnknownTopicOrPartition) || r[topic] != nil {
		t.Fatalf("delete: %v %v", err, r)
	}
	if s := shareStart(t, adm, group, topic); s != -1 {
		t.Fatalf("start after delete %d, want none", s)
	}
	if got := consumeOffsets(t, addr, group, topic, n); !slices.Equal(got, offsetsFrom(0, n)) {
		t.Fatalf("after delete consumed %v", got)
	}
	waitShareEmpty(t, adm, group)

	// An altered start is on the volume: it outlives a restart, and so
	// does the empty share group, with its group epoch (Kafka keeps a
	// share group until DeleteGroups).
	if r, err := alter(group, topic, 0, 7); err != nil || r.Error() != nil {
		t.Fatalf("alter to 7: %v %v", err, r.Error())
	}
	before := describeShare(t, adm, group)
	stop()
	_, addr2, stop2 := startTestBroker(t, args...)
	adm2 := newAdmin(t, addr2)
	if s := shareStart(t, adm2, group, topic); s != 7 {
		t.Fatalf("start after a restart %d, want 7", s)
	}
	if l := listedGroup(t, adm2, group); l.GroupType != "share" || l.State != "Empty" || l.ProtocolType != "share" {
		t.Fatalf("after a restart the empty share group is listed as %+v", l)
	}
	if d := describeShare(t, adm2, group); d.GroupState != "Empty" || d.GroupEpoch != before.GroupEpoch {
		t.Fatalf("after a restart: state %s epoch %d, want Empty at epoch %d", d.GroupState, d.GroupEpoch, before.GroupEpoch)
	}
	if got := consumeOffsets(t, addr2, group, topic, n-7); !slices.Equal(got, offsetsFrom(7, n)) {
		t.Fatalf("after the restart consumed %v", got)
	}
	waitShareEmpty(t, adm2, group)

	// DeleteGroups: refused while a member is in the group; then the
	// group goes, its share-partition state with it, so a share group of
	// the same id starts again at share.auto.offset.reset, even after a
	// restart.
	member = shareConsumer(t, addr2, group, topic)
	waitShareStable(t, adm2, group, 1)
	if r, err := adm2.DeleteGroups(ctxT(t, 10*time.Second), group); err != nil || !errors.Is(r[group].Err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a share group with a member: %v %v", err, r[group].Err)
	}
	if s := shareStart(t, adm2, group, topic); s != n {
		t.Fatalf("a refused delete changed the start to %d, want %d", s, n)
	}
	member.Close()
	waitShareEmpty(t, adm2, group)
	// The group's configs are the admin's: they outlive the group, as
	// Kafka's GROUP config resource does.
	groupConfigs := []string{"configs", "--bootstrap-server", addr2, "--entity-type", "groups", "--entity-name", group}
	mustTool(t, append(groupConfigs, "--alter", "--add-config", "share.record.lock.duration.ms=20000")...)
	if r, err := adm2.DeleteGroups(ctxT(t, 10*time.Second), group); err != nil || r[group].Err != nil {
		t.Fatalf("deleting the empty share group: %v %v", err, r[group].Err)
	}
	if out := mustTool(t, append(groupConfigs, "--describe")...); !strings.Contains(out, "share.record.lock.duration.ms=20000") {
		t.Fatalf("the group's configs after the group was deleted: %q", out)
	}
	if s := shareStart(t, adm2, group, topic); s != -1 {
		t.Fatalf("start after the group was deleted %d, want none", s)
	}
	if l := listedGroup(t, adm2, group); l.Group != "" {
		t.Fatalf("deleted group still listed: %+v", l)
	}
	stop2()
	_, addr3, _ := startTestBroker(t, args...)
	adm3 := newAdmin(t, addr3)
	if l := listedGroup(t, adm3, group); l.Group != "" {
		t.Fatalf("deleted group listed after a restart: %+v", l)
	}
	if got := consumeOffsets(t, addr3, group, topic, n); !slices.Equal(got, offsetsFrom(0, n)) {
		t.Fatalf("a share group created again after the delete consumed %v", got)
	}
}

// describeShare describes one share group, failing the test on an error.
func describeShare(t *testing.T, adm *kadm.Client, group string) kadm.DescribedShareGroup {
	t.Helper()
	d, err := adm.DescribeShareGroups(ctxT(t, 10*time.Second), group)
	if err != nil || d[group].Err != nil {
		t.Fatalf("describe share group %s: %v %v", group, err, d[group].Err)
	}
	return d[group]
}

// listedGroup is group's ListGroups row (zero when it is not listed).
func listedGroup(t *testing.T, adm *kadm.Client, group string) kadm.ListedGroup {
	t.Helper()
	l, err := adm.ListGroups(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("list groups: %v", err)
	}
	return l[group]
}

// TestShareGroupSessionAfterAlterKeepsAcquisitions: the partition leader
// records the admin mark it loaded a share-partition with, so a new share
// session after an AlterShareGroupOffsets does not take the state for one
// an admin changed since: the records a member holds stay its own, not
// released to the next member.
func TestShareGroupSessionAfterAlterKeepsAcquisitions(t *testing.T) {
	dir := t.TempDir()
	_, addr, _ := startTestBroker(t, "--data-dir", dir, "--share-auto-offset-reset", "earliest")
	const topic, group, n = "share-hold", "sg-hold", 10
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, n)
	adm := newAdmin(t, addr)
	var os kadm.Offsets
	os.AddOffset(topic, 0, 0, -1)
	if r, err := adm.AlterShareGroupOffsets(ctxT(t, 10*time.Second), group, os); err != nil || r.Error() != nil {
		t.Fatalf("alter: %v %v", err, r.Error())
	}

	holder := shareConsumer(t, addr, group, topic)
	defer holder.Close()
	held := map[int64]bool{}
	ctx := ctxT(t, 30*time.Second)
	for len(held) == 0 {
		holder.PollRecords(ctx, n).EachRecord(func(r *kgo.Record) { held[r.Offset] = true })
		if ctx.Err() != nil {
			t.Fatal("the first member got no records")
		}
	}
	// A second member opens its share session: the share-partition's
	// state on the leader is the same one, with the first member's
	// acquisitions (locked for 30 s).
	next := shareConsumer(t, addr, group, topic)
	defer next.Close()
	waitShareStable(t, adm, group, 2)
	window := ctxT(t, 3*time.Second)
	for window.Err() == nil {
		next.PollRecords(window, n).EachRecord(func(r *kgo.Record) {
			if held[r.Offset] {
				t.Errorf("offset %d delivered to the second member while the first holds it", r.Offset)
			}
		})
	}
	holder.MarkAcks(kgo.AckAccept)
	if err := holder.FlushAcks(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("the first member's acknowledgements: %v", err)
	}
}
