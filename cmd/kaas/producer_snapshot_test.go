package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/storage/disklog"
)

// TestProducerSnapshotBoundsRecovery: a partition on disk snapshots its
// producer table at a maintenance tick once the log grew and the growth is
// durable, as Kafka snapshots it at each segment roll, so that after a
// kill -9 the next broker rebuilds the table from the batches after the
// snapshot (the "partition opened" line's producers_scanned_from), not from
// the whole log; the idempotent producer's records are all there once and
// the partition takes more.
func TestProducerSnapshotBoundsRecovery(t *testing.T) {
	dir := t.TempDir()
	k := startKaas(t, "--data-dir", dir, "--retention-check-interval", "100ms")
	ctx := ctxT(t, time.Minute)
	createTopic(t, k.Addr, "snap", 1, nil)
	cl := newClient(t, k.Addr, kgo.DefaultProduceTopic("snap"))
	const n = 50
	for i := range n {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	paths, err := filepath.Glob(filepath.Join(dir, "snap-0-*", "producers.snapshot"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("the partition's producer snapshot: %v %v", paths, err)
	}
	var at int64
	waitUntil(t, 10*time.Second, "a producer snapshot at the log end", func() bool {
		b, err := disklog.ReadSnapshotFile(paths[0])
		if err != nil {
			return false
		}
		p, off, err := partition.LoadSnapshot(b)
		at = off
		return err == nil && off == n && len(p.Entries()) == 1
	})
	k.kill()
	next := startKaas(t, "--data-dir", dir, "--log-level", "debug")
	cons := newClient(t, next.Addr, kgo.ConsumeTopics("snap"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("read after the kill: %v (read %v)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("read after the kill: %v", got)
		}
	}
	scannedFrom := int64(-1)
	for _, line := range strings.Split(next.Log(), "\n") {
		var e struct {
			Message string `json:"message"`
			Topic   string `json:"topic"`
			From    *int64 `json:"producers_scanned_from"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Message == "partition opened" && e.Topic == "snap" && e.From != nil {
			scannedFrom = *e.From
		}
	}
	if scannedFrom != at {
		t.Fatalf("the producer table was rebuilt from offset %d, want the snapshot's %d", scannedFrom, at)
	}
	more := newClient(t, next.Addr, kgo.DefaultProduceTopic("snap"))
	if r, err := more.ProduceSync(ctx, kgo.StringRecord("after")).First(); err != nil || r.Offset != n {
		t.Fatalf("produce after the restart: offset %v, %v", r, err)
	}
}
