package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAcksZeroProducerFollowsMove: librdkafka's acks=0 producer (kcat,
// fed one record every 2 ms) writes to a partition that moves to another
// broker. The old leader closes the connection on the first Produce it can
// no longer take, as Kafka's does; librdkafka, which reads no answers,
// refreshes its metadata when a connection it used goes down and writes on
// to the new leader, long before its metadata would age out (10 minutes
// here). Records in flight at the move may be lost (acks=0 promises
// nothing); every record of the last 100 sent is stored, and no record
// twice or out of order.
func TestAcksZeroProducerFollowsMove(t *testing.T) {
	kcat := requireTool(t, "kcat")
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	c.startAll("kaas-0", "kaas-1")
	ctx := ctxFor(t, 120*time.Second)
	const topic = "acks0-moving"
	cl := c.client()
	adm := kadm.NewClient(cl)
	leader := createPinned(t, ctx, cl, topic, 1, nil)
	waitUntil(t, 30*time.Second, "the partition led by broker 1", func() bool { return leader() == 1 })

	var stderr lockedBuffer
	prod := exec.CommandContext(ctx, kcat, "-b", strings.Join(c.seeds(), ","), "-P", "-t", topic, "-p", "0",
		"-X", "acks=0", "-X", "topic.metadata.refresh.interval.ms=600000", "-X", "message.timeout.ms=60000", "-d", "broker,metadata")
	prod.Stderr = &stderr
	in, err := prod.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := prod.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = prod.Process.Kill()
		if t.Failed() {
			t.Logf("--- kcat log (last 200 lines) ---\n%s", lastLines(stderr.String(), 200))
		}
	})
	var sent atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := fmt.Fprintf(in, "%d\n", i); err != nil {
				t.Errorf("write to kcat: %v", err)
				return
			}
			sent.Store(int64(i + 1))
			time.Sleep(2 * time.Millisecond)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-stopped
	}()
	endOffset := func(addr string) int64 {
		ends, err := newAdmin(t, addr).ListEndOffsets(ctx, topic)
		if lo, ok := ends.Lookup(topic, 0); err == nil && ok && lo.Err == nil {
			return lo.Offset
		}
		return -1
	}
	addr0, addr1 := c.brokers["kaas-0"].kafka, c.brokers["kaas-1"].kafka
	waitUntil(t, 30*time.Second, "records stored on broker 1", func() bool { return endOffset(addr1) >= 200 })

	var move kadm.AlterPartitionAssignmentsReq
	move.Assign(topic, 0, []int32{0})
	if res, err := adm.AlterPartitionAssignments(ctx, move); err != nil || res.Error() != nil {
		t.Fatalf("reassign: %v %v", err, res.Error())
	}
	waitUntil(t, 60*time.Second, "the partition led by broker 0", func() bool { return leader() == 0 })
	movedAt := sent.Load()
	waitUntil(t, 30*time.Second, "records sent after the move", func() bool { return sent.Load() >= movedAt+1000 })
	close(stop)
	<-stopped
	_ = in.Close()
	if err := prod.Wait(); err != nil {
		t.Fatalf("kcat: %v", err)
	}
	last := sent.Load() - 1

	// acks=0 is answered before the append: wait for the last record.
	var got []*kgo.Record
	waitUntil(t, 30*time.Second, "the last record sent stored", func() bool {
		got = readAllFrom(t, addr0, topic)
		return len(got) > 0 && string(got[len(got)-1].Value) == strconv.FormatInt(last, 10)
	})
	prev, afterMove := int64(-1), 0
	for _, r := range got {
		i, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil {
			t.Fatalf("offset %d: value %q", r.Offset, r.Value)
		}
		if i <= prev {
			t.Fatalf("offset %d: record %d after record %d", r.Offset, i, prev)
		}
		if i >= movedAt {
			afterMove++
		}
		prev = i
	}
	tail := map[int64]bool{}
	for _, r := range got[max(len(got)-100, 0):] {
		i, _ := strconv.ParseInt(string(r.Value), 10, 64)
		tail[i] = true
	}
	for i := last - 99; i <= last; i++ {
		if !tail[i] {
			t.Fatalf("record %d of the last 100 sent (0-%d) is not stored", i, last)
		}
	}
	waitUntil(t, 10*time.Second, "broker 1 closing the acks=0 connection", func() bool {
		return strings.Contains(c.brokers["kaas-1"].log.String(), "acks=0 produce failed; closing connection")
	})
	t.Logf("%d records sent, %d stored, %d of the %d sent after the move", last+1, len(got), afterMove, last+1-movedAt)
}
