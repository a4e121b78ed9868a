package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/disklog"
)

// TestStrayPartitionsOfADeletedTopic (real apiserver, three processes, one
// shared directory): a topic deleted while one of its leaders is down
// (SIGKILL, not yet declared dead) leaves that broker's partitions'
// directories behind, since only a leader's relinquish removes one; the
// controller removes them after --stray-grace, and the other topic's data
// is untouched.
func TestStrayPartitionsOfADeletedTopic(t *testing.T) {
	c := threeBrokers(t, []string{"--stray-grace", "3s"}, "doomed", "kept")
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 60*time.Second)
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceEverywhere(t, prod, "doomed", 6, "doomed")
	produceEverywhere(t, prod, "kept", 6, "kept")
	td, err := adm.ListTopics(ctx, "doomed")
	if err != nil || td["doomed"].Err != nil {
		t.Fatalf("list: %v", err)
	}
	doomedID := supervisor.FormatUUID(td["doomed"].ID)
	doomedDirs := func() (n int) {
		ents, _ := os.ReadDir(c.dataDir)
		for _, e := range ents {
			if id, ok := disklog.ParseDirName(e.Name()); ok && id.TopicID == doomedID {
				n++
			}
		}
		return n
	}
	if n := doomedDirs(); n != 6 {
		t.Fatalf("%d partition directories of doomed, want 6", n)
	}

	_, ctrl, _ := c.ledBy()
	victim := "kaas-1"
	if ctrl == victim {
		victim = "kaas-2"
	}
	orphans := c.partitionsLedBy(t, "doomed", victim, 2)
	c.brokers[victim].kill()
	if _, err := adm.DeleteTopics(ctx, "doomed"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitUntil(t, 30*time.Second, "doomed gone from assignment.json", func() bool {
		a, err := assignment.ReadFile(assignment.Path(c.dataDir))
		_, still := a.Topics["doomed"]
		return err == nil && !still
	})
	// The live leaders remove theirs when they relinquish; the killed one's
	// stay until the controller's sweep.
	waitUntil(t, 30*time.Second, "the live leaders' doomed directories removed", func() bool { return doomedDirs() <= len(orphans) })
	if n := doomedDirs(); n != len(orphans) {
		t.Fatalf("%d doomed directories left, want the killed leader's %d (the sweep ran before its grace?)", n, len(orphans))
	}
	took := waitUntil(t, 60*time.Second, "the killed leader's doomed directories removed", func() bool { return doomedDirs() == 0 })
	t.Logf("stray directories removed %v after the live leaders' (--stray-grace 3s)", took)
	c.start(victim)
	cons := c.client(kgo.ConsumeTopics("kept"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	seen := 0
	for seen < 6 {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read kept back: %d of 6 records (%v)", seen, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !strings.HasPrefix(string(r.Value), "kept-") {
				t.Fatalf("kept holds %q", r.Value)
			}
			seen++
		})
	}
	ents, _ := os.ReadDir(c.dataDir)
	kept := 0
	for _, e := range ents {
		if _, ok := disklog.ParseDirName(e.Name()); ok && strings.HasPrefix(e.Name(), "kept-") {
			kept++
		}
	}
	if kept != 6 {
		t.Fatalf("%d partition directories of kept, want 6", kept)
	}
}
