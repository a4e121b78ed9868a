package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/storage/groupstore"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// shareAcceptReleaseTwice consumes keys 0-9 of topic in group: accepts
// 0-4 and releases 5-9 until each was delivered twice, then closes.
func shareAcceptReleaseTwice(t *testing.T, addr, group, topic string) {
	t.Helper()
	cl := shareConsumer(t, addr, group, topic)
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	accepted, twice := map[string]bool{}, map[string]bool{}
	for len(accepted) < 5 || len(twice) < 5 {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("accepted %v, delivered twice %v: %v", accepted, twice, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if k, _ := strconv.Atoi(string(r.Key)); k < 5 {
				accepted[string(r.Key)] = true
				r.Ack(kgo.AckAccept)
				return
			}
			if r.DeliveryCount() >= 2 {
				twice[string(r.Key)] = true
			}
			r.Ack(kgo.AckRelease)
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
}

// recreateTopic deletes topic and creates it again (one partition); it
// returns the new topic's id.
func recreateTopic(t *testing.T, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s again: %v %v", topic, err, resp.Err)
	}
	return resp.ID
}

// consumeFresh reads the new topic's ten records (keys n0-n9) in group and
// checks that they come as a brand new share-partition's would: every one,
// from offset 0, each delivered once.
func consumeFresh(t *testing.T, addr, group, topic string) {
	t.Helper()
	cl := shareConsumer(t, addr, group, topic)
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	got := map[string]*kgo.Record{}
	for len(got) < 10 {
		fs := cl.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("got %d of the new topic's 10 records: %v", len(got), ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if prev, dup := got[string(r.Key)]; dup {
				t.Fatalf("record %s delivered again (count %d, before %d)", r.Key, r.DeliveryCount(), prev.DeliveryCount())
			}
			got[string(r.Key)] = r
		})
		cl.MarkAcks(kgo.AckAccept)
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for k, r := range got {
		if c := r.DeliveryCount(); c != 1 {
			t.Errorf("new topic's record %s (offset %d) came with delivery count %d, want 1", k, r.Offset, c)
		}
		offs = append(offs, r.Offset)
	}
	slices.Sort(offs)
	if !slices.Equal(offs, offsetsFrom(0, 10)) {
		t.Fatalf("new topic's offsets %v, want 0-9", offs)
	}
}

func produceNew(t *testing.T, addr, topic string) {
	t.Helper()
	cl := newClient(t, addr)
	var recs []*kgo.Record
	for i := range 10 {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("n" + strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctxT(t, 20*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// TestShareGroupTopicRecreated: share-partition state belongs to one
// topic: once the topic is deleted and created again under its name, the
// group's consumers start afresh on the new one (every record, each
// delivered once), and DescribeShareGroupOffsets reports none of the old
// state.
func TestShareGroupTopicRecreated(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run("durable="+strconv.FormatBool(durable), func(t *testing.T) {
			args := []string{"--share-auto-offset-reset", "earliest"}
			if durable {
				args = append(args, "--data-dir", t.TempDir())
			}
			_, addr := testBroker(t, args...)
			const topic, group = "share-recreate", "sg-recreate"
			createTopic(t, addr, topic, 1, nil)
			produceKeys(t, addr, topic, 0, 10)
			shareAcceptReleaseTwice(t, addr, group, topic)
			adm := newAdmin(t, addr)
			if s := shareStart(t, adm, group, topic); s != 5 {
				t.Fatalf("old topic's share-partition start %d, want 5", s)
			}

			recreateTopic(t, adm, topic)
			if s := shareStart(t, adm, group, topic); s != -1 {
				t.Fatalf("new topic reported with the old one's start %d", s)
			}
			produceNew(t, addr, topic)
			consumeFresh(t, addr, group, topic)
			if s := shareStart(t, adm, group, topic); s != 10 {
				t.Fatalf("new topic's share-partition start %d, want 10", s)
			}
		})
	}
}

// TestShareGroupTopicRecreatedAcrossRestart: a snapshot of the topic's
// earlier incarnation found on the volume at start (as one written by a
// leader that never saw the deletion) is not the new topic's state: it is
// neither reported nor loaded, and the new topic's state replaces it.
// The keeper also removes the deleted topic's snapshot once it sees the
// deletion.
func TestShareGroupTopicRecreatedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--share-auto-offset-reset", "earliest"}
	_, addr, stop := startTestBroker(t, args...)
	const topic, group = "share-recreate-restart", "sg-recreate-restart"
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, 10)
	shareAcceptReleaseTwice(t, addr, group, topic)
	snapPath := filepath.Join(dir, "__share", groupstore.DirName(group), topic+"-0.state")
	old, err := os.ReadFile(snapPath)
	if err != nil {
		t.Fatalf("old topic's snapshot: %v", err)
	}

	newID := recreateTopic(t, newAdmin(t, addr), topic)
	ctx := ctxT(t, 20*time.Second)
	for {
		if _, err := os.Stat(snapPath); os.IsNotExist(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the deleted topic's snapshot was left on the volume")
		}
		time.Sleep(20 * time.Millisecond)
	}
	produceNew(t, addr, topic)
	stop()

	if err := os.WriteFile(snapPath, old, 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr2, _ := startTestBroker(t, args...)
	if s := shareStart(t, newAdmin(t, addr2), group, topic); s != -1 {
		t.Fatalf("new topic reported with the old one's start %d", s)
	}
	consumeFresh(t, addr2, group, topic)
	b, err := os.ReadFile(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := sharestate.Decode(b)
	if err != nil || snap.TopicID != newID || snap.Start != 10 {
		t.Fatalf("snapshot on the volume: %+v %v, want the new topic's (start 10)", snap, err)
	}
}
