package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A quiet topic keeps nothing older than its retention.ms, as on Kafka:
// the records of its only (active) segment are deleted once retention.ms
// has passed the newest of them, at the leader's next retention check
// (--retention-check-interval, reported as log.retention.check.interval.ms),
// in memory and on disk; a topic beside it with a longer retention keeps
// its records, and the partition goes on at its end. retention.ms=0 and
// retention.bytes=0 keep nothing, as on Kafka.
func TestRetentionByTime(t *testing.T) {
	for _, mode := range []string{"memory", "disk"} {
		t.Run(mode, func(t *testing.T) {
			args := []string{"--retention-check-interval", "50ms"}
			if mode == "disk" {
				args = append(args, "--data-dir", t.TempDir())
			}
			_, addr := testBroker(t, args...)
			adm := newAdmin(t, addr)
			ctx := ctxT(t, 30*time.Second)
			rc, err := adm.DescribeBrokerConfigs(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			c, err := rc.On("0", nil)
			if err != nil {
				t.Fatal(err)
			}
			interval := ""
			for _, e := range c.Configs {
				if e.Key == "log.retention.check.interval.ms" && e.Value != nil {
					interval = *e.Value
				}
			}
			if interval != "50" {
				t.Fatalf("log.retention.check.interval.ms = %q, want 50", interval)
			}
			createTopic(t, addr, "quiet", 1, map[string]*string{"retention.ms": sp("1500")})
			createTopic(t, addr, "kept", 1, map[string]*string{"retention.ms": sp("3600000")})
			createTopic(t, addr, "no-time", 1, map[string]*string{"retention.ms": sp("0")})
			createTopic(t, addr, "no-bytes", 1, map[string]*string{"retention.bytes": sp("0")})
			cl := newClient(t, addr)
			for i := 0; i < 20; i++ {
				for _, topic := range []string{"quiet", "kept", "no-time", "no-bytes"} {
					if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
			}
			var starts kadm.ListedOffsets
			waitUntil(t, 20*time.Second, "the records of quiet, no-time and no-bytes deleted", func() bool {
				starts, err = adm.ListStartOffsets(ctx, "quiet", "kept", "no-time", "no-bytes")
				if err != nil {
					t.Fatal(err)
				}
				for _, topic := range []string{"quiet", "no-time", "no-bytes"} {
					if s, _ := starts.Lookup(topic, 0); s.Offset != 20 {
						return false
					}
				}
				return true
			})
			if s, _ := starts.Lookup("kept", 0); s.Err != nil || s.Offset != 0 {
				t.Fatalf("kept's start offset %d (%v), want 0", s.Offset, s.Err)
			}
			ends, err := adm.ListEndOffsets(ctx, "quiet")
			if err != nil {
				t.Fatal(err)
			}
			if e, _ := ends.Lookup("quiet", 0); e.Offset != 20 {
				t.Fatalf("quiet's end offset %d, want 20", e.Offset)
			}
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "quiet", Value: []byte("after")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			cons := newClient(t, addr, kgo.ConsumeTopics("quiet"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			fs := cons.PollFetches(ctx)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			recs := fs.Records()
			if len(recs) != 1 || recs[0].Offset != 20 || string(recs[0].Value) != "after" {
				t.Fatalf("read from the start: %v", recs)
			}
		})
	}
}
