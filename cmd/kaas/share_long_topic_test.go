package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/storage/groupstore"
)

// TestShareGroupLongTopicName: a share group's state of a topic with the
// longest name Kafka allows (249 characters, too long to name its files)
// is written, outlives a restart, is reported under the topic's full name,
// and consumption goes on from it: the records acknowledged are not
// delivered again, the released ones come with the deliveries before the restart counted.
func TestShareGroupLongTopicName(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--share-auto-offset-reset", "earliest"}
	_, addr, stop := startTestBroker(t, args...)
	topic := "share-long-" + strings.Repeat("L", 249-len("share-long-"))
	const group = "sg-long"
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, 10)
	shareAcceptReleaseTwice(t, addr, group, topic)
	if s := shareStart(t, newAdmin(t, addr), group, topic); s != 5 {
		t.Fatalf("share-partition start %d, want 5", s)
	}
	stop()
	entries, err := os.ReadDir(filepath.Join(dir, "__share", groupstore.DirName(group)))
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".state") {
			states = append(states, e.Name())
		}
	}
	if len(states) != 1 {
		t.Fatalf("share state files %v, want one", states)
	}

	_, addr2, _ := startTestBroker(t, args...)
	if s := shareStart(t, newAdmin(t, addr2), group, topic); s != 5 {
		t.Fatalf("share-partition start after the restart %d, want 5", s)
	}
	cl := shareConsumer(t, addr2, group, topic)
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	got := map[int64]int32{}
	for len(got) < 5 {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("got offsets %v after the restart: %v", got, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if k, err := strconv.Atoi(string(r.Key)); err != nil || k < 5 {
				t.Errorf("record %s (offset %d), acknowledged before the restart, delivered again", r.Key, r.Offset)
			}
			got[r.Offset] = int32(r.DeliveryCount())
		})
		cl.MarkAcks(kgo.AckAccept)
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	offs := slices.Sorted(maps.Keys(got))
	if !slices.Equal(offs, offsetsFrom(5, 10)) {
		t.Fatalf("offsets after the restart %v, want 5-9", offs)
	}
	for o, c := range got {
		if c < 3 {
			t.Errorf("offset %d came with delivery count %d, want at least 3 (two deliveries or more before the restart)", o, c)
		}
	}
	if s := shareStart(t, newAdmin(t, addr2), group, topic); s != 10 {
		t.Fatalf("share-partition start %d, want 10", s)
	}
}
