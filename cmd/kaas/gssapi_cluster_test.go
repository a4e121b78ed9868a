package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGSSAPICluster: two brokers in cluster mode whose only listener is
// SASL_PLAINTEXT with GSSAPI, against an MIT KDC. A franz-go client logged
// in as alice commits a transaction over partitions led by both brokers,
// so the transaction coordinator writes markers to the other broker over
// GSSAPI as kafka/127.0.0.1 (User:kafka); read_committed then sees every
// record.
func TestGSSAPICluster(t *testing.T) {
	k := startKDC(t)
	brokerKeys := k.keytab("brokers")
	k.admin(t, "addprinc -randkey alice", "addprinc -randkey kafka/127.0.0.1",
		"ktadd -k "+k.keytab("alice")+" alice", "ktadd -k "+brokerKeys+" kafka/127.0.0.1")

	api := startAPIServer(t)
	c := newKaasCluster(t, api, append([]string{
		"--sasl-enabled-mechanisms", "GSSAPI", "--sasl-kerberos-keytab", brokerKeys,
		"--inter-broker-sasl-mechanism", "GSSAPI", "--inter-broker-krb5-conf", k.krb5Conf,
	}, clusterFlags...)...)
	c.listener = "SASL_PLAINTEXT"
	for _, n := range []string{"kaas-0", "kaas-1"} {
		c.start(n)
	}
	waitUntil(t, 60*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	as := func(opts ...kgo.Opt) *kgo.Client {
		return c.client(append([]kgo.Opt{kgo.SASL(k.mech(t, "alice", "kafka"))}, opts...)...)
	}
	ctx := ctxFor(t, 120*time.Second)
	if r, err := kadm.NewClient(as()).CreateTopic(ctx, 4, 1, nil, "krb-t"); err != nil || r.Err != nil {
		t.Fatalf("create krb-t: %v %v", err, r.Err)
	}
	waitUntil(t, 60*time.Second, "krb-t led 2 partitions per broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 2 && led["kaas-1"] == 2
	})

	prod := as(kgo.TransactionalID("krb-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for p := int32(0); p < 4; p++ {
		v := fmt.Sprintf("krb-%d", p)
		want[v] = true
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "krb-t", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("transactional produce to krb-t[%d]: %v", p, err)
		}
	}
	if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(true)); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cons := as(kgo.ConsumeTopics("krb-t"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for len(want) > 0 {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read_committed: %d committed records not seen; errors %v", len(want), fs.Errors())
		}
		fs.EachRecord(func(r *kgo.Record) { delete(want, string(r.Value)) })
	}
	interBroker := false
	for _, b := range c.brokers {
		interBroker = interBroker || strings.Contains(b.log.String(), `"principal":"User:kafka","mechanism":"GSSAPI"`)
	}
	if !interBroker {
		t.Error("no broker logged kafka/127.0.0.1 in: the markers did not cross brokers over GSSAPI")
	}
}
