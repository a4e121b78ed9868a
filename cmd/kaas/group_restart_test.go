package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// restartableBroker starts a broker the test stops itself (testBroker's
// cleanup would stop it a second time).
func restartableBroker(t *testing.T, args ...string) (*broker, string, func(), error) {
	t.Helper()
	addr := freeAddr(t)
	cfg, err := parseServe(append([]string{"--kafka-addr", addr, "--http-addr", "", "--log-level", "error"}, args...), func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := startBroker(ctx, cfg, io.Discard)
	if err != nil {
		cancel()
		return nil, "", nil, err
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			b.shutdown()
			if c := b.groups; c != nil {
				select {
				case <-c.Done():
				case <-time.After(10 * time.Second):
					t.Error("group coordinator did not stop")
				}
			}
		})
	}
	t.Cleanup(stop)
	return b, addr, stop, nil
}

// Committed offsets survive a broker restart with --data-dir: the group is
// listed again, its offsets fetched, and a consumer resumes where the group
// left off.
func TestGroupOffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	b, addr, stop, err := restartableBroker(t, "--data-dir", dir)
	diskLog := err == nil
	if !diskLog {
		// No disk log engine in this build: topics live in memory, and
		// offsets persist through the group store alone.
		t.Logf("--data-dir unavailable (%v); persisting offsets through the group store only", err)
		old := groupStoreDir
		groupStoreDir = func(*serveConfig) string { return dir }
		t.Cleanup(func() { groupStoreDir = old })
		b, addr, stop, err = restartableBroker(t)
		if err != nil {
			t.Fatal(err)
		}
	}
	_ = b
	ctx := ctxT(t, 60*time.Second)
	const topic, group, total = "durable", "durable-group", 300
	adm := kadm.NewClient(newClient(t, addr))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic))
	for i := 0; i < total; i++ {
		prod.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("r-%04d", i))}, nil)
	}
	if err := prod.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	// Consume about half, committing as we go, then leave.
	seen := map[string]bool{}
	cons, err := kgo.NewClient(append(groupClientOpts(addr, topic, group), kgo.DisableAutoCommit())...)
	if err != nil {
		t.Fatal(err)
	}
	for len(seen) < total/2 {
		fs := cons.PollRecords(ctx, 50)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)] = true })
		if err := cons.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cons.Close()
	// An offsets-only group too (a commit by a non-member).
	var manual kadm.Offsets
	manual.Add(kadm.Offset{Topic: topic, Partition: 2, At: 42, LeaderEpoch: -1, Metadata: "by hand"})
	if rs, err := adm.CommitOffsets(ctx, "manual", manual); err != nil || rs.Error() != nil {
		t.Fatal(err, rs.Error())
	}
	before, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}

	stop()
	_, addr, _, err = restartableBroker(t, "--data-dir", dir)
	if !diskLog {
		_, addr, _, err = restartableBroker(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	adm = kadm.NewClient(newClient(t, addr))
	if !diskLog {
		// The topic did not survive; recreate it so offsets can be
		// fetched by topic id (OffsetFetch v10).
		if _, err := adm.CreateTopic(ctx, 3, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}

	// The stored groups are listed (loaded at start, before any request
	// names them).
	listed, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := listed[group]; l.State != "Empty" || l.ProtocolType != "consumer" {
		t.Errorf("listed after the restart: %+v (all: %v)", l, listed.Groups())
	}
	if _, ok := listed["manual"]; !ok {
		t.Errorf("offsets-only group not listed after the restart: %v", listed.Groups())
	}
	after, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	before.Each(func(o kadm.OffsetResponse) {
		a, ok := after.Lookup(o.Topic, o.Partition)
		if !ok || a.At != o.At || a.Err != nil {
			t.Errorf("%s-%d: committed %d before the restart, %+v after", o.Topic, o.Partition, o.At, a)
		}
		committed += o.At
	})
	if committed < total/2 {
		t.Errorf("only %d offsets committed before the restart", committed)
	}
	if m, err := adm.FetchOffsets(ctx, "manual"); err != nil {
		t.Fatal(err)
	} else if o, _ := m.Lookup(topic, 2); o.At != 42 || o.Metadata != "by hand" {
		t.Errorf("manual offset after the restart: %+v", o)
	}
	if !diskLog {
		return
	}

	// A consumer resumes from the committed offsets: the rest, and
	// nothing it saw before.
	cons = newClient(t, addr, append(groupClientOpts(addr, topic, group), kgo.DisableAutoCommit())...)
	rest := 0
	for rest < total-len(seen) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Errorf("%s consumed again after the restart", r.Value)
			}
			rest++
		})
	}
}
