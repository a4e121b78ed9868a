package main

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/assignment"
)

// offsetsRecord is one record of __consumer_offsets decoded as Kafka's
// OffsetsMessageFormatter decodes it: an offset commit (key version 0 or
// 1) with its value, or its tombstone.
type offsetsRecord struct {
	Group, Topic string
	Partition    int32
	Tombstone    bool
	Offset       int64
	LeaderEpoch  int32
	Metadata     string
}

func (r offsetsRecord) String() string {
	if r.Tombstone {
		return fmt.Sprintf("%s/%s/%d=tombstone", r.Group, r.Topic, r.Partition)
	}
	return fmt.Sprintf("%s/%s/%d=%d", r.Group, r.Topic, r.Partition, r.Offset)
}

// readOffsetsRecords reads partition of __consumer_offsets from its start
// to its end offset and decodes its offset-commit records.
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

// latestOffsets is what compaction keeps of records: the last per key, a
// tombstone dropping it.
func latestOffsets(recs []offsetsRecord) []string {
	last := map[string]offsetsRecord{}
	for _, r := range recs {
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
