package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/brokerconfig"
)

// logDirCordoned asks broker id for its log dir (DescribeLogDirs v5) and
// returns the dir and its IsCordoned.
func logDirCordoned(ctx context.Context, cl *kgo.Client, id int32) (string, bool, error) {
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 5
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		return "", false, err
	}
	if resp.ErrorCode != 0 || len(resp.Dirs) != 1 {
		return "", false, fmt.Errorf("DescribeLogDirs of broker %d: %+v", id, resp)
	}
	return resp.Dirs[0].Dir, resp.Dirs[0].IsCordoned, nil
}

// setCordon sets (value != "") or deletes cordoned.log.dirs of broker id.
func setCordon(ctx context.Context, adm *kadm.Client, id int32, value string) error {
	ac := kadm.AlterConfig{Name: brokerconfig.CordonedLogDirs, Value: &value}
	if value == "" {
		ac = kadm.AlterConfig{Op: kadm.DeleteConfig, Name: brokerconfig.CordonedLogDirs}
	}
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{ac}, id)
	if err != nil {
		return err
	}
	if res[0].Err != nil {
		return fmt.Errorf("%w: %s", res[0].Err, res[0].ErrMessage)
	}
	return nil
}

// TestCordonedLogDir: KIP-1066 on one broker. cordoned.log.dirs must name
// the broker's log dir or "*"; once set, DescribeLogDirs reports the dir
// cordoned, CreateTopics and CreatePartitions are INVALID_REPLICATION_FACTOR
// (no broker may take a new partition) unless they place partitions by
// hand, and the partitions already there keep serving; deleting it
// uncordons.
func TestCordonedLogDir(t *testing.T) {
	dir := t.TempDir()
	_, addr := testBroker(t, "--data-dir", dir)
	cl := newClient(t, addr)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "before"); err != nil {
		t.Fatal(err)
	}

	err := setCordon(ctx, adm, 0, "/not/the/log/dir")
	if !errors.Is(err, kerr.InvalidRequest) || !strings.Contains(err.Error(), "is not a log dir of the broker") {
		t.Fatalf("cordoned.log.dirs naming another dir: %v", err)
	}
	if err := setCordon(ctx, adm, 0, dir); err != nil {
		t.Fatalf("cordon the log dir: %v", err)
	}
	if got, cordoned, err := logDirCordoned(ctx, cl, 0); err != nil || got != dir || !cordoned {
		t.Fatalf("DescribeLogDirs after the cordon: %q cordoned=%v %v", got, cordoned, err)
	}
	res, err := adm.CreateTopic(ctx, 1, 1, nil, "after")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.InvalidReplicationFactor) || !strings.Contains(res.ErrMessage, "cordoned") {
		t.Fatalf("CreateTopics with every broker cordoned: %v %q", err, res.ErrMessage)
	}
	cp, err := adm.CreatePartitions(ctx, 1, "before")
	if err == nil {
		err = cp["before"].Err
	}
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Fatalf("CreatePartitions with every broker cordoned: %v", err)
	}
	manual := kmsg.NewPtrCreateTopicsRequest()
	mt := kmsg.NewCreateTopicsRequestTopic()
	mt.Topic, mt.NumPartitions, mt.ReplicationFactor = "by-hand", -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{0}
	mt.ReplicaAssignment = append(mt.ReplicaAssignment, ra)
	manual.Topics = append(manual.Topics, mt)
	if resp, err := manual.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("CreateTopics with a manual assignment onto the cordoned broker: %v %+v", err, resp)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "before", Value: []byte("still served")}).FirstErr(); err != nil {
		t.Fatalf("produce to a partition of the cordoned broker: %v", err)
	}

	if err := setCordon(ctx, adm, 0, ""); err != nil {
		t.Fatalf("uncordon: %v", err)
	}
	if _, cordoned, err := logDirCordoned(ctx, cl, 0); err != nil || cordoned {
		t.Fatalf("DescribeLogDirs after the uncordon: cordoned=%v %v", cordoned, err)
	}
	if res, err := adm.CreateTopic(ctx, 1, 1, nil, "after"); err != nil || res.Err != nil {
		t.Fatalf("CreateTopics after the uncordon: %v %v", err, res.Err)
	}
}

// TestCordonedBrokerCluster: KIP-1066 in cluster mode. A broker cordoned
// with kafka-configs' call (IncrementalAlterConfigs of its resource) keeps
// the partition it leads and takes none of a killed broker's, nor of a
// new topic; a reassignment onto it is INELIGIBLE_REPLICA. The killed
// broker restarted, the controller is killed: the new controller moves its
// partitions at its election, before the cordoned broker has pinged it, and
// still gives it none (it reads the cordon from the dynamic configs).
// Uncordoned, the cordoned broker is evened out again.
func TestCordonedBrokerCluster(t *testing.T) {
	c := threeBrokers(t, nil, "c1") // two partitions led by each broker
	_, ctrl, _ := c.ledBy()
	cl := c.client()
	adm := kadm.NewClient(cl)
	ctx := ctxFor(t, 3*time.Minute)
	// The cordoned broker and the one killed are not the controller.
	others := c.namesBut(ctrl)
	cordoned, killed := others[0], others[1]
	cid, _ := strconv.Atoi(cordoned[len("kaas-"):])
	if _, err := adm.ListBrokers(ctx); err != nil { // the client learns every broker
		t.Fatal(err)
	}
	if err := setCordon(ctx, adm, int32(cid), "*"); err != nil {
		t.Fatalf("cordon %s: %v", cordoned, err)
	}
	waitUntil(t, 30*time.Second, cordoned+" reports its log dir cordoned", func() bool {
		_, on, err := logDirCordoned(ctx, cl, int32(cid))
		return err == nil && on
	})
	if h, err := c.brokers[cordoned].healthz(); err != nil || !h.Cordoned {
		t.Fatalf("/healthz of the cordoned %s: %+v %v", cordoned, h, err)
	}

	c.brokers[killed].kill()
	waitUntil(t, 60*time.Second, "the killed broker's partitions led by the controller", func() bool {
		led, _, _ := c.ledBy()
		return led[ctrl] == 4 && led[cordoned] == 2
	})
	if res, err := adm.CreateTopic(ctx, 4, 1, nil, "c2"); err != nil || res.Err != nil {
		t.Fatalf("create c2: %v %v", err, res.Err)
	}
	waitUntil(t, 60*time.Second, "c2 led by the controller alone", func() bool {
		led, _, _ := c.ledBy()
		return led[ctrl] == 8 && led[cordoned] == 2
	})
	reassign := kadm.AlterPartitionAssignmentsReq{}
	reassign.Assign("c2", 0, []int32{int32(cid)})
	ar, err := adm.AlterPartitionAssignments(ctx, reassign)
	if err != nil {
		t.Fatal(err)
	}
	if p := ar["c2"][0]; !errors.Is(p.Err, kerr.IneligibleReplica) {
		t.Fatalf("reassignment onto the cordoned %s: %+v", cordoned, p)
	}

	c.start(killed)
	waitUntil(t, 60*time.Second, "the restarted broker given half of the uncordoned share", func() bool {
		led, _, _ := c.ledBy()
		return led[ctrl] == 4 && led[killed] == 4 && led[cordoned] == 2
	})
	c.brokers[ctrl].kill()
	waitUntil(t, 60*time.Second, "the killed controller's partitions led by the restarted broker", func() bool {
		led, _, _ := c.ledBy()
		return led[killed] == 8
	})
	if led, _, _ := c.ledBy(); led[cordoned] != 2 {
		t.Fatalf("after the controller's failover the cordoned %s leads %d partitions, want its 2: %v", cordoned, led[cordoned], led)
	}

	if err := setCordon(ctx, adm, int32(cid), ""); err != nil {
		t.Fatalf("uncordon %s: %v", cordoned, err)
	}
	waitUntil(t, 60*time.Second, "the uncordoned broker evened out", func() bool {
		led, _, _ := c.ledBy()
		return led[killed] == 5 && led[cordoned] == 5
	})
}
