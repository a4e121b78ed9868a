package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cleaningInFlight reports whether a cleaning pass is writing a cleaned
// segment somewhere under dir (its .cleaned.tmp file exists).
func cleaningInFlight(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".cleaned.tmp") {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// createPinnedCompacted creates topic with one partition placed on broker
// (a manual replica assignment), compacted as soon as anything is dirty
// (delete.retention.ms=0) in segments of segmentBytes; it returns a func
// that reads the partition's leader from Metadata (-1: none yet).
func createPinnedCompacted(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, broker int32, segmentBytes int) func() int32 {
	t.Helper()
	return createPinned(t, ctx, cl, topic, broker, map[string]string{"cleanup.policy": "compact",
		"segment.bytes": fmt.Sprint(segmentBytes), "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "0"})
}

// createPinned creates topic with configs and one partition placed on
// broker (a manual replica assignment); it returns a func that reads the
// partition's leader from Metadata (-1: none yet).
func createPinned(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, broker int32, configs map[string]string) func() int32 {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{broker}
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 15000
	if resp, err := req.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, resp)
	}
	adm := kadm.NewClient(cl)
	return func() int32 {
		td, err := adm.ListTopics(ctx, topic)
		if err != nil || len(td[topic].Partitions) != 1 {
			return -1
		}
		return td[topic].Partitions[0].Leader
	}
}

// TestCompactedTopicMovesWhileCleaning: on three brokers with a slow
// cleaner (--cleaner-io-rate 128 KiB/s), a compacted partition led by
// broker 2 is moved to broker 0 (AlterPartitionAssignments) while broker
// 2's pass is writing cleaned segments, which the handoff abandons
// unfinished. The successor cleans the log
// itself, and franz-go reading from offset 0 after the move sees every
// live key's latest value, no tombstoned key's old value, offsets going up,
// in fewer records than were produced.
func TestCompactedTopicMovesWhileCleaning(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append(slices.Clone(clusterFlags), "--cleaner-interval", "100ms", "--cleaner-io-rate", "131072")...)
	c.startAll("kaas-0", "kaas-1", "kaas-2")
	ctx := ctxFor(t, 240*time.Second)
	const topic = "compacted-moving"
	cl := c.client(kgo.DefaultProduceTopic(topic))
	adm := kadm.NewClient(cl)

	leader := createPinnedCompacted(t, ctx, cl, topic, 2, 65536)
	waitUntil(t, 30*time.Second, "the partition led by broker 2", func() bool { return leader() == 2 })

	want := map[string]string{}
	produced := 0
	pad := strings.Repeat("x", 1000)
	for round := 0; round < 30; round++ {
		var recs []*kgo.Record
		for k := 0; k < 40; k++ {
			key := fmt.Sprintf("key-%02d", k)
			r := &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("value-%02d-%03d-%s", k, round, pad))}
			if round == 29 && k%5 == 0 {
				r.Value = nil
				delete(want, key)
			} else {
				want[key] = string(r.Value)
			}
			recs = append(recs, r)
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		produced += len(recs)
	}
	// A record larger than a segment rolls the last records into a sealed
	// segment, where the cleaner reaches them.
	filler := make([]byte, 40000)
	_, _ = rand.Read(filler)
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("zz-filler"), Value: []byte(hex.EncodeToString(filler))}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	want["zz-filler"] = hex.EncodeToString(filler)
	produced++

	waitUntil(t, 120*time.Second, "broker 2's pass writing cleaned segments", func() bool { return cleaningInFlight(c.dataDir) })
	var move kadm.AlterPartitionAssignmentsReq
	move.Assign(topic, 0, []int32{0})
	if res, err := adm.AlterPartitionAssignments(ctx, move); err != nil || res.Error() != nil {
		t.Fatalf("reassign: %v %v", err, res.Error())
	}
	waitUntil(t, 60*time.Second, "the partition led by broker 0", func() bool { return leader() == 0 })
	// Broker 2's pass was still in flight: the handoff ended it unfinished.
	waitUntil(t, 30*time.Second, "broker 2 abandoning its pass", func() bool {
		for _, line := range strings.Split(c.brokers["kaas-2"].log.String(), "\n") {
			if strings.Contains(line, `"topic":"`+topic+`"`) && strings.Contains(line, "compaction pass abandoned") {
				return true
			}
		}
		return false
	})

	waitUntil(t, 180*time.Second, "broker 0 cleaning the partition", func() bool {
		h, err := c.brokers["kaas-0"].healthz()
		if err != nil {
			return false
		}
		for _, s := range h.Cleaner {
			if s.Topic == topic && s.LastCleanUnix > 0 {
				return true
			}
		}
		return false
	})
	got := readAllFrom(t, c.brokers["kaas-1"].kafka, topic)
	checkTable(t, "franz-go after the move", got, want)
	if len(got) >= produced/2 {
		t.Fatalf("read %d records of the %d produced: the successor's pass removed too little", len(got), produced)
	}
}

// TestCompactedTopicAbortMarkerAfterHandoffAndCrash: broker 1 leads a
// compacted partition holding an aborted transaction and the same
// producer's committed one, and hands it to broker 0; its release writes
// the producer snapshot, which names the aborted transaction. Broker 0
// cleans the aborted records, then the abort marker, and is killed; broker
// 1 takes the partition back and recovers from that snapshot, older than
// the cleaning. Told of the transaction, a read_committed client would
// skip the producer's committed records waiting for a marker that is gone:
// recovery drops it, and the committed records are read.
func TestCompactedTopicAbortMarkerAfterHandoffAndCrash(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append(slices.Clone(clusterFlags), "--cleaner-interval", "100ms")...)
	c.startAll("kaas-0", "kaas-1")
	ctx := ctxFor(t, 180*time.Second)
	const topic = "compacted-abort-handoff"
	cl := c.client(kgo.DefaultProduceTopic(topic))
	adm := kadm.NewClient(cl)
	leader := createPinnedCompacted(t, ctx, cl, topic, 1, 2048)
	waitUntil(t, 30*time.Second, "the partition led by broker 1", func() bool { return leader() == 1 })
	txn := c.client(kgo.TransactionalID("abort-handoff"), kgo.DefaultProduceTopic(topic))
	want := abortedAndCommitted(t, ctx, txn, topic, 10)
	txn.Close()

	var move kadm.AlterPartitionAssignmentsReq
	move.Assign(topic, 0, []int32{0})
	if res, err := adm.AlterPartitionAssignments(ctx, move); err != nil || res.Error() != nil {
		t.Fatalf("reassign: %v %v", err, res.Error())
	}
	waitUntil(t, 60*time.Second, "the partition led by broker 0", func() bool { return leader() == 0 })
	addr0, addr1 := c.brokers["kaas-0"].kafka, c.brokers["kaas-1"].kafka
	cleanAbortMarkers(t, ctx, cl, addr0, topic, want)
	checkCommittedRead(t, "cleaned on broker 0", addr0, topic, want)

	c.brokers["kaas-0"].kill()
	waitUntil(t, 60*time.Second, "the partition led by broker 1 again", func() bool { return leader() == 1 })
	checkCommittedRead(t, "recovered on broker 1", addr1, topic, want)
}
