package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaQuotaObjects: KafkaQuota objects applied with kubectl reach
// every broker (DescribeClientQuotas on each); AlterClientQuotas sent to
// one broker writes the object and the other broker describes it; removing
// every key deletes the object; the CRD refuses what Kafka would.
func TestKafkaQuotaObjects(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, clusterFlags...)
	for _, n := range []string{"kaas-0", "kaas-1"} {
		c.start(n)
	}
	manifest := func(name, body string) string {
		f := filepath.Join(t.TempDir(), name+".yaml")
		y := "apiVersion: kaas.dev/v1alpha1\nkind: KafkaQuota\nmetadata:\n  name: " + name + "\nspec:\n" + body
		if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	api.kubectl(t, "-n", c.ns, "apply", "-f", manifest("every-user", "  user: \"<default>\"\n  quotas:\n    producer_byte_rate: 1048576\n"))
	api.kubectl(t, "-n", c.ns, "apply", "-f", manifest("one-ip", "  ip: \"10.1.2.3\"\n  quotas:\n    connection_creation_rate: 20\n"))

	cl := c.client()
	describe := func(id int) []string {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		r, err := cl.Broker(id).Request(ctxFor(t, 5*time.Second), req)
		if err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, e := range r.(*kmsg.DescribeClientQuotasResponse).Entries {
			var s []string
			for _, c := range e.Entity {
				name := "<default>"
				if c.Name != nil {
					name = *c.Name
				}
				s = append(s, c.Type+"="+name)
			}
			for _, v := range e.Values {
				s = append(s, v.Key+"="+strconv.FormatFloat(v.Value, 'f', -1, 64))
			}
			out = append(out, strings.Join(s, " "))
		}
		return out
	}
	waitDescribed := func(what string, want ...string) {
		t.Helper()
		for _, id := range []int{0, 1} {
			waitUntil(t, 30*time.Second, what+" on broker "+strconv.Itoa(id), func() bool {
				return strings.Join(describe(id), "\n") == strings.Join(want, "\n")
			})
		}
	}
	// In Kafka's order (actors/quota's order.go).
	waitDescribed("the applied KafkaQuotas", "ip=10.1.2.3 connection_creation_rate=20", "user=<default> producer_byte_rate=1048576")
	api.kubectl(t, "-n", c.ns, "delete", "kafkaquota", "one-ip")
	waitDescribed("after deleting the ip quota", "user=<default> producer_byte_rate=1048576")

	// AlterClientQuotas on broker 1 writes a KafkaQuota; broker 0 sees it.
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	e := kmsg.NewAlterClientQuotasRequestEntry()
	ent := kmsg.NewAlterClientQuotasRequestEntryEntity()
	ent.Type, ent.Name = "client-id", kmsg.StringPtr("ingest")
	op := kmsg.NewAlterClientQuotasRequestEntryOp()
	op.Key, op.Value = "consumer_byte_rate", 2048
	e.Entity, e.Ops = append(e.Entity, ent), append(e.Ops, op)
	alter.Entries = append(alter.Entries, e)
	r, err := cl.Broker(1).Request(ctxFor(t, 30*time.Second), alter)
	if err != nil {
		t.Fatal(err)
	}
	if res := r.(*kmsg.AlterClientQuotasResponse).Entries; len(res) != 1 || res[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas = %+v", res)
	}
	out := api.kubectl(t, "-n", c.ns, "get", "kafkaquotas", "-o",
		`jsonpath={range .items[*]}{.spec.clientId}/{.spec.quotas.consumer_byte_rate}{"\n"}{end}`)
	if !strings.Contains(out, "ingest/2048") {
		t.Fatalf("AlterClientQuotas made no KafkaQuota; objects:\n%s", out)
	}
	waitDescribed("the altered quota", "user=<default> producer_byte_rate=1048576", "client-id=ingest consumer_byte_rate=2048")

	// Removing its only key deletes the object.
	alter.Entries[0].Ops[0].Remove = true
	if r, err = cl.Broker(0).Request(ctxFor(t, 30*time.Second), alter); err != nil || r.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode != 0 {
		t.Fatalf("AlterClientQuotas remove: %v %+v", err, r)
	}
	waitUntil(t, 10*time.Second, "KafkaQuota of the removed quota gone", func() bool {
		return !strings.Contains(api.kubectlMaybe("-n", c.ns, "get", "kafkaquotas", "-o", "jsonpath={.items[*].spec.clientId}"), "ingest")
	})
	waitDescribed("after removal", "user=<default> producer_byte_rate=1048576")

	// controller_mutation_rate from a KafkaQuota bounds CreateTopics: 0.5
	// partitions/s over the 11 s window is a burst of 5.5, which a topic of
	// 10 partitions empties for 9 s; the next topic is refused.
	api.kubectl(t, "-n", c.ns, "apply", "-f", manifest("mutations", "  clientId: mutator\n  quotas:\n    controller_mutation_rate: 0.5\n"))
	waitDescribed("the mutation quota", "user=<default> producer_byte_rate=1048576", "client-id=mutator controller_mutation_rate=0.5")
	mutator := c.client(kgo.ClientID("mutator"))
	create := func(topic string) (int16, int32) {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 10, 1
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 30_000
		r, err := mutator.Broker(0).Request(ctxFor(t, 60*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		resp := r.(*kmsg.CreateTopicsResponse)
		return resp.Topics[0].ErrorCode, resp.ThrottleMillis
	}
	if code, ms := create("mutated-1"); code != 0 || ms != 0 {
		t.Fatalf("CreateTopics under a fresh mutation quota: code %d, throttle %d ms; want 0, 0", code, ms)
	}
	if code, ms := create("mutated-2"); code != kerr.ThrottlingQuotaExceeded.Code || ms <= 0 {
		t.Fatalf("CreateTopics on an empty bucket: code %d, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED with a throttle", code, ms)
	}
	api.kubectl(t, "-n", c.ns, "delete", "kafkaquota", "mutations")

	// Deleting the object with kubectl removes the quota everywhere.
	api.kubectl(t, "-n", c.ns, "delete", "kafkaquota", "every-user")
	waitDescribed("after kubectl delete")

	// The CRD refuses what Kafka would.
	for name, body := range map[string]string{
		"no-entity":   "  quotas:\n    producer_byte_rate: 10\n",
		"zero-rate":   "  user: bob\n  quotas:\n    producer_byte_rate: 0\n",
		"fractional":  "  user: bob\n  quotas:\n    consumer_byte_rate: 1.5\n",
		"ip-and-user": "  user: bob\n  ip: \"10.1.2.3\"\n  quotas:\n    connection_creation_rate: 5\n",
	} {
		if out, err := kubectlErr(api, "-n", c.ns, "apply", "-f", manifest(name, body)); err == nil {
			t.Errorf("kubectl accepted KafkaQuota %s:\n%s", name, out)
		}
	}
}
