package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func strp(s string) *string { return &s }

// randomBytes is n incompressible bytes: quotas meter the bytes on the
// wire, after the producer's compression.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// quotaEntity builds a kadm entity: pairs of type and name, "" for the
// default.
func quotaEntity(kv ...string) kadm.ClientQuotaEntity {
	var e kadm.ClientQuotaEntity
	for i := 0; i < len(kv); i += 2 {
		c := kadm.ClientQuotaEntityComponent{Type: kv[i]}
		if kv[i+1] != "" {
			c.Name = strp(kv[i+1])
		}
		e = append(e, c)
	}
	return e
}

func alterQuotas(t *testing.T, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) kadm.AlteredClientQuotas {
	t.Helper()
	res, err := adm.AlterClientQuotas(ctxT(t, 30*time.Second), entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(entries) {
		t.Fatalf("AlterClientQuotas answered %d entries for %d", len(res), len(entries))
	}
	return res
}

func mustAlterQuotas(t *testing.T, adm *kadm.Client, entries ...kadm.AlterClientQuotaEntry) {
	t.Helper()
	for _, r := range alterQuotas(t, adm, entries...) {
		if r.Err != nil {
			t.Fatalf("AlterClientQuotas %s: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
}

// describedQuotas renders DescribeClientQuotas' answer as "entity: k=v ..."
// lines, in the broker's order.
func describedQuotas(t *testing.T, adm *kadm.Client, strict bool, cs ...kadm.DescribeClientQuotaComponent) []string {
	t.Helper()
	res, err := adm.DescribeClientQuotas(ctxT(t, 10*time.Second), strict, cs)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, q := range res {
		var vs []string
		for _, v := range q.Values {
			vs = append(vs, v.String())
		}
		out = append(out, q.Entity.String()+": "+strings.Join(vs, " "))
	}
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// TestClientQuotasAdmin: AlterClientQuotas and DescribeClientQuotas with
// franz-go's kadm: Kafka's entities (user, client id, both, defaults) and
// keys, validateOnly, Kafka's refusals, exact/default/any and strict
// filters, and the local quota file across a restart.
func TestClientQuotasAdmin(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := startTestBroker(t, "--data-dir", dir)
	adm := newAdmin(t, addr)

	mustAlterQuotas(t, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{
			{Key: "producer_byte_rate", Value: 1048576}, {Key: "request_percentage", Value: 12.5}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", ""), Ops: []kadm.AlterClientQuotaOp{
			{Key: "consumer_byte_rate", Value: 2048}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "", "client-id", "c1"), Ops: []kadm.AlterClientQuotaOp{
			{Key: "producer_byte_rate", Value: 4096}}},
	)
	// Refused as Kafka refuses them, each with INVALID_REQUEST; the valid
	// entry of the same request is applied.
	res := alterQuotas(t, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("ip", "10.0.0.1", "user", "bob"), Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 5}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "bob"), Ops: []kadm.AlterClientQuotaOp{{Key: "no_such_quota", Value: 5}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "bob2"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10.5}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "bob", "user", "carol"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "bob3"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: -1}}},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "c2"), Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 777}}},
	)
	// The answer lists entries in Kafka's order, not the request's.
	for _, r := range res {
		if r.Entity.String() == "{client-id=c2}" {
			if r.Err != nil {
				t.Fatalf("valid entry beside invalid ones: %v %s", r.Err, r.ErrMessage)
			}
		} else if !errors.Is(r.Err, kerr.InvalidRequest) || r.ErrMessage == "" {
			t.Errorf("invalid entry %s: %v %q; want INVALID_REQUEST with a reason", r.Entity, r.Err, r.ErrMessage)
		}
	}
	// validateOnly checks and stores nothing.
	vres, err := adm.ValidateAlterClientQuotas(ctxT(t, 10*time.Second), []kadm.AlterClientQuotaEntry{
		{Entity: quotaEntity("user", "dave"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 100}}},
		{Entity: quotaEntity("user", "erin"), Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 0}}},
	})
	validated := map[string]error{}
	for _, r := range vres {
		validated[r.Entity.String()] = r.Err
	}
	if err != nil || len(vres) != 2 || validated["{user=dave}"] != nil || !errors.Is(validated["{user=erin}"], kerr.InvalidRequest) {
		t.Fatalf("ValidateAlterClientQuotas = %v, %v; want dave ok, erin INVALID_REQUEST", vres, err)
	}

	// Kafka's order of entities, components and values (as
	// actors/quota/testdata/KafkaOrder.java prints it).
	all := []string{
		"{client-id=c2}: consumer_byte_rate=777.000000",
		"{user=alice}: request_percentage=12.500000 producer_byte_rate=1048576.000000",
		"{client-id=c1, user=<default>}: producer_byte_rate=4096.000000",
		"{client-id=<default>}: consumer_byte_rate=2048.000000",
	}
	sameLines(t, "describe everything", describedQuotas(t, adm, false), all)
	sameLines(t, "strict user=alice", describedQuotas(t, adm, true,
		kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("alice"), MatchType: 0}), all[1:2])
	sameLines(t, "any user", describedQuotas(t, adm, false,
		kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 2}), all[1:3])
	sameLines(t, "any user, strict", describedQuotas(t, adm, true,
		kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 2}), all[1:2])
	sameLines(t, "default client-id", describedQuotas(t, adm, false,
		kadm.DescribeClientQuotaComponent{Type: "client-id", MatchType: 1}), all[3:])
	sameLines(t, "client-id c1 with any user", describedQuotas(t, adm, true,
		kadm.DescribeClientQuotaComponent{Type: "user", MatchType: 2},
		kadm.DescribeClientQuotaComponent{Type: "client-id", MatchName: strp("c1")}), all[2:3])
	if _, err := adm.DescribeClientQuotas(ctxT(t, 10*time.Second), false, []kadm.DescribeClientQuotaComponent{
		{Type: "user", MatchType: 2}, {Type: "user", MatchType: 1}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("filter naming user twice: %v; want INVALID_REQUEST", err)
	}

	// The quotas live in <data-dir>/quotas.json: a restarted broker has them.
	stop()
	_, addr = testBroker(t, "--data-dir", dir)
	adm = newAdmin(t, addr)
	sameLines(t, "after restart", describedQuotas(t, adm, false), all)
	// Removing every key of an entity removes it.
	mustAlterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "alice"), Ops: []kadm.AlterClientQuotaOp{
		{Key: "producer_byte_rate", Remove: true}, {Key: "request_percentage", Remove: true}}})
	sameLines(t, "after removal", describedQuotas(t, adm, false), []string{all[0], all[2], all[3]})
}

// TestClientQuotasKafkaOrder: kadm reads AlterClientQuotas and
// DescribeClientQuotas answers in Kafka's order, which clients compare
// whole (@platformatic/kafka's admin tests; each expectation as
// actors/quota/testdata/KafkaOrder.java prints it): entries by their
// entities' hashes, client-id before user, the values of one change in
// HashMap order.
func TestClientQuotasKafkaOrder(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ops := []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1000}, {Key: "consumer_byte_rate", Value: 1000}, {Key: "request_percentage", Value: 0.5}}
	var entities []string
	for _, r := range alterQuotas(t, adm,
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "User1"), Ops: ops},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", "User1", "client-id", "Client1"), Ops: ops},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "c1"), Ops: ops[:1]},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("user", ""), Ops: ops[:1]},
		kadm.AlterClientQuotaEntry{Entity: quotaEntity("ip", "10.0.0.1"), Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 5}}},
	) {
		if r.Err != nil {
			t.Fatalf("AlterClientQuotas %s: %v", r.Entity, r.Err)
		}
		entities = append(entities, r.Entity.String())
	}
	sameLines(t, "AlterClientQuotas' entries", entities,
		[]string{"{client-id=c1}", "{user=User1}", "{user=<default>}", "{client-id=Client1, user=User1}", "{ip=10.0.0.1}"})
	sameLines(t, "user User1", describedQuotas(t, adm, false, kadm.DescribeClientQuotaComponent{Type: "user", MatchName: strp("User1")}), []string{
		"{user=User1}: consumer_byte_rate=1000.000000 request_percentage=0.500000 producer_byte_rate=1000.000000",
		"{client-id=Client1, user=User1}: consumer_byte_rate=1000.000000 request_percentage=0.500000 producer_byte_rate=1000.000000",
	})
}

// TestAlterClientQuotasDuplicates: AlterClientQuotas answers each entity
// once, as Kafka's controller (its results map): an entity named again
// (its components in another order too), or an entry naming a key twice,
// is ignored and its entity answered INVALID_REQUEST "Ignoring duplicate
// entity", printed as Kafka prints it; an earlier entry of a repeated
// entity is still applied.
func TestAlterClientQuotasDuplicates(t *testing.T) {
	_, addr := testBroker(t)
	cl := newClient(t, addr)
	entry := func(ops map[string]float64, dupKey bool, kv ...string) kmsg.AlterClientQuotasRequestEntry {
		e := kmsg.NewAlterClientQuotasRequestEntry()
		for i := 0; i < len(kv); i += 2 {
			c := kmsg.NewAlterClientQuotasRequestEntryEntity()
			c.Type = kv[i]
			if kv[i+1] != "" {
				c.Name = strp(kv[i+1])
			}
			e.Entity = append(e.Entity, c)
		}
		for k, v := range ops {
			o := kmsg.NewAlterClientQuotasRequestEntryOp()
			o.Key, o.Value = k, v
			e.Ops = append(e.Ops, o)
			if dupKey {
				e.Ops = append(e.Ops, o)
			}
		}
		return e
	}
	req := kmsg.NewPtrAlterClientQuotasRequest()
	req.Entries = []kmsg.AlterClientQuotasRequestEntry{
		entry(map[string]float64{"producer_byte_rate": 1000}, false, "user", "alice", "client-id", "c2"),
		entry(map[string]float64{"consumer_byte_rate": 5}, true, "client-id", "c1"),
		entry(map[string]float64{"producer_byte_rate": 2000}, false, "client-id", "c2", "user", "alice"),
		entry(map[string]float64{"consumer_byte_rate": 7}, false, "user", "bob", "client-id", ""),
	}
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range resp.Entries {
		var cs []string
		for _, c := range e.Entity {
			name := "<default>"
			if c.Name != nil {
				name = *c.Name
			}
			cs = append(cs, c.Type+"="+name)
		}
		msg := ""
		if e.ErrorMessage != nil {
			msg = *e.ErrorMessage
		}
		got = append(got, fmt.Sprintf("%s: %d %s", strings.Join(cs, ","), e.ErrorCode, msg))
	}
	sort.Strings(got)
	invalid := kerr.InvalidRequest.Code
	want := []string{
		"client-id=<default>,user=bob: 0 ",
		fmt.Sprintf("client-id=c1: %d Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c1})", invalid),
		fmt.Sprintf("client-id=c2,user=alice: %d Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c2, user=alice})", invalid),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("AlterClientQuotas answered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sameLines(t, "the quotas", describedQuotas(t, newAdmin(t, addr), false), []string{
		"{client-id=c2, user=alice}: producer_byte_rate=1000.000000",
		"{client-id=<default>, user=bob}: consumer_byte_rate=7.000000",
	})
}

// TestClientQuotasSarama: sarama's ClusterAdmin alters and describes
// client quotas.
func TestClientQuotasSarama(t *testing.T) {
	_, addr := testBroker(t)
	admin, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig(sarama.V2_8_0_0))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	entity := []sarama.QuotaEntityComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Name: "sam"},
		{EntityType: sarama.QuotaEntityClientID, MatchType: sarama.QuotaMatchDefault}}
	if err := admin.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "consumer_byte_rate", Value: 65536}, false); err != nil {
		t.Fatal(err)
	}
	if err := admin.AlterClientQuotas(entity, sarama.ClientQuotasOp{Key: "bogus", Value: 1}, false); err == nil ||
		!strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown key: %v; want an error naming it", err)
	}
	got, err := admin.DescribeClientQuotas([]sarama.QuotaFilterComponent{{EntityType: sarama.QuotaEntityUser, MatchType: sarama.QuotaMatchExact, Match: "sam"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka lists client-id before user.
	if len(got) != 1 || got[0].Values["consumer_byte_rate"] != 65536 || len(got[0].Entity) != 2 ||
		got[0].Entity[0].EntityType != sarama.QuotaEntityClientID || got[0].Entity[0].MatchType != sarama.QuotaMatchDefault ||
		got[0].Entity[1].EntityType != sarama.QuotaEntityUser || got[0].Entity[1].Name != "sam" {
		t.Fatalf("DescribeClientQuotas = %+v; want {client-id=<default>, user=sam} consumer_byte_rate=65536", got)
	}
}

// throttleHook records the throttle times kgo reads from responses.
type throttleHook struct {
	n     atomic.Int64
	total atomic.Int64 // ns
}

func (h *throttleHook) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
		h.total.Add(int64(d))
	}
}

// Quota windows short enough for a test: 5 samples of 200ms.
var quotaTestWindow = []string{"--quota-window-num", "5", "--quota-window-size", "200ms"}

const quotaTestWindowSpan = time.Second

// produceFor produces 1 KiB records as fast as cl takes them for d and
// returns the bytes acknowledged within it.
func produceFor(t *testing.T, cl *kgo.Client, topic string, d time.Duration) (int64, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var acked atomic.Int64
	var failed atomic.Value
	start := time.Now()
	stopAt := start.Add(d)
	var wg sync.WaitGroup
	for time.Now().Before(stopAt) {
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: randomBytes(1024)}, func(r *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					failed.Store(err)
				}
				return
			}
			if time.Now().Before(stopAt) {
				acked.Add(int64(len(r.Value)))
			}
		})
	}
	elapsed := time.Since(start)
	cancel()
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return acked.Load(), elapsed
}

// TestProduceQuotaThrottles: a franz-go producer sending as fast as it can
// under a producer_byte_rate quota gets throttle_time_ms in its Produce
// answers, and what the broker accepts over the run stays within the
// quota (plus the measuring window's allowance and one request); a client
// id without a quota is never throttled.
func TestProduceQuotaThrottles(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, append([]string{"--http-addr", httpAddr}, quotaTestWindow...)...)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctxT(t, 10*time.Second), 1, 1, nil, "quota-produce"); err != nil {
		t.Fatal(err)
	}
	const bound = 100_000 // bytes per second
	mustAlterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "limited"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: bound}}})

	free := &throttleHook{}
	cl := newClient(t, addr, kgo.ClientID("free"), kgo.WithHooks(free), kgo.DefaultProduceTopic("quota-produce"))
	for i := 0; i < 200; i++ {
		if err := cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Value: make([]byte, 1024)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if free.n.Load() != 0 {
		t.Fatalf("client without a quota throttled %d times", free.n.Load())
	}

	limited := &throttleHook{}
	const maxBatch = 16 << 10
	pl := newClient(t, addr, kgo.ClientID("limited"), kgo.WithHooks(limited), kgo.ProducerBatchMaxBytes(maxBatch),
		kgo.ProducerLinger(0), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	acked, elapsed := produceFor(t, pl, "quota-produce", 3*time.Second)
	max := float64(bound)*(elapsed.Seconds()+quotaTestWindowSpan.Seconds())*1.2 + maxBatch
	t.Logf("limited producer: %d bytes acknowledged in %s (quota %d B/s, bound %.0f), %d throttled answers totalling %s",
		acked, elapsed, bound, max, limited.n.Load(), time.Duration(limited.total.Load()))
	if limited.n.Load() == 0 {
		t.Fatal("no Produce answer carried a throttle time")
	}
	if acked == 0 || float64(acked) > max {
		t.Fatalf("%d bytes acknowledged in %s under a %d B/s quota; want between 1 and %.0f", acked, elapsed, bound, max)
	}
	checkThrottleMetrics(t, httpAddr, "produce")
}

// checkThrottleMetrics: /metrics counts throttled answers of kind.
func checkThrottleMetrics(t *testing.T, httpAddr, kind string) {
	t.Helper()
	_, fams := scrape(t, httpAddr)
	if v := sample(fams, "kaas_quota_throttled_requests_total", "kind", kind); v <= 0 {
		t.Errorf("kaas_quota_throttled_requests_total{kind=%q} = %v; want > 0", kind, v)
	}
	if v := sample(fams, "kaas_quota_throttle_seconds_total", "kind", kind); v <= 0 {
		t.Errorf("kaas_quota_throttle_seconds_total{kind=%q} = %v; want > 0", kind, v)
	}
}

// TestFetchQuotaThrottles: a franz-go consumer under a consumer_byte_rate
// quota gets throttle_time_ms in its Fetch answers and receives no more
// than the quota allows over the run, yet makes progress.
func TestFetchQuotaThrottles(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, append([]string{"--http-addr", httpAddr}, quotaTestWindow...)...)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctxT(t, 10*time.Second), 1, 1, nil, "quota-fetch"); err != nil {
		t.Fatal(err)
	}
	const bound = 100_000
	mustAlterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "slowreader"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: bound}}})
	// Batches well under what the quota allows in one window (the cap of
	// one Fetch answer under quota).
	pl := newClient(t, addr, kgo.DefaultProduceTopic("quota-fetch"), kgo.ProducerBatchMaxBytes(16<<10))
	rs := make([]*kgo.Record, 1000)
	for i := range rs {
		rs[i] = &kgo.Record{Value: randomBytes(1024)}
	}
	if err := pl.ProduceSync(ctxT(t, 30*time.Second), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	hook := &throttleHook{}
	cl := newClient(t, addr, kgo.ClientID("slowreader"), kgo.WithHooks(hook), kgo.ConsumeTopics("quota-fetch"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	start := time.Now()
	var got int64
	for time.Since(start) < 2500*time.Millisecond {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got += int64(len(r.Value)) })
	}
	elapsed := time.Since(start)
	// One answer may hold the quota's whole window (the cap the broker
	// applies to a fetch under quota).
	max := float64(bound)*(elapsed.Seconds()+quotaTestWindowSpan.Seconds())*1.2 + bound*quotaTestWindowSpan.Seconds()
	t.Logf("slow reader: %d bytes in %s (quota %d B/s, bound %.0f), %d throttled answers totalling %s",
		got, elapsed, bound, max, hook.n.Load(), time.Duration(hook.total.Load()))
	if hook.n.Load() == 0 {
		t.Fatal("no Fetch answer carried a throttle time")
	}
	if got == 0 || float64(got) > max {
		t.Fatalf("%d bytes consumed in %s under a %d B/s quota; want between 1 and %.0f", got, elapsed, bound, max)
	}
	checkThrottleMetrics(t, httpAddr, "fetch")
}

// apiVersionsOver opens a connection from local (nil: any) to addr, asks
// ApiVersions and reports whether an answer came back before the broker
// closed the connection.
func apiVersionsOver(t *testing.T, local net.Addr, addr string) bool {
	t.Helper()
	d := net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("conn-quota")).AppendRequest(nil, req, 1)); err != nil {
		return false
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	_, err = io.ReadFull(c, size[:])
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("no answer and no close within 30 s")
	}
	return err == nil
}

// TestConnectionCreationRateQuota: an ip quota (KIP-612) set with kadm is
// described back; connections from that address over its
// connection_creation_rate are closed unanswered, while another address
// (no default ip quota) is served; removing the quota serves every
// connection again.
func TestConnectionCreationRateQuota(t *testing.T) {
	_, addr, _ := startTestBroker(t, "--quota-window-num", "2", "--quota-window-size", "1s")
	adm := newAdmin(t, addr)
	mustAlterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("ip", "127.0.0.1"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 1}}})
	sameLines(t, "describe ip", describedQuotas(t, adm, false, kadm.DescribeClientQuotaComponent{Type: "ip", MatchType: 2}),
		[]string{"{ip=127.0.0.1}: connection_creation_rate=1.000000"})

	one := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	served, closed := 0, 0
	for range 8 {
		if apiVersionsOver(t, one, addr) {
			served++
		} else {
			closed++
		}
	}
	// One a second measured over at least one second: of 8 connections
	// opened back to back, the first is served and most are closed.
	if served == 0 || closed == 0 {
		t.Fatalf("8 connections from 127.0.0.1 at 1/s: %d served, %d closed; want both", served, closed)
	}
	other := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}
	for i := range 8 {
		if !apiVersionsOver(t, other, addr) {
			t.Fatalf("connection %d from 127.0.0.2, which has no quota, was closed", i)
		}
	}

	mustAlterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("ip", "127.0.0.1"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Remove: true}}})
	for i := range 8 {
		if !apiVersionsOver(t, one, addr) {
			t.Fatalf("connection %d from 127.0.0.1 after its quota was removed: closed", i)
		}
	}
}

// mutationClient is a client of id id whose requests go out at most at
// the versions of maxVersions (key, version pairs).
func mutationClient(t *testing.T, addr, id string, maxVersions ...int16) *kgo.Client {
	v := kversion.Tip()
	for i := 0; i < len(maxVersions); i += 2 {
		v.SetMaxKeyVersion(maxVersions[i], maxVersions[i+1])
	}
	return newClient(t, addr, kgo.ClientID(id), kgo.MaxVersions(v))
}

// createTopicsRaw sends one CreateTopics of the named topics (name,
// partitions pairs) and returns the answer.
func createTopicsRaw(t *testing.T, cl *kgo.Client, topics ...any) *kmsg.CreateTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10_000
	for i := 0; i < len(topics); i += 2 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topics[i].(string), int32(topics[i+1].(int)), 1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctxT(t, 30*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// createdCodes is each topic's error code, by name.
func createdCodes(resp *kmsg.CreateTopicsResponse) map[string]int16 {
	out := map[string]int16{}
	for _, rt := range resp.Topics {
		out[rt.Topic] = rt.ErrorCode
	}
	return out
}

// TestControllerMutationQuota: controller_mutation_rate (KIP-599) bounds
// the partitions a client creates and deletes. Each client id below has
// its own quota of 1 partition per second (a burst of one window's worth,
// 1 partition), so the bucket a request empties stays empty for many
// seconds and no answer depends on the test's speed:
//   - strict versions (CreateTopics v7, DeleteTopics v6, CreatePartitions
//     v3): the request that empties the bucket is served whole and not
//     throttled; the next one gets THROTTLING_QUOTA_EXCEEDED for every
//     topic, with the time owed as throttle_time_ms, and changes nothing;
//   - CreateTopics v5 (before KIP-599's version) is never refused, only
//     throttled;
//   - a topic refused for its own reason (it exists) counts nothing;
//   - validate-only requests count, as on Kafka's controller;
//   - the bucket refills at the quota: a client refused at first is
//     admitted once it has waited out its throttle;
//   - a client id without a quota is never refused.
func TestControllerMutationQuota(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, append([]string{"--http-addr", httpAddr}, quotaTestWindow...)...)
	adm := newAdmin(t, addr)
	var entries []kadm.AlterClientQuotaEntry
	for _, id := range []string{"strict", "old", "deleter", "grower", "validator"} {
		entries = append(entries, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", id),
			Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 1}}})
	}
	entries = append(entries, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "refill"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "controller_mutation_rate", Value: 5}}})
	mustAlterQuotas(t, adm, entries...)
	exists := func(name string) bool {
		t.Helper()
		td, err := adm.ListTopics(ctxT(t, 10*time.Second), name)
		if err != nil {
			t.Fatal(err)
		}
		return td.Has(name)
	}
	throttled := kerr.ThrottlingQuotaExceeded.Code

	// Strict CreateTopics: 1 token, then 20 partitions admitted (the bucket
	// was not empty), then nothing.
	strict := mutationClient(t, addr, "strict")
	resp := createTopicsRaw(t, strict, "mq-a1", 20)
	if c := createdCodes(resp)["mq-a1"]; c != 0 || resp.ThrottleMillis != 0 {
		t.Fatalf("first CreateTopics: code %d, throttle %d ms; want 0, 0 (the bucket was full)", c, resp.ThrottleMillis)
	}
	resp = createTopicsRaw(t, strict, "mq-a2", 1, "mq-a3", 1)
	if got := createdCodes(resp); got["mq-a2"] != throttled || got["mq-a3"] != throttled {
		t.Fatalf("CreateTopics on an empty bucket: %v; want THROTTLING_QUOTA_EXCEEDED for both", got)
	}
	// 19 partitions owed at 1/s.
	if resp.ThrottleMillis < 10_000 || resp.ThrottleMillis > 19_000 {
		t.Fatalf("throttle_time_ms = %d; want the ~19 s the bucket owes", resp.ThrottleMillis)
	}
	if exists("mq-a2") || exists("mq-a3") {
		t.Fatal("a refused topic was created")
	}

	// Before v6, CreateTopics is throttled but served.
	old := mutationClient(t, addr, "old", kmsg.CreateTopics.Int16(), 5)
	resp = createTopicsRaw(t, old, "mq-b1", 20)
	if c := createdCodes(resp)["mq-b1"]; c != 0 || resp.ThrottleMillis < 10_000 {
		t.Fatalf("CreateTopics v5 emptying the bucket: code %d, throttle %d ms; want 0 and ~19 s", c, resp.ThrottleMillis)
	}
	old2 := mutationClient(t, addr, "old", kmsg.CreateTopics.Int16(), 5) // a new connection: the first is muted
	resp = createTopicsRaw(t, old2, "mq-b2", 1)
	if c := createdCodes(resp)["mq-b2"]; c != 0 || resp.ThrottleMillis < 10_000 {
		t.Fatalf("CreateTopics v5 on an empty bucket: code %d, throttle %d ms; want 0 and ~20 s", c, resp.ThrottleMillis)
	}
	if !exists("mq-b1") || !exists("mq-b2") {
		t.Fatal("a CreateTopics v5 topic is missing")
	}

	// Strict DeleteTopics: mq-a1's 20 partitions empty the bucket.
	deleter := mutationClient(t, addr, "deleter")
	del := func(name string) (int16, int32) {
		t.Helper()
		req := kmsg.NewPtrDeleteTopicsRequest()
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10_000
		resp, err := req.RequestWith(ctxT(t, 30*time.Second), deleter)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode, resp.ThrottleMillis
	}
	if c, ms := del("mq-a1"); c != 0 || ms != 0 {
		t.Fatalf("DeleteTopics mq-a1: code %d, throttle %d ms; want 0, 0", c, ms)
	}
	if c, ms := del("mq-b1"); c != throttled || ms < 10_000 {
		t.Fatalf("DeleteTopics on an empty bucket: code %d, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED and ~19 s", c, ms)
	}
	if exists("mq-a1") || !exists("mq-b1") {
		t.Fatal("want mq-a1 deleted and mq-b1 kept")
	}

	// Strict CreatePartitions: a topic that exists counts nothing (its
	// TOPIC_ALREADY_EXISTS comes first), growing by 14 empties the bucket.
	grower := mutationClient(t, addr, "grower")
	if c := createdCodes(createTopicsRaw(t, grower, "mq-b2", 30))["mq-b2"]; c != kerr.TopicAlreadyExists.Code {
		t.Fatalf("CreateTopics of an existing topic: code %d; want TOPIC_ALREADY_EXISTS", c)
	}
	grow := func(name string, count int32) (int16, int32) {
		t.Helper()
		req := kmsg.NewPtrCreatePartitionsRequest()
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10_000
		resp, err := req.RequestWith(ctxT(t, 30*time.Second), grower)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].ErrorCode, resp.ThrottleMillis
	}
	if c, ms := grow("mq-b2", 15); c != 0 || ms != 0 {
		t.Fatalf("CreatePartitions to 15: code %d, throttle %d ms; want 0, 0", c, ms)
	}
	if c, ms := grow("mq-b2", 16); c != throttled || ms < 8_000 {
		t.Fatalf("CreatePartitions on an empty bucket: code %d, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED and ~13 s", c, ms)
	}
	// The refused growth changed nothing: growing to 16 is still valid.
	if vres, err := adm.ValidateUpdatePartitions(ctxT(t, 10*time.Second), 16, "mq-b2"); err != nil || vres["mq-b2"].Err != nil {
		t.Fatalf("validate growing mq-b2 to 16 after the refusal: %v, %v; want valid (15 partitions)", vres, err)
	}

	// Validate-only CreateTopics counts as on Kafka's controller.
	validator := kadm.NewClient(mutationClient(t, addr, "validator"))
	if _, err := validator.ValidateCreateTopics(ctxT(t, 10*time.Second), 20, 1, nil, "mq-v1"); err != nil {
		t.Fatal(err)
	}
	vres, err := validator.ValidateCreateTopics(ctxT(t, 10*time.Second), 1, 1, nil, "mq-v2")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(vres["mq-v2"].Err, kerr.ThrottlingQuotaExceeded) {
		t.Fatalf("validate-only CreateTopics after 20 partitions: %v; want THROTTLING_QUOTA_EXCEEDED", vres["mq-v2"].Err)
	}

	// 5 partitions/s, a burst of 5: 25 partitions leave 20 owed (4 s); a
	// client refused meanwhile is admitted once the bucket refills.
	refill := mutationClient(t, addr, "refill")
	if c := createdCodes(createTopicsRaw(t, refill, "mq-r1", 25))["mq-r1"]; c != 0 {
		t.Fatalf("CreateTopics mq-r1: code %d", c)
	}
	refusals := 0
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp := createTopicsRaw(t, refill, "mq-r2", 1)
		c := createdCodes(resp)["mq-r2"]
		if c == 0 {
			break
		}
		if c != throttled || resp.ThrottleMillis <= 0 || resp.ThrottleMillis > 4000 {
			t.Fatalf("CreateTopics mq-r2: code %d, throttle %d ms; want THROTTLING_QUOTA_EXCEEDED within 4 s", c, resp.ThrottleMillis)
		}
		refusals++
		if time.Now().After(deadline) {
			t.Fatal("mq-r2 still refused after 30 s at 5 partitions/s")
		}
		time.Sleep(time.Duration(resp.ThrottleMillis) * time.Millisecond)
	}
	t.Logf("mq-r2 refused %d times before the bucket refilled", refusals)

	// A client id without a quota.
	free := mutationClient(t, addr, "free")
	if c := createdCodes(createTopicsRaw(t, free, "mq-f1", 50))["mq-f1"]; c != 0 {
		t.Fatalf("CreateTopics without a quota: code %d", c)
	}
	checkThrottleMetrics(t, httpAddr, "controller_mutation")
}

// TestRequestQuotaThrottles: request_percentage (KIP-124) bounds the time
// the broker spends on a client's requests. A client id allowed 0.001 % of
// one thread (10 µs per second) sending Metadata requests back to back is
// throttled within a few requests, each throttle at most one sample window
// (Kafka's bound for request quotas); the broker still answers it; a client
// id without a quota sending the same requests is never throttled.
func TestRequestQuotaThrottles(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, append([]string{"--http-addr", httpAddr}, quotaTestWindow...)...)
	adm := newAdmin(t, addr)
	mustAlterQuotas(t, adm, kadm.AlterClientQuotaEntry{Entity: quotaEntity("client-id", "busy"),
		Ops: []kadm.AlterClientQuotaOp{{Key: "request_percentage", Value: 0.001}}})
	metadata := func(cl *kgo.Client) int32 {
		t.Helper()
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Brokers) != 1 {
			t.Fatalf("Metadata listed %d brokers; want 1", len(resp.Brokers))
		}
		return resp.ThrottleMillis
	}

	free := newClient(t, addr, kgo.ClientID("free"))
	for i := 0; i < 100; i++ {
		if ms := metadata(free); ms != 0 {
			t.Fatalf("request %d of a client without a quota: throttle_time_ms %d", i, ms)
		}
	}

	busy := newClient(t, addr, kgo.ClientID("busy"))
	window := int32(200) // quotaTestWindow's sample
	throttled := 0
	for i := 0; i < 50 && throttled < 3; i++ {
		ms := metadata(busy)
		if ms > window {
			t.Fatalf("throttle_time_ms %d; want at most one window (%d ms)", ms, window)
		}
		if ms > 0 {
			throttled++
		}
	}
	if throttled < 3 {
		t.Fatalf("%d of 50 Metadata answers throttled at 0.001 %% of a thread; want at least 3", throttled)
	}
	checkThrottleMetrics(t, httpAddr, "request")
}
