package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
)

func sp(s string) *string { return &s }

func TestCreateTopicsValidation(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 10*time.Second)
	cases := []struct {
		name  string
		topic string
		parts int32
		cfg   map[string]*string
		want  error
	}{
		{"ok", "good-topic", 3, map[string]*string{"retention.ms": sp("60000")}, nil},
		{"unknown config", "t1", 1, map[string]*string{"no.such.config": sp("1")}, kerr.InvalidConfig},
		{"bad config value", "t2", 1, map[string]*string{"retention.ms": sp("soon")}, kerr.InvalidConfig},
		{"compaction accepted", "t3", 1, map[string]*string{"cleanup.policy": sp("compact")}, nil},
		{"accepted without effect", "no-effect", 1, map[string]*string{"min.cleanable.dirty.ratio": sp("0.9"),
			"compression.zstd.level": sp("-5"), "leader.replication.throttled.replicas": sp("*"), "local.retention.ms": sp("-2")}, nil},
		{"out of range", "t5", 1, map[string]*string{"compression.lz4.level": sp("18")}, kerr.InvalidConfig},
		{"tiered storage refused", "t6", 1, map[string]*string{"remote.storage.enable": sp("true")}, kerr.InvalidConfig},
		{"recompression accepted", "t7", 1, map[string]*string{"compression.type": sp("zstd")}, nil},
		{"unknown codec", "t9", 1, map[string]*string{"compression.type": sp("brotli")}, kerr.InvalidConfig},
		{"removed in Kafka 4", "t8", 1, map[string]*string{"message.format.version": sp("3.0")}, kerr.InvalidConfig},
		{"bad name", "bad/name", 1, nil, kerr.InvalidTopicException},
		{"dot name", "..", 1, nil, kerr.InvalidTopicException},
		{"zero partitions", "t4", 0, nil, kerr.InvalidPartitions},
		{"exists", "good-topic", 1, nil, kerr.TopicAlreadyExists},
		{"dotted", "orders.v1", 1, nil, nil},
		// Kafka's metric names read '.' as '_': a name equal to a topic's
		// but for them is refused.
		{"collides", "orders_v1", 1, nil, kerr.InvalidTopicException},
		{"collides with an internal topic", "__consumer.offsets", 1, nil, kerr.InvalidTopicException},
		{"no collision without '.' or '_'", "ordersv1", 1, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := adm.CreateTopic(ctx, tc.parts, 1, tc.cfg, tc.topic)
			if err != nil && resp.Err == nil {
				t.Fatal(err)
			}
			if tc.want == nil && resp.Err != nil || tc.want != nil && !errors.Is(resp.Err, tc.want) {
				t.Fatalf("got %v (%s), want %v", resp.Err, resp.ErrMessage, tc.want)
			}
		})
	}
	if resp, _ := adm.CreateTopic(ctx, 1, 1, nil, "orders_v1"); resp.ErrMessage != "Topic 'orders_v1' collides with existing topic: orders.v1" {
		t.Fatalf("collision message: %q", resp.ErrMessage)
	}
	// Within one request the first of two colliding names is created.
	both, err := adm.CreateTopics(ctx, 1, 1, nil, "pay.in", "pay_in")
	if err != nil || both["pay.in"].Err != nil || !errors.Is(both["pay_in"].Err, kerr.InvalidTopicException) {
		t.Fatalf("one request: %v, pay.in %v, pay_in %v", err, both["pay.in"].Err, both["pay_in"].Err)
	}
	// Once the colliding topic is deleted the name is free.
	if dr, err := adm.DeleteTopics(ctx, "orders.v1"); err != nil || dr.Error() != nil {
		t.Fatalf("delete: %v %v", err, dr.Error())
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "orders_v1"); err != nil || resp.Err != nil {
		t.Fatalf("after the delete: %v %v", err, resp.Err)
	}
	// validate-only creates nothing
	vresp, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "validated")
	if err != nil || vresp.Error() != nil {
		t.Fatalf("validate only: %v %v", err, vresp.Error())
	}
	td, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if td.Has("validated") || !td.Has("good-topic") || len(td["good-topic"].Partitions) != 3 {
		t.Fatalf("topics after creates: %v", td.Names())
	}
	if td["good-topic"].ID == (kadm.TopicID{}) {
		t.Fatal("topic has no id")
	}
}

func TestDeleteAndGrowTopics(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 10*time.Second)
	createTopic(t, addr, "grow", 2, nil)
	cr, err := adm.CreatePartitions(ctx, 3, "grow")
	if err != nil || cr.Error() != nil {
		t.Fatalf("grow by 3: %v %v", err, cr.Error())
	}
	if bad, _ := adm.UpdatePartitions(ctx, 4, "grow"); bad["grow"].Err != kerr.InvalidPartitions {
		t.Fatalf("shrink to 4: %v", bad["grow"].Err)
	}
	td, _ := adm.ListTopics(ctx, "grow")
	if n := len(td["grow"].Partitions); n != 5 {
		t.Fatalf("partitions after grow: %d", n)
	}
	// the new partitions serve produce
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "grow", Partition: 4, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatalf("produce to new partition: %v", err)
	}
	dr, err := adm.DeleteTopics(ctx, "grow", "missing")
	if err != nil {
		t.Fatal(err)
	}
	if dr["grow"].Err != nil || dr["missing"].Err != kerr.UnknownTopicOrPartition {
		t.Fatalf("delete: grow=%v missing=%v", dr["grow"].Err, dr["missing"].Err)
	}
	td, _ = adm.ListTopics(ctx)
	if td.Has("grow") {
		t.Fatal("deleted topic still listed")
	}
	// recreated with the same name: a new id and an empty log
	createTopic(t, addr, "grow", 1, nil)
	ends, err := adm.ListEndOffsets(ctx, "grow")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("grow", 0); o.Offset != 0 {
		t.Fatalf("recreated topic has end offset %d", o.Offset)
	}
}

func TestDescribeAndAlterConfigs(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 10*time.Second)
	createTopic(t, addr, "cfg", 1, map[string]*string{"retention.ms": sp("120000")})

	cl := newClient(t, addr)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "cfg"
	res.ConfigNames = []string{"retention.ms", "segment.bytes"}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe: %v %+v", err, resp)
	}
	byName := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		byName[c.Name] = c
	}
	if len(byName) != 2 {
		t.Fatalf("asked for 2 configs, got %d", len(byName))
	}
	ret := byName["retention.ms"]
	if *ret.Value != "120000" || ret.Source != kmsg.ConfigSourceDynamicTopicConfig || ret.Documentation == nil || *ret.Documentation == "" {
		t.Fatalf("retention.ms: %+v", ret)
	}
	if len(ret.ConfigSynonyms) < 2 || ret.ConfigSynonyms[0].Name != "retention.ms" || ret.ConfigSynonyms[len(ret.ConfigSynonyms)-1].Name != "log.retention.ms" {
		t.Fatalf("retention.ms synonyms: %+v", ret.ConfigSynonyms)
	}
	if seg := byName["segment.bytes"]; *seg.Value != "1073741824" || seg.Source != kmsg.ConfigSourceDefaultConfig || seg.ConfigType != kmsg.ConfigTypeInt {
		t.Fatalf("segment.bytes: %+v", seg)
	}

	// incremental: set one, delete another
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: sp("5000")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, "cfg")
	if err != nil || ar[0].Err != nil {
		t.Fatalf("incremental alter: %v %+v", err, ar)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rc[0].Configs {
		got[c.Key] = c.MaybeValue()
	}
	if got["max.message.bytes"] != "5000" || got["retention.ms"] != "604800000" {
		t.Fatalf("after alter: max.message.bytes=%s retention.ms=%s", got["max.message.bytes"], got["retention.ms"])
	}
	// every Kafka 4 topic config is listed with its default
	for name, def := range map[string]string{"min.cleanable.dirty.ratio": "0.5", "compression.zstd.level": "3",
		"message.timestamp.after.max.ms": "3600000", "remote.storage.enable": "false", "local.retention.bytes": "-2",
		"follower.replication.throttled.replicas": "", "max.compaction.lag.ms": "9223372036854775807"} {
		if v, ok := got[name]; !ok || v != def {
			t.Errorf("%s: described %q (listed %v), want default %q", name, v, ok, def)
		}
	}
	// the new max.message.bytes is enforced by the partition
	big := make([]byte, 8000)
	_, _ = rand.Read(big) // incompressible: kgo compresses batches
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "cfg", Value: big}).FirstErr(); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("produce over the altered limit: %v", err)
	}
	// invalid values are INVALID_CONFIG and change nothing
	ar, _ = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: sp("x")}}, "cfg")
	if ar[0].Err != kerr.InvalidConfig {
		t.Fatalf("invalid alter: %v", ar[0].Err)
	}
	// broker configs are described and read-only
	bc, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil || bc[0].Err != nil {
		t.Fatalf("broker configs: %v %v", err, bc)
	}
	found := false
	for _, c := range bc[0].Configs {
		if c.Key == "socket.request.max.bytes" && c.MaybeValue() == "104857600" {
			found = true
		}
	}
	if !found {
		t.Fatal("socket.request.max.bytes missing from broker configs")
	}
	if br, _ := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "num.partitions", Value: sp("3")}}, 0); br[0].Err != kerr.InvalidRequest {
		t.Fatalf("altering a broker config: %v", br[0].Err)
	}
	// legacy AlterConfigs replaces the whole topic config
	lr, err := adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.bytes", Value: sp("1000000")}}, "cfg")
	if err != nil || lr[0].Err != nil {
		t.Fatalf("legacy alter: %v %+v", err, lr)
	}
	rc, _ = adm.DescribeTopicConfigs(ctx, "cfg")
	for _, c := range rc[0].Configs {
		if c.Key == "max.message.bytes" && c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Fatalf("legacy alter kept max.message.bytes: %+v", c)
		}
	}
	alterRefusals(t, ctx, cl)
}

// alterRefusals checks what Kafka's ConfigAdminManager.preprocess refuses
// in AlterConfigs and IncrementalAlterConfigs, with its messages, and that
// a refused resource changes nothing while another in the request is
// applied: a resource named twice (each time), a config named twice in a
// resource (kafka-configs.sh sends a SET and a DELETE of a config given to
// both --add-config and --delete-config), and a config set to no value.
func alterRefusals(t *testing.T, ctx context.Context, cl *kgo.Client) {
	t.Helper()
	b := cl.Broker(0) // as built: a client would split the request by resource
	deref := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	type op struct {
		name  string
		value *string
		del   bool
	}
	type res struct {
		typ  kmsg.ConfigResourceType
		name string
		ops  []op
	}
	// send sends req as built and lists each resource's answer as
	// "CODE MESSAGE".
	send := func(req kmsg.Request) []string {
		resp, err := b.Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		answer := func(code int16, msg *string) { out = append(out, fmt.Sprintf("%d %s", code, deref(msg))) }
		switch resp := resp.(type) {
		case *kmsg.IncrementalAlterConfigsResponse:
			for _, rr := range resp.Resources {
				answer(rr.ErrorCode, rr.ErrorMessage)
			}
		case *kmsg.AlterConfigsResponse:
			for _, rr := range resp.Resources {
				answer(rr.ErrorCode, rr.ErrorMessage)
			}
		}
		return out
	}
	incremental := func(rs ...res) []string {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		for _, r := range rs {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			for _, o := range r.ops {
				c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				c.Name, c.Value = o.name, o.value
				if o.del {
					c.Op = kmsg.IncrementalAlterConfigOpDelete
				}
				rr.Configs = append(rr.Configs, c)
			}
			req.Resources = append(req.Resources, rr)
		}
		return send(req)
	}
	legacy := func(rs ...res) []string {
		req := kmsg.NewPtrAlterConfigsRequest()
		for _, r := range rs {
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			for _, o := range r.ops {
				c := kmsg.NewAlterConfigsRequestResourceConfig()
				c.Name, c.Value = o.name, o.value
				rr.Configs = append(rr.Configs, c)
			}
			req.Resources = append(req.Resources, rr)
		}
		return send(req)
	}
	const (
		ok        = "0 "
		twice     = "42 Each resource must appear at most once."
		duplicate = "42 Error due to duplicate config keys"
	)
	topic := kmsg.ConfigResourceTypeTopic
	broker := kmsg.ConfigResourceTypeBroker
	set := func(name, v string) op { return op{name: name, value: &v} }
	for _, c := range []struct {
		what string
		got  []string
		want []string
	}{
		{"incremental: SET and DELETE of one config", incremental(res{topic, "cfg", []op{set("retention.ms", "1000"), {name: "retention.ms", del: true}}}), []string{duplicate}},
		{"incremental: a config set twice, on a broker", incremental(res{broker, "0", []op{set("log.retention.ms", "1000"), set("log.retention.ms", "2000")}}), []string{duplicate}},
		{"incremental: SET without a value", incremental(res{topic, "cfg", []op{{name: "retention.ms"}, {name: "segment.ms"}}}), []string{"42 Null value not supported for : retention.ms, segment.ms"}},
		{"incremental: DELETE without a value", incremental(res{topic, "cfg", []op{{name: "retention.bytes", del: true}}}), []string{ok}},
		{"incremental: a resource twice, another applied", incremental(res{topic, "cfg", []op{set("retention.ms", "1000")}}, res{broker, "0", []op{set("log.retention.ms", "1000")}}, res{topic, "cfg", []op{set("segment.ms", "1000")}}), []string{twice, ok, twice}},
		{"legacy: a config twice", legacy(res{topic, "cfg", []op{set("retention.ms", "1000"), set("retention.ms", "2000")}}), []string{duplicate}},
		{"legacy: a config without a value", legacy(res{topic, "cfg", []op{set("segment.ms", "1000"), {name: "retention.ms"}}}), []string{"42 Null value not supported for : retention.ms"}},
		{"legacy: a resource twice", legacy(res{topic, "cfg", nil}, res{topic, "cfg", nil}), []string{twice, twice}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
		}
	}
	// Only the broker's log.retention.ms (applied above) changed, which
	// the topic's retention.ms follows.
	desc := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		key  string
	}{{topic, "cfg", "retention.ms"}, {topic, "cfg", "segment.ms"}, {broker, "0", "log.retention.ms"}} {
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName, dr.ConfigNames = r.typ, r.name, []string{r.key}
		desc.Resources = append(desc.Resources, dr)
	}
	dresp, err := desc.RequestWith(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range dresp.Resources {
		for _, c := range r.Configs {
			got = append(got, fmt.Sprintf("%s=%s (%v)", c.Name, deref(c.Value), c.Source))
		}
	}
	if want := []string{"retention.ms=1000 (DYNAMIC_BROKER_CONFIG)", "segment.ms=604800000 (DEFAULT_CONFIG)",
		"log.retention.ms=1000 (DYNAMIC_BROKER_CONFIG)"}; !slices.Equal(got, want) {
		t.Fatalf("configs after the refusals: %q, want %q", got, want)
	}
}

// TestDescribeConfigsEmptyNamesListAll: a resource whose ConfigNames is an
// empty array (not null) is described whole, as Kafka does
// (ConfigHelperUtils: null or empty lists every config);
// @platformatic/kafka's describeConfigs sends configurationKeys: [] so.
func TestDescribeConfigsEmptyNamesListAll(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, 10*time.Second)
	createTopic(t, addr, "cfg-all", 1, nil)
	cl := newClient(t, addr)
	count := func(typ kmsg.ConfigResourceType, name string, names []string) int {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = typ, name, names
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != 0 {
			t.Fatalf("describe %v %q %v: %v %+v", typ, name, names, err, resp)
		}
		return len(resp.Resources[0].Configs)
	}
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, "cfg-all"}, {kmsg.ConfigResourceTypeBroker, "0"}} {
		all, empty := count(r.typ, r.name, nil), count(r.typ, r.name, []string{})
		if all == 0 || empty != all {
			t.Errorf("%v %q: %d configs for null names, %d for empty names; want the same, not 0", r.typ, r.name, all, empty)
		}
	}
}

func TestListOffsetsDeleteRecordsAndEpochs(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 10*time.Second)
	// the record far in the future below needs Kafka 4's one-hour
	// message.timestamp.after.max.ms default lifted
	createTopic(t, addr, "offs", 1, map[string]*string{"message.timestamp.after.max.ms": sp("9223372036854775807")})
	cl := newClient(t, addr, kgo.ProducerLinger(0))
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 10; i++ {
		r := &kgo.Record{Topic: "offs", Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// one record with a timestamp far in the future, at offset 10
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "offs", Timestamp: base.Add(48 * time.Hour)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ts, err := adm.ListOffsetsAfterMilli(ctx, base.Add(3*time.Minute+time.Second).UnixMilli(), "offs")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ts.Lookup("offs", 0); o.Offset != 4 || o.Err != nil {
		t.Fatalf("offset after 3m: %+v", o)
	}
	if p := listMaxTimestamp(t, ctx, cl, "offs"); p.ErrorCode != 0 || p.Offset != 10 || p.Timestamp != base.Add(48*time.Hour).UnixMilli() {
		t.Fatalf("max timestamp: %+v", p)
	}
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{"offs": {0: {At: 6}}})
	if err != nil || dr.Error() != nil {
		t.Fatalf("delete records: %v %v", err, dr.Error())
	}
	starts, _ := adm.ListStartOffsets(ctx, "offs")
	if o, _ := starts.Lookup("offs", 0); o.Offset != 6 {
		t.Fatalf("start offset after DeleteRecords: %d", o.Offset)
	}
	ends, _ := adm.ListEndOffsets(ctx, "offs")
	if o, _ := ends.Lookup("offs", 0); o.Offset != 11 {
		t.Fatalf("end offset: %d", o.Offset)
	}
	dr, _ = adm.DeleteRecords(ctx, kadm.Offsets{"offs": {0: {At: 50}}})
	if dr.Error() == nil {
		t.Fatal("deleting past the high watermark succeeded")
	}
	// consumers starting at the beginning see offset 6 first
	cons := newClient(t, addr, kgo.ConsumeTopics("offs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := cons.PollFetches(ctx)
	if recs := fs.Records(); len(recs) == 0 || recs[0].Offset != 6 {
		t.Fatalf("first consumed record: %+v (%v)", recs, fs.Err0())
	}
	// OffsetForLeaderEpoch: epoch 0 ends at the log end
	ep, err := adm.OffsetForLeaderEpoch(ctx, map[string]map[int32]int32{"offs": {0: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if e := ep["offs"][0]; e.Err != nil || e.EndOffset != 11 || e.LeaderEpoch != 0 {
		t.Fatalf("offset for leader epoch: %+v", e)
	}
}

// TestListOffsetsInsideCompressedBatches: ListOffsets by timestamp and by
// max timestamp answer the record inside a compressed batch, as Kafka's
// broker finds it by decompressing the batch, in every codec, on disk and
// in memory; and never an offset below the log start, when DeleteRecords
// moved the start into the middle of a batch.
func TestListOffsetsInsideCompressedBatches(t *testing.T) {
	for _, mode := range []string{"disk", "memory"} {
		t.Run(mode, func(t *testing.T) {
			var args []string
			if mode == "disk" {
				args = []string{"--data-dir", t.TempDir()}
			}
			_, addr := testBroker(t, args...)
			cl := newClient(t, addr, producesByName())
			adm := kadm.NewClient(cl)
			ctx := ctxT(t, 20*time.Second)
			base := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMilli()
			for codec, name := range map[int16]string{batch.CodecGzip: "gzip", batch.CodecSnappy: "snappy", batch.CodecLz4: "lz4", batch.CodecZstd: "zstd"} {
				topic := "zipped-" + name
				createTopic(t, addr, topic, 1, nil)
				// One batch of ten records stamped base, base+10, ...,
				// base+90 ms, the highest (base+90) at offset 9.
				var recs []kmsg.Record
				for i := range int32(10) {
					recs = append(recs, rec(i, int64(i)*10, nil, []byte{byte(i)}))
				}
				if r := rawProduce(t, cl, topic, 0, -1, recordsBatch(t, codec, base, base+90, recs...)); r.ErrorCode != 0 {
					t.Fatalf("%s: produce: %v", name, kerr.ErrorForCode(r.ErrorCode))
				}
				at := func(ms int64) kadm.ListedOffset {
					t.Helper()
					lo, err := adm.ListOffsetsAfterMilli(ctx, base+ms, topic)
					if err != nil {
						t.Fatal(err)
					}
					o, _ := lo.Lookup(topic, 0)
					return o
				}
				if o := at(35); o.Err != nil || o.Offset != 4 || o.Timestamp != base+40 {
					t.Errorf("%s: the record at or after +35 ms: %+v, want offset 4 stamped +40", name, o)
				}
				if p := listMaxTimestamp(t, ctx, cl, topic); p.ErrorCode != 0 || p.Offset != 9 || p.Timestamp != base+90 {
					t.Errorf("%s: max timestamp: %+v, want offset 9 stamped +90", name, p)
				}
				dr, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 6}}})
				if err != nil || dr.Error() != nil {
					t.Fatalf("%s: delete records: %v %v", name, err, dr.Error())
				}
				if o := at(0); o.Err != nil || o.Offset != 6 || o.Timestamp != base+60 {
					t.Errorf("%s: the record at or after +0 ms, log start 6: %+v, want offset 6 stamped +60", name, o)
				}
				// Stamped out of order: the batch holding the log start has
				// its late records below it, so the search goes on to the next
				// batch, as Kafka's does.
				unordered := topic + "-unordered"
				createTopic(t, addr, unordered, 1, nil)
				var first, second []kmsg.Record
				for i := range int32(10) {
					first = append(first, rec(i, int64(9-i)*10, nil, []byte{byte(i)}))
					second = append(second, rec(i, 100+int64(i)*10, nil, []byte{byte(i)}))
				}
				for _, b := range [][]byte{recordsBatch(t, codec, base, base+90, first...), recordsBatch(t, codec, base, base+190, second...)} {
					if r := rawProduce(t, cl, unordered, 0, -1, b); r.ErrorCode != 0 {
						t.Fatalf("%s: produce: %v", name, kerr.ErrorForCode(r.ErrorCode))
					}
				}
				if dr, err := adm.DeleteRecords(ctx, kadm.Offsets{unordered: {0: {At: 6}}}); err != nil || dr.Error() != nil {
					t.Fatalf("%s: delete records: %v %v", name, err, dr.Error())
				}
				lo, err := adm.ListOffsetsAfterMilli(ctx, base+50, unordered)
				if err != nil {
					t.Fatal(err)
				}
				if o, _ := lo.Lookup(unordered, 0); o.Err != nil || o.Offset != 10 || o.Timestamp != base+100 {
					t.Errorf("%s: at or after +50 ms, the batch at the log start 6 holding none from it: %+v, want offset 10 stamped +100", name, o)
				}
			}
		})
	}
}

func TestMetadataAndDescribeCluster(t *testing.T) {
	_, addr := testBroker(t, "--default-partitions", "4", "--cluster-id", "unit-cluster")
	cl := newClient(t, addr)
	ctx := ctxT(t, 10*time.Second)
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = sp("auto-made")
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 4 {
		t.Fatalf("auto-created topic: %+v", resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if p.Leader != 0 || len(p.Replicas) != 1 || len(p.ISR) != 1 || resp.Topics[0].TopicID == [16]byte{} {
		t.Fatalf("partition metadata: %+v", p)
	}
	if *resp.ClusterID != "unit-cluster" || len(resp.Brokers) != 1 || !strings.HasPrefix(addr, "127.0.0.1") {
		t.Fatalf("brokers %+v cluster %v", resp.Brokers, *resp.ClusterID)
	}
	// by topic id (v12)
	byID := kmsg.NewPtrMetadataRequest()
	rid := kmsg.NewMetadataRequestTopic()
	rid.TopicID = resp.Topics[0].TopicID
	byID.Topics = append(byID.Topics, rid)
	idResp, err := byID.RequestWith(ctx, cl)
	if err != nil || len(idResp.Topics) != 1 || *idResp.Topics[0].Topic != "auto-made" {
		t.Fatalf("metadata by id: %v %+v", err, idResp)
	}
	// invalid names are refused, not created
	bad := kmsg.NewPtrMetadataRequest()
	bad.AllowAutoTopicCreation = true
	brt := kmsg.NewMetadataRequestTopic()
	brt.Topic = sp("no spaces")
	bad.Topics = append(bad.Topics, brt)
	badResp, _ := bad.RequestWith(ctx, cl)
	if badResp.Topics[0].ErrorCode != kerr.InvalidTopicException.Code {
		t.Fatalf("invalid name: %+v", badResp.Topics[0])
	}
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	if err != nil || dc.ErrorCode != 0 || dc.ClusterID != "unit-cluster" || len(dc.Brokers) != 1 || dc.Brokers[0].IsFenced {
		t.Fatalf("describe cluster: %v %+v", err, dc)
	}
	// The one local-dev broker is its own controller, the only voter.
	qreq := kmsg.NewPtrDescribeQuorumRequest()
	qreq.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	if q, err := qreq.RequestWith(ctx, cl); err != nil || q.ErrorCode != 0 || len(q.Topics) != 1 ||
		q.Topics[0].Partitions[0].LeaderID != dc.Brokers[0].NodeID || len(q.Topics[0].Partitions[0].CurrentVoters) != 1 || len(q.Topics[0].Partitions[0].Observers) != 0 {
		t.Fatalf("describe quorum: %v %+v", err, q)
	}
	// The one local-dev broker is alive; no other is registered.
	for id, want := range map[int32]int16{dc.Brokers[0].NodeID: kerr.InvalidRequest.Code, 3: kerr.BrokerIDNotRegistered.Code} {
		req := kmsg.NewPtrUnregisterBrokerRequest()
		req.BrokerID = id
		if resp, err := req.RequestWith(ctx, cl); err != nil || resp.ErrorCode != want {
			t.Fatalf("unregister broker %d: %v %+v, want code %d", id, err, resp, want)
		}
	}
}

func TestGracefulShutdownUnderLoad(t *testing.T) {
	b, addr := testBroker(t)
	createTopic(t, addr, "bye", 2, nil)
	cl := newClient(t, addr, kgo.DefaultProduceTopic("bye"), kgo.RecordRetries(1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.Produce(ctx, &kgo.Record{Value: []byte("x")}, nil)
			time.Sleep(100 * time.Microsecond)
		}
	}()
	time.Sleep(100 * time.Millisecond)
	done := make(chan struct{})
	go func() { b.shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("shutdown under load did not finish")
	}
}

// TestListOffsetsOldestVersions: ListOffsets v1, the oldest Kafka 4
// serves, answers one offset: the log end, the log start (after
// DeleteRecords), the first offset at or after a timestamp, or none (-1)
// after the last one. v0 (served for Burrow) answers the same offset as
// its one old-style offset, or none.
func TestListOffsetsOldestVersions(t *testing.T) {
	_, addr := testBroker(t)
	createTopic(t, addr, "offs0", 1, nil)
	cl := newClient(t, addr, kgo.ProducerLinger(0))
	ctx := ctxT(t, 10*time.Second)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	for i := 0; i < 5; i++ {
		r := &kgo.Record{Topic: "offs0", Value: []byte{byte(i)}, Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if dr, err := newAdmin(t, addr).DeleteRecords(ctx, kadm.Offsets{"offs0": {0: {At: 1}}}); err != nil || dr.Error() != nil {
		t.Fatalf("delete records: %v %v", err, dr.Error())
	}
	for _, tc := range []struct {
		ts   int64
		want int64
	}{
		{-1, 5},
		{-2, 1},
		{base.Add(2 * time.Minute).UnixMilli(), 2},
		{base.Add(2*time.Minute - time.Second).UnixMilli(), 2},
		{base.Add(time.Hour).UnixMilli(), -1},
	} {
		for _, version := range []int16{0, 1} {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = "offs0"
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Timestamp, lp.MaxNumOffsets = tc.ts, 1
			lt.Partitions = append(lt.Partitions, lp)
			req.Topics = append(req.Topics, lt)
			resp := rawRequest(t, addr, req, version).(*kmsg.ListOffsetsResponse)
			p := resp.Topics[0].Partitions[0]
			got := p.Offset
			if version == 0 {
				got = -1
				if len(p.OldStyleOffsets) > 1 || len(p.OldStyleOffsets) == 1 && p.OldStyleOffsets[0] < 0 {
					t.Errorf("v0 timestamp %d: old-style offsets %v", tc.ts, p.OldStyleOffsets)
				}
				if len(p.OldStyleOffsets) == 1 {
					got = p.OldStyleOffsets[0]
				}
			}
			if p.ErrorCode != 0 || got != tc.want {
				t.Errorf("v%d timestamp %d: error %d, offset %d, want %d", version, tc.ts, p.ErrorCode, got, tc.want)
			}
		}
	}
}

func TestDescribeLogDirs(t *testing.T) {
	dir := t.TempDir()
	diskAddr, _ := startDiskBroker(t, dir)
	_, memAddr := testBroker(t)
	for _, tc := range []struct {
		name, addr, dir string
		space           bool
	}{
		{"disk", diskAddr, dir, true},
		{"memory", memAddr, "memory", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t, 20*time.Second)
			createTopic(t, tc.addr, "sized", 2, nil)
			createTopic(t, tc.addr, "empty", 1, nil)
			cl := newClient(t, tc.addr, kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			value := make([]byte, 1000)
			_, _ = rand.Read(value) // incompressible
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sized", Partition: 1, Value: value}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			adm := newAdmin(t, tc.addr)
			all, err := adm.DescribeAllLogDirs(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(all) != 1 {
				t.Fatalf("brokers: %v", all)
			}
			for _, dirs := range all {
				if len(dirs) != 1 {
					t.Fatalf("log dirs: %v", dirs)
				}
				d, ok := dirs[tc.dir]
				if !ok || d.Err != nil {
					t.Fatalf("log dir %q: %+v", tc.dir, dirs)
				}
				if tc.space != (d.TotalBytes > 0 && d.UsableBytes > 0) || !tc.space && (d.TotalBytes != -1 || d.UsableBytes != -1) {
					t.Errorf("total %d, usable %d", d.TotalBytes, d.UsableBytes)
				}
				if p := d.Topics["sized"][1]; p.Size < 1000 || p.OffsetLag != 0 || p.IsFuture {
					t.Errorf("sized/1: %+v", p)
				}
				if p, ok := d.Topics["sized"][0]; !ok || p.Size != 0 {
					t.Errorf("sized/0: %+v %v", p, ok)
				}
				if _, ok := d.Topics["empty"][0]; !ok {
					t.Errorf("empty/0 missing: %+v", d.Topics)
				}
			}
			some, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{"empty": {0: {}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, dirs := range some {
				if ts := dirs[tc.dir].Topics; len(ts) != 1 || len(ts["empty"]) != 1 {
					t.Errorf("asking for empty/0: %+v", ts)
				}
			}

			// AlterReplicaLogDirs: the one log dir holds every replica
			// already; any other dir is not found.
			var alter kadm.AlterReplicaLogDirsReq
			alter.Add(tc.dir, kadm.TopicsSet{"sized": {0: {}, 1: {}}})
			alter.Add("/elsewhere", kadm.TopicsSet{"empty": {0: {}}})
			moved, err := adm.AlterAllReplicaLogDirs(ctx, alter)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]error{
				tc.dir + " sized/0": nil, tc.dir + " sized/1": nil,
				"/elsewhere empty/0": kerr.LogDirNotFound,
			}
			got := 0
			moved.Each(func(r kadm.AlterReplicaLogDirsResponse) {
				got++
				key := fmt.Sprintf("%s %s/%d", r.Dir, r.Topic, r.Partition)
				if w, ok := want[key]; !ok || !errors.Is(r.Err, w) {
					t.Errorf("%s: %v, want %v", key, r.Err, w)
				}
			})
			if got != len(want) {
				t.Errorf("%d answers, want %d", got, len(want))
			}
			// A partition no broker has (a client routes by leader, so
			// straight to the broker).
			req := kmsg.NewPtrAlterReplicaLogDirsRequest()
			rd := kmsg.NewAlterReplicaLogDirsRequestDir()
			rd.Dir = tc.dir
			rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
			rt.Topic, rt.Partitions = "nope", []int32{0}
			rd.Topics = append(rd.Topics, rt)
			req.Dirs = append(req.Dirs, rd)
			r, err := cl.Broker(0).Request(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if resp := r.(*kmsg.AlterReplicaLogDirsResponse); len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("unknown partition: %+v, want UNKNOWN_TOPIC_OR_PARTITION", resp.Topics)
			}
		})
	}
}

func TestElectLeaders(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 10*time.Second)
	createTopic(t, addr, "elect", 2, nil)
	for _, how := range []kadm.ElectLeadersHow{kadm.ElectPreferredReplica, kadm.ElectLiveReplica} {
		rs, err := adm.ElectLeaders(ctx, how, kadm.TopicsSet{"elect": {0: {}, 1: {}, 5: {}}, "nope": {0: {}}})
		if err != nil {
			t.Fatal(err)
		}
		for p, want := range map[int32]error{0: kerr.ElectionNotNeeded, 1: kerr.ElectionNotNeeded, 5: kerr.UnknownTopicOrPartition} {
			if r, ok := rs["elect"][p]; !ok || !errors.Is(r.Err, want) {
				t.Errorf("%v elect/%d: %+v, want %v", how, p, r, want)
			}
		}
		if r := rs["nope"][0]; !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("%v nope/0: %+v", how, r)
		}
	}
	// every partition: none needs an election, so none is listed
	all, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, nil)
	if err != nil || len(all) != 0 {
		t.Fatalf("electing all: %v %v", all, err)
	}
}

func TestDescribeProducers(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 10*time.Second)
	createTopic(t, addr, "idem", 2, nil)
	cl := newClient(t, addr, kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 3 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "idem", Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"idem": {0: {}, 1: {}}})
	if err != nil {
		t.Fatal(err)
	}
	p0 := ds["idem"].Partitions[0]
	if p0.Err != nil || len(p0.ActiveProducers) != 1 {
		t.Fatalf("idem/0: %+v", p0)
	}
	for _, p := range p0.ActiveProducers {
		if p.ProducerID != id || p.ProducerEpoch != epoch || p.LastSequence != 2 || p.LastTimestamp <= 0 ||
			p.CoordinatorEpoch != -1 || p.CurrentTxnStartOffset != -1 {
			t.Errorf("producer %+v, want id %d epoch %d last sequence 2", p, id, epoch)
		}
	}
	if p1 := ds["idem"].Partitions[1]; p1.Err != nil || len(p1.ActiveProducers) != 0 {
		t.Errorf("idem/1: %+v", p1)
	}
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = "nope", []int32{0}
	req.Topics = append(req.Topics, rt)
	resp := rawRequest(t, addr, req, 0).(*kmsg.DescribeProducersResponse)
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("nope/0: %+v", p)
	}
}

// listMaxTimestamp asks for partition 0 of topic's record with the highest
// timestamp (ListOffsets -3, KIP-734).
func listMaxTimestamp(t *testing.T, ctx context.Context, cl *kgo.Client, topic string) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	return listOffsetAt(t, ctx, cl, topic, 0, -3, 0)
}

// listOffsetAt is ListOffsets of topic's partition p for timestamp (or a
// special one: -1, -2, -3, ...) at isolation level iso (1: read_committed).
func listOffsetAt(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, p int32, timestamp int64, iso int8) kmsg.ListOffsetsResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = iso
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Partition, lp.Timestamp = p, timestamp
	lt.Partitions = append(lt.Partitions, lp)
	req.Topics = append(req.Topics, lt)
	lr, err := req.RequestWith(ctx, cl)
	if err != nil || len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		t.Fatalf("ListOffsets %d of %s: %v %+v", timestamp, topic, err, lr)
	}
	return lr.Topics[0].Partitions[0]
}

// TestListOffsetsReadCommittedStopsAtTheLastStableOffset: read_committed
// lookups by timestamp and by max timestamp answer no offset for a record
// of a transaction still open (at or past the last stable offset), as
// Kafka's lastFetchableOffset filters them; read_uncommitted finds it; once
// the transaction commits, read_committed does too.
func TestListOffsetsReadCommittedStopsAtTheLastStableOffset(t *testing.T) {
	_, addr := testBroker(t)
	ctx := ctxT(t, 20*time.Second)
	createTopic(t, addr, "lso", 1, nil)
	cl := newClient(t, addr)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "lso", Value: []byte("plain"), Timestamp: base}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn := newClient(t, addr, kgo.TransactionalID("lso-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	later := base.Add(time.Minute).UnixMilli()
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "lso", Value: []byte("open"), Timestamp: time.UnixMilli(later)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	type lookup struct {
		ts  int64
		iso int8
	}
	check := func(when string, want map[lookup]int64) {
		t.Helper()
		for l, off := range want {
			p := listOffsetAt(t, ctx, cl, "lso", 0, l.ts, l.iso)
			if p.ErrorCode != 0 || p.Offset != off {
				t.Errorf("%s: timestamp %d isolation %d: offset %d (error %d), want %d", when, l.ts, l.iso, p.Offset, p.ErrorCode, off)
			}
		}
	}
	check("open", map[lookup]int64{
		{later, 0}: 1, {later, 1}: -1, // by timestamp
		{-3, 0}: 1, {-3, 1}: -1, // max timestamp
		{-1, 0}: 2, {-1, 1}: 1, // latest
		{base.UnixMilli(), 1}: 0,
	})
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the last stable offset past the marker", func() bool {
		return listOffsetAt(t, ctx, cl, "lso", 0, -1, 1).Offset == 3
	})
	// The commit marker, stamped when it was written, now holds the max
	// timestamp, as on Kafka.
	check("committed", map[lookup]int64{{later, 1}: 1, {-3, 1}: 2})
}
