package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/supervisor"
)

// clusterFlags are short timings so failover tests run in seconds.
var clusterFlags = []string{
	"--lease-duration", "3s", "--renew-deadline", "2s", "--retry-period", "500ms",
	"--heartbeat-interval", "250ms", "--fence-after", "1s", "--dead-after", "2500ms",
}

// threeBrokers starts kaas-0, kaas-1 and kaas-2 with flags (after
// clusterFlags), waits for a controller, creates each topic with 6
// partitions and waits until every broker leads 2 partitions of each.
func threeBrokers(t *testing.T, flags []string, topics ...string) *kaasCluster {
	t.Helper()
	c := newKaasCluster(t, startAPIServer(t), append(append([]string(nil), clusterFlags...), flags...)...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	waitUntil(t, 30*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	adm := kadm.NewClient(c.client())
	for _, topic := range topics {
		if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 6, 1, nil, topic); err != nil || resp.Err != nil {
			t.Fatalf("create topic %s: %v %v", topic, err, resp.Err)
		}
	}
	each := 2 * len(topics)
	waitUntil(t, 30*time.Second, fmt.Sprintf("%d partitions led, %d per broker", 3*each, each), func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == each && led["kaas-1"] == each && led["kaas-2"] == each
	})
	return c
}

func (c *kaasCluster) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.seeds()...), kgo.RetryTimeout(60 * time.Second),
		kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// ledBy returns partitions_led per running broker and the controller's name.
func (c *kaasCluster) ledBy() (map[string]int, string, int64) {
	led := map[string]int{}
	ctrl, epoch := "", int64(-1)
	for name, b := range c.brokers {
		select {
		case <-b.exited:
			continue
		default:
		}
		h, err := b.healthz()
		if err != nil {
			continue
		}
		led[name] = h.PartitionsLed
		if h.Role == "controller" && h.Epoch > epoch {
			ctrl, epoch = name, h.Epoch
		}
	}
	return led, ctrl, epoch
}

// produceEverywhere writes one record to every partition of topic and
// returns how long it took until all were acknowledged.
func produceEverywhere(t *testing.T, cl *kgo.Client, topic string, partitions int, tag string) time.Duration {
	t.Helper()
	start := time.Now()
	ctx := ctxFor(t, 60*time.Second)
	for p := 0; p < partitions; p++ {
		r := &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%s-%d", tag, p))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %s to %s[%d]: %v", tag, topic, p, err)
		}
	}
	return time.Since(start)
}

// consumeAll reads want records of topic and returns value -> partition.
func consumeAll(t *testing.T, c *kaasCluster, topic string, want int) map[string]int32 {
	t.Helper()
	cl := c.client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx := ctxFor(t, 60*time.Second)
	got := map[string]int32{}
	for len(got) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s", len(got), want, topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, dup := got[string(r.Value)]; dup {
				t.Errorf("record %s consumed twice", r.Value)
			}
			got[string(r.Value)] = r.Partition
		})
	}
	return got
}

func TestClusterOnKubernetes(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	formed := waitUntil(t, 30*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	t.Logf("cluster formed: controller elected after %v", formed)

	// A topic created over the Kafka protocol becomes a KafkaTopic and is served.
	adm := kadm.NewClient(c.client())
	ctx := ctxFor(t, 30*time.Second)
	if resp, err := adm.CreateTopic(ctx, 6, 1, nil, "orders"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	if out := api.kubectl(t, "-n", c.ns, "get", "kafkatopics", "orders", "-o", "jsonpath={.spec.partitions}"); out != "6" {
		t.Fatalf("KafkaTopic orders has spec.partitions %q", out)
	}
	var lastLed map[string]int
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last partitions_led: %v", lastLed)
		}
	})
	waitUntil(t, 30*time.Second, "6 partitions led, 2 per broker", func() bool {
		led, _, _ := c.ledBy()
		lastLed = led
		return led["kaas-0"] == 2 && led["kaas-1"] == 2 && led["kaas-2"] == 2
	})
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceEverywhere(t, prod, "orders", 6, "first")
	// A name that collides with a topic's once '.' and '_' are read alike is
	// refused, as Kafka's controller refuses it.
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "pay.in"); err != nil || resp.Err != nil {
		t.Fatalf("create pay.in: %v %v", err, resp.Err)
	}
	waitUntil(t, 10*time.Second, "pay.in in the metadata", func() bool {
		td, err := adm.ListTopics(ctx, "pay.in")
		return err == nil && td.Has("pay.in") && td["pay.in"].Err == nil
	})
	if resp, _ := adm.CreateTopic(ctx, 1, 1, nil, "pay_in"); !errors.Is(resp.Err, kerr.InvalidTopicException) ||
		resp.ErrMessage != "Topic 'pay_in' collides with existing topic: pay.in" {
		t.Fatalf("create pay_in beside pay.in: %v %q", resp.Err, resp.ErrMessage)
	}
	if dr, err := adm.DeleteTopics(ctx, "pay.in"); err != nil || dr.Error() != nil {
		t.Fatalf("delete pay.in: %v %v", err, dr.Error())
	}

	// A KafkaTopic applied with kubectl becomes servable too.
	manifest := filepath.Join(t.TempDir(), "kt.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: kaas.dev/v1alpha1\nkind: KafkaTopic\nmetadata:\n  name: from-kubectl\nspec:\n  partitions: 3\n  config:\n    retention.ms: \"3600000\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api.kubectl(t, "-n", c.ns, "apply", "-f", manifest)
	waitUntil(t, 20*time.Second, "kubectl topic served", func() bool {
		td, err := adm.ListTopics(ctx, "from-kubectl")
		return err == nil && td.Has("from-kubectl") && len(td["from-kubectl"].Partitions) == 3 && td["from-kubectl"].Err == nil
	})
	produceEverywhere(t, prod, "from-kubectl", 3, "kubectl")
	waitUntil(t, 10*time.Second, "KafkaTopic status", func() bool {
		out := api.kubectlMaybe("-n", c.ns, "get", "kafkatopics", "from-kubectl", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}/{.status.topicID}`)
		td, _ := adm.ListTopics(ctx, "from-kubectl")
		return out == "True/"+supervisor.FormatUUID(td["from-kubectl"].ID)
	})
	// An invalid KafkaTopic is reported in its status and never served.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: kaas.dev/v1alpha1\nkind: KafkaTopic\nmetadata:\n  name: bad-config\nspec:\n  partitions: 1\n  config:\n    retention.ms: soon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	api.kubectl(t, "-n", c.ns, "apply", "-f", bad)
	waitUntil(t, 10*time.Second, "invalid KafkaTopic reported", func() bool {
		return api.kubectlMaybe("-n", c.ns, "get", "kafkatopics", "bad-config", "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}`) == "Invalid"
	})
	cfgs, err := adm.DescribeTopicConfigs(ctx, "from-kubectl")
	if err != nil || cfgs[0].Err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	for _, cv := range cfgs[0].Configs {
		if cv.Key == "retention.ms" && cv.MaybeValue() != "3600000" {
			t.Fatalf("retention.ms from the KafkaTopic: %s", cv.MaybeValue())
		}
	}

	// Committed group offsets live on the shared volume: whoever coordinates
	// the group after the kills below must still answer them.
	committed := kadm.Offsets{}
	for p := int32(0); p < 6; p++ {
		committed.Add(kadm.Offset{Topic: "orders", Partition: p, At: int64(p + 1), LeaderEpoch: -1})
	}
	for _, g := range []string{"g-one", "g-two", "g-three", "g-four"} {
		if resp, err := adm.CommitOffsets(ctx, g, committed); err != nil || resp.Error() != nil {
			t.Fatalf("commit %s: %v %v", g, err, resp.Error())
		}
	}
	checkGroups := func(when string) {
		t.Helper()
		// A fresh client: kgo keeps a cached coordinator through dial
		// errors; a new one asks FindCoordinator, which answers from the
		// assignment (where a dead broker's slot falls).
		adm := kadm.NewClient(c.client())
		for _, g := range []string{"g-one", "g-two", "g-three", "g-four"} {
			gctx := ctxFor(t, 30*time.Second)
			var got kadm.OffsetResponses
			var err error
			for gctx.Err() == nil {
				if got, err = adm.FetchOffsets(gctx, g); err == nil && got.Error() == nil {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			if err != nil {
				t.Fatalf("%s: fetch offsets of %s: %v", when, g, err)
			}
			for p := int32(0); p < 6; p++ {
				if o, ok := got.Lookup("orders", p); !ok || o.At != int64(p+1) {
					t.Fatalf("%s: group %s partition %d offset %+v, want %d", when, g, p, o, p+1)
				}
			}
		}
	}

	// SIGKILL the controller: another broker wins the Lease with a higher
	// epoch and the cluster keeps serving.
	// The times logged are docs/performance.md's failover figures.
	_, ctrl, epoch := c.ledBy()
	killAt := time.Now()
	c.brokers[ctrl].kill()
	waitUntil(t, 30*time.Second, "new controller with a higher epoch", func() bool {
		_, n, e := c.ledBy()
		return n != "" && n != ctrl && e > epoch
	})
	t.Logf("controller SIGKILL: another broker holds the Lease after %v", time.Since(killAt).Round(100*time.Millisecond))
	prod2 := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceEverywhere(t, prod2, "orders", 6, "after-controller-kill")
	t.Logf("controller SIGKILL: every partition acknowledged acks=all produce after %v", time.Since(killAt).Round(100*time.Millisecond))
	waitUntil(t, 20*time.Second, "survivors lead everything", func() bool {
		led, _, _ := c.ledBy()
		sum := 0
		for _, n := range led {
			sum += n
		}
		return sum == 9 && len(led) == 2
	})

	// SIGKILL a broker that is not the controller.
	_, ctrl2, _ := c.ledBy()
	var victim string
	for name, b := range c.brokers {
		select {
		case <-b.exited:
			continue
		default:
		}
		if name != ctrl2 {
			victim = name
		}
	}
	ledBefore, _, _ := c.ledBy()
	t.Logf("partitions led before killing %s (controller %s): %v", victim, ctrl2, ledBefore)
	if ledBefore[victim] == 0 {
		t.Fatalf("victim %s leads nothing: %v", victim, ledBefore)
	}
	killAt = time.Now()
	c.brokers[victim].kill()
	produceEverywhere(t, prod2, "orders", 6, "after-broker-kill")
	t.Logf("broker SIGKILL: every partition acknowledged acks=all produce after %v", time.Since(killAt).Round(100*time.Millisecond))
	produceEverywhere(t, prod2, "from-kubectl", 3, "after-broker-kill")
	checkGroups("after two brokers were killed")
	// DescribeCluster v2 reports the dead broker as fenced when asked.
	waitUntil(t, 10*time.Second, "dead broker reported fenced", func() bool {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeFencedBrokers = true
		resp, err := req.RequestWith(ctxFor(t, 5*time.Second), c.client())
		if err != nil {
			return false
		}
		for _, b := range resp.Brokers {
			if b.Host+":"+fmt.Sprint(b.Port) == c.brokers[victim].kafka {
				return b.IsFenced
			}
		}
		return false
	})

	// The killed brokers come back and take a balanced share.
	c.start(ctrl)
	c.start(victim)
	waitUntil(t, 30*time.Second, "3 brokers with 3 partitions each", func() bool {
		led, _, _ := c.ledBy()
		return len(led) == 3 && led["kaas-0"] == 3 && led["kaas-1"] == 3 && led["kaas-2"] == 3
	})
	checkGroups("after the brokers rejoined")

	// Nothing acknowledged was lost through all of it.
	got := consumeAll(t, c, "orders", 18)
	for _, tag := range []string{"first", "after-controller-kill", "after-broker-kill"} {
		for p := 0; p < 6; p++ {
			if part, ok := got[fmt.Sprintf("%s-%d", tag, p)]; !ok || part != int32(p) {
				t.Errorf("acknowledged record %s-%d: found=%v in partition %d", tag, p, ok, part)
			}
		}
	}
}
