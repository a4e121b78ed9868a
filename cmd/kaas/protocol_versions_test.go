package main

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
)

// TestProduceByTopicID: Produce v13 names topics by id (KIP-516). A known
// id is written and answered under the same id; an unknown one is
// UNKNOWN_TOPIC_ID and writes nothing.
func TestProduceByTopicID(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	createTopic(t, addr, "by-id", 1, nil)
	adm := newAdmin(t, addr)
	topics, err := adm.ListTopics(ctxT(t, 10*time.Second), "by-id")
	if err != nil || topics["by-id"].Err != nil {
		t.Fatalf("list topics: %v %v", err, topics)
	}
	id := [16]byte(topics["by-id"].ID)
	unknown := id
	unknown[0] ^= 0xff

	produce := func(topicID [16]byte, value string) kmsg.ProduceResponseTopic {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Values: [][]byte{[]byte(value)}})
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := rawRequest(t, addr, req, 13).(*kmsg.ProduceResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("produce v13 answer: %+v", resp)
		}
		return resp.Topics[0]
	}
	if rt := produce(unknown, "lost"); rt.TopicID != unknown || rt.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Errorf("unknown topic id: %+v", rt)
	}
	for i, v := range []string{"a", "b"} {
		rt := produce(id, v)
		if rt.TopicID != id || rt.Partitions[0].ErrorCode != 0 || rt.Partitions[0].BaseOffset != int64(i) {
			t.Errorf("produce %q by id: %+v", v, rt)
		}
	}
	cl := newClient(t, addr, kgo.ConsumeTopics("by-id"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 2 {
		fs := cl.PollFetches(ctxT(t, 10*time.Second))
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v (read %q)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("read %q, want [a b]", got)
	}
}

// TestApiVersionsNamesItsBroker: ApiVersions v5 (KIP-1242) may name the
// cluster and broker the client means to reach: the right ones are
// answered with the API table, another cluster or broker with
// REBOOTSTRAP_REQUIRED, and naming one without the other is
// INVALID_REQUEST. franz-go names them on every connection it opens from
// metadata, so its produce and consume across the suite pass this check.
func TestApiVersionsNamesItsBroker(t *testing.T) {
	_, addr := testBroker(t, "--cluster-id", "c-1", "--broker-id", "3")
	for _, tc := range []struct {
		name    string
		cluster *string
		node    int32
		want    int16
	}{
		{"neither", nil, -1, 0},
		{"this broker", kmsg.StringPtr("c-1"), 3, 0},
		{"another broker", kmsg.StringPtr("c-1"), 4, kerr.RebootstrapRequired.Code},
		{"another cluster", kmsg.StringPtr("c-2"), 3, kerr.RebootstrapRequired.Code},
		{"cluster only", kmsg.StringPtr("c-1"), -1, kerr.InvalidRequest.Code},
		{"node only", nil, 3, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw-test", "1.0"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		resp := rawRequest(t, addr, req, 5).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != tc.want || (tc.want == 0) != (len(resp.ApiKeys) > 0) {
			t.Errorf("%s: error %d with %d api keys, want error %d", tc.name, resp.ErrorCode, len(resp.ApiKeys), tc.want)
		}
	}
	// A franz-go client learns the cluster id and node id from Metadata
	// and names them when it dials the broker for produce.
	cl := newClient(t, addr, kgo.DefaultProduceTopic("named"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce through a named connection: %v", err)
	}
}

// TestListOffsetsWithoutTieredStorage: latest-tiered (-5, v9+) and earliest
// pending upload (-6, v11+) find no offset on a broker without tiered
// storage; a special timestamp sent at a version older than the one that
// defined it is UNSUPPORTED_VERSION, as Kafka answers.
func TestListOffsetsWithoutTieredStorage(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	createTopic(t, addr, "tiers", 1, nil)
	cl := newClient(t, addr, producesByName())
	now := time.Now().UnixMilli()
	for i := range 3 {
		if r := rawProduce(t, cl, "tiers", 0, -1, batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: now + int64(i), Values: [][]byte{[]byte("x")}})); r.ErrorCode != 0 {
			t.Fatalf("produce: %+v", r)
		}
	}
	list := func(version int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID, req.TimeoutMillis = -1, 1000
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "tiers"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return rawRequest(t, addr, req, version).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
	}
	for _, tc := range []struct {
		version int16
		ts      int64
		code    int16
		offset  int64
	}{
		{11, -1, 0, 3},
		{11, -2, 0, 0},
		{11, -4, 0, 0},
		{11, -5, 0, -1},
		{11, -6, 0, -1},
		{9, -5, 0, -1},
		{10, -6, kerr.UnsupportedVersion.Code, -1},
		{8, -5, kerr.UnsupportedVersion.Code, -1},
		{7, -4, kerr.UnsupportedVersion.Code, -1},
		{6, -3, kerr.UnsupportedVersion.Code, -1},
		{7, -3, 0, 2},
	} {
		if p := list(tc.version, tc.ts); p.ErrorCode != tc.code || p.Offset != tc.offset {
			t.Errorf("ListOffsets v%d timestamp %d: error %d offset %d, want error %d offset %d", tc.version, tc.ts, p.ErrorCode, p.Offset, tc.code, tc.offset)
		}
	}
	// Metadata v13 and DescribeLogDirs v5 answer as before, with the
	// fields they add unset: no rebootstrap asked, no log dir cordoned.
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("tiers")
	md.Topics = append(md.Topics, mt)
	if resp := rawRequest(t, addr, md, 13).(*kmsg.MetadataResponse); resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 1 {
		t.Errorf("Metadata v13: %+v", resp)
	}
	dirs := rawRequest(t, addr, kmsg.NewPtrDescribeLogDirsRequest(), 5).(*kmsg.DescribeLogDirsResponse)
	if dirs.ErrorCode != 0 || len(dirs.Dirs) != 1 || dirs.Dirs[0].IsCordoned || len(dirs.Dirs[0].Topics) == 0 {
		t.Errorf("DescribeLogDirs v5: %+v", dirs)
	}
}

// TestListOffsetsDuplicatePartitions: a partition named twice in one
// ListOffsets (its topic named twice) is answered once, INVALID_REQUEST,
// as Kafka answers, while the other partitions are answered. kafka-go
// sends one ListOffsets per partition because Kafka refuses duplicates.
func TestListOffsetsDuplicatePartitions(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	createTopic(t, addr, "dups", 2, nil)
	cl := newClient(t, addr, producesByName())
	if r := rawProduce(t, cl, "dups", 1, -1, batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: time.Now().UnixMilli(), Values: [][]byte{[]byte("x"), []byte("y")}})); r.ErrorCode != 0 {
		t.Fatalf("produce: %+v", r)
	}
	list := func(version int16) []kmsg.ListOffsetsResponseTopic {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		for _, parts := range [][]int32{{0, 1}, {0}} {
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "dups"
			for _, p := range parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		return rawRequest(t, addr, req, version).(*kmsg.ListOffsetsResponse).Topics
	}
	for _, version := range []int16{11, 1} {
		topics := list(version)
		if len(topics) != 1 || topics[0].Topic != "dups" || len(topics[0].Partitions) != 2 {
			t.Errorf("v%d: answer %+v, want topic dups once, partitions 0 and 1 once each", version, topics)
			continue
		}
		p0, p1 := topics[0].Partitions[0], topics[0].Partitions[1]
		if p0.Partition != 0 || p0.ErrorCode != kerr.InvalidRequest.Code || p0.Offset != -1 {
			t.Errorf("v%d: partition 0 %+v, want INVALID_REQUEST", version, p0)
		}
		if p1.Partition != 1 || p1.ErrorCode != 0 || p1.Offset != 2 {
			t.Errorf("v%d: partition 1 %+v, want offset 2", version, p1)
		}
	}
}

// TestTxnOffsetCommitByTopicID: TxnOffsetCommit v6 names topics by id
// (KIP-1319). A known id's offset is committed with the transaction; an
// unknown id is UNKNOWN_TOPIC_ID. franz-go commits at v6 under the
// transaction protocol v2 (TestTransactionProtocols).
func TestTxnOffsetCommitByTopicID(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	createTopic(t, addr, "txn-ids", 1, nil)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 20*time.Second)
	topics, err := adm.ListTopics(ctx, "txn-ids")
	if err != nil || topics["txn-ids"].Err != nil {
		t.Fatalf("list topics: %v %v", err, topics)
	}
	id := [16]byte(topics["txn-ids"].ID)
	unknown := id
	unknown[15] ^= 0xff

	// The transaction coordinator and the group coordinator of a local-dev
	// broker are the broker itself.
	txnID := "txn-by-id"
	ipid := kmsg.NewPtrInitProducerIDRequest()
	ipid.TransactionalID, ipid.TransactionTimeoutMillis = &txnID, 60000
	ip := rawRequest(t, addr, ipid, 5).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %+v", ip)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = txnID, "by-id", ip.ProducerID, ip.ProducerEpoch
	commit.Generation = -1
	for _, tid := range [][16]byte{id, unknown} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset, rp.LeaderEpoch = 7, -1
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
	}
	resp := rawRequest(t, addr, commit, 6).(*kmsg.TxnOffsetCommitResponse)
	if len(resp.Topics) != 2 {
		t.Fatalf("TxnOffsetCommit v6: %+v", resp)
	}
	for i, want := range []int16{0, kerr.UnknownTopicID.Code} {
		rt := resp.Topics[i]
		if rt.TopicID != commit.Topics[i].TopicID || len(rt.Partitions) != 1 || rt.Partitions[0].ErrorCode != want {
			t.Errorf("topic %d: %+v, want error %d", i, rt, want)
		}
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = txnID, ip.ProducerID, ip.ProducerEpoch, true
	if er := rawRequest(t, addr, end, 5).(*kmsg.EndTxnResponse); er.ErrorCode != 0 {
		t.Fatalf("EndTxn: %+v", er)
	}
	waitUntil(t, 10*time.Second, "the committed offset visible", func() bool {
		offs, err := adm.FetchOffsets(ctx, "by-id")
		c, ok := offs.Lookup("txn-ids", 0)
		return err == nil && ok && c.At == 7
	})
}

// TestClientRebootstrapsFromAnotherCluster: a broker of another cluster
// that comes up at the address a client knows for broker 0 (as when a pod's
// address is reused) refuses the client's connection with
// REBOOTSTRAP_REQUIRED (ApiVersions v5, KIP-1242), so franz-go drops what
// it knew and starts over from its seeds instead of treating the stranger
// as the broker it had. franz-go keeps a topic's id for the topic's life, so
// the topic it was writing fails on the new cluster (UNKNOWN_TOPIC_ID, as
// for a topic deleted and recreated), and a topic it meets there works.
func TestClientRebootstrapsFromAnotherCluster(t *testing.T) {
	_, addr, stopA := startTestBroker(t, "--cluster-id", "cluster-a")
	var rebootstraps atomic.Int32
	cl := newClient(t, addr, kgo.AllowAutoTopicCreation(), clientLog(t),
		kgo.OnRebootstrapRequired(func() ([]string, error) {
			rebootstraps.Add(1)
			return []string{addr}, nil
		}))
	if err := cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: "on-a", Value: []byte("to a")}).FirstErr(); err != nil {
		t.Fatalf("produce to cluster-a: %v", err)
	}
	stopA()
	startTestBrokerAt(t, addr, "--cluster-id", "cluster-b")
	// The leader of on-a is known, so this produce dials broker 0 at once,
	// naming cluster-a.
	_ = cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: "on-a", Value: []byte("lost")}).FirstErr()
	if rebootstraps.Load() == 0 {
		t.Fatal("the client was never told to rebootstrap: it took cluster-b's broker for cluster-a's")
	}
	if err := cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: "on-b", Value: []byte("to b")}).FirstErr(); err != nil {
		t.Fatalf("produce to cluster-b after the rebootstrap: %v", err)
	}
	meta, err := kadm.NewClient(cl).Metadata(ctxT(t, 10*time.Second), "on-b")
	if err != nil || meta.Cluster != "cluster-b" {
		t.Fatalf("metadata after the rebootstrap: cluster %q, err %v", meta.Cluster, err)
	}
	rd := newClient(t, addr, kgo.ConsumeTopics("on-b"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := rd.PollFetches(ctxT(t, 10*time.Second))
	if err := fs.Err0(); err != nil || fs.NumRecords() != 1 || string(fs.Records()[0].Value) != "to b" {
		t.Fatalf("cluster-b holds %d records of on-b (err %v), want only %q", fs.NumRecords(), err, "to b")
	}
}
