package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

type kill9Proc struct {
	cmd  *exec.Cmd
	addr string
	out  *bytes.Buffer
	mu   *sync.Mutex
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (p *kill9Proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func startKill9(t *testing.T, bin, dir string) *kill9Proc {
	t.Helper()
	p := &kill9Proc{addr: freeAddr(t), out: &bytes.Buffer{}, mu: &sync.Mutex{}}
	p.cmd = exec.Command(bin, "--data-dir", dir, "--kafka-addr", p.addr, "--http-addr", "", "--log-format", "json", "--log-level", "info")
	p.cmd.Stdout = lockedWriter{p.mu, p.out}
	p.cmd.Stderr = lockedWriter{p.mu, p.out}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("--- kaas %s output ---\n%s", p.addr, p.log())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("kaas did not listen on %s: %v\n%s", p.addr, err, p.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type acked struct {
	offset int64
	seq    int
}

// TestKill9KeepsAcknowledgedRecords: an idempotent acks=all producer writes
// to several partitions, the broker is SIGKILLed mid-produce and restarted
// on the same --data-dir: every acknowledged record is there, exactly once,
// at the offset it was acknowledged with, in order.
func TestKill9KeepsAcknowledgedRecords(t *testing.T) {
	bin := kaasBinary(t)
	dir := t.TempDir()
	const topic, partitions = "k9", 4
	p := startKill9(t, bin, dir)
	ctx := ctxT(t, 90*time.Second)
	adm := newAdmin(t, p.addr)
	if _, err := adm.CreateTopic(ctx, partitions, 1, map[string]*string{"segment.bytes": kadm.StringPtr("262144")}, topic); err != nil {
		t.Fatal(err)
	}
	adm.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.RecordDeliveryTimeout(3*time.Second),
		kgo.RetryTimeout(3*time.Second), kgo.MaxBufferedRecords(4000))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ack := map[int32][]acked{}
	ackedTotal := 0
	pctx, cancel := context.WithCancel(ctx)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		seq := make([]int, partitions)
		payload := bytes.Repeat([]byte("p"), 200)
		for i := 0; pctx.Err() == nil; i++ {
			part := int32(i % partitions)
			s := seq[part]
			seq[part]++
			v := append([]byte(fmt.Sprintf("%d-%08d-", part, s)), payload...)
			cl.Produce(pctx, &kgo.Record{Partition: part, Value: v}, func(r *kgo.Record, err error) {
				if err != nil {
					return
				}
				mu.Lock()
				ack[r.Partition] = append(ack[r.Partition], acked{offset: r.Offset, seq: s})
				ackedTotal++
				mu.Unlock()
			})
		}
	}()
	// Kill once plenty is acknowledged, with produce requests in flight.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := ackedTotal
		mu.Unlock()
		if n >= 20000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d records acknowledged in 30s", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	cancel()
	<-produced
	cl.Close() // fails what was not acknowledged
	mu.Lock()
	total := ackedTotal
	mu.Unlock()
	t.Logf("%d records acknowledged before SIGKILL", total)

	p2 := startKill9(t, bin, dir)
	adm = newAdmin(t, p2.addr)
	// Until its first group commit covers the tail it recovered, a
	// partition answers OFFSET_NOT_AVAILABLE (retriable), never an end
	// below what was acknowledged.
	var ends kadm.ListedOffsets
	for {
		var err error
		ends, err = adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if err := ends.Error(); err == nil {
			break
		} else if !errors.Is(err, kerr.OffsetNotAvailable) && !errors.Is(err, kerr.NotLeaderForPartition) && !errors.Is(err, kerr.LeaderNotAvailable) {
			t.Fatalf("end offsets after the restart: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cons := newClient(t, p2.addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := map[int32][]*kgo.Record{}
	remaining := 0
	ends.Each(func(o kadm.ListedOffset) { remaining += int(o.Offset) })
	for remaining > 0 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v (%d records left)", err, remaining)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = append(got[r.Partition], r)
			remaining--
		})
	}
	for part := int32(0); part < partitions; part++ {
		recs := got[part]
		acks := ack[part]
		sort.Slice(acks, func(i, j int) bool { return acks[i].offset < acks[j].offset })
		// Everything in the log is in sequence order, without duplicates
		// (idempotence across the crash).
		last := -1
		for i, r := range recs {
			if r.Offset != int64(i) {
				t.Fatalf("partition %d: record %d has offset %d", part, i, r.Offset)
			}
			var pp, s int
			if _, err := fmt.Sscanf(string(r.Value), "%d-%08d-", &pp, &s); err != nil || int32(pp) != part {
				t.Fatalf("partition %d offset %d: bad value %.20q", part, r.Offset, r.Value)
			}
			if s <= last {
				t.Fatalf("partition %d offset %d: sequence %d after %d (duplicate or reorder)", part, r.Offset, s, last)
			}
			last = s
		}
		// Every acknowledged record is at its acknowledged offset.
		for _, a := range acks {
			if a.offset >= int64(len(recs)) {
				t.Fatalf("partition %d: acknowledged offset %d lost (log ends at %d)", part, a.offset, len(recs))
			}
			want := fmt.Sprintf("%d-%08d-", part, a.seq)
			if !bytes.HasPrefix(recs[a.offset].Value, []byte(want)) {
				t.Fatalf("partition %d offset %d: %.20q, acknowledged %q", part, a.offset, recs[a.offset].Value, want)
			}
		}
		t.Logf("partition %d: %d acknowledged, %d in the log after restart", part, len(acks), len(recs))
	}
}
