package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/delegation"
)

// The volume fixture: a data dir (and the SCRAM credentials file beside
// it) holding one of each kind of state kaas keeps on its volume, written
// by fixtureWrite through the Kafka API and checked by fixtureCheck
// through the Kafka API. TestVolumeFixtureOpens opens the copy kept in
// testdata, so a change to any on-disk format that kaas can no longer read
// fails here before it fails a user's upgrade; TestVolumeFixtureState runs
// the writer and the checker on a fresh dir, across a restart, so the
// checker is known to hold for what kaas writes now.
//
// KAAS_WRITE_VOLUME_FIXTURE=path makes TestVolumeFixtureState also write
// its volume to path (a .tar.gz): what testdata/volume1.tar.gz was made
// with. A new file (volume2, ...) is added beside it, never written over
// it: the old one is what older volumes hold.
const volumeFixture = "testdata/volume1.tar.gz"

// fixtureBase is the first record timestamp; records are stamped from it,
// one millisecond apart, whatever the day the fixture is written.
var fixtureBase = time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)

// fixtureTopicConfigs keep every record whatever its age: no retention,
// and no bound on how old a produced timestamp may be.
func fixtureTopicConfigs(extra ...string) map[string]*string {
	cfg := map[string]*string{
		"retention.ms":                    kadm.StringPtr("-1"),
		"message.timestamp.before.max.ms": kadm.StringPtr("9223372036854775807"),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg[extra[i]] = kadm.StringPtr(extra[i+1])
	}
	return cfg
}

const (
	fixtureEvents    = 300 // records in "events", 3 partitions
	fixtureDeletedTo = 10  // events-0's log start (DeleteRecords)
	fixtureProfiles  = 200 // records in the compacted "profiles"
	fixtureKeys      = 10  // distinct keys in "profiles"
	fixtureCommitted = 20  // records of tx-commit in "ledger"
)

// volumeEnv is a broker's flags for a volume under dir: data/ and
// users.json. Everything that expires is kept ten years, so the fixture
// opens as it was written.
type volumeEnv struct {
	dir, plain, sasl string
}

func newVolumeEnv(t *testing.T, dir string) volumeEnv {
	return volumeEnv{dir: dir, plain: freeAddr(t), sasl: freeAddr(t)}
}

func (e volumeEnv) args() []string {
	listeners := fmt.Sprintf("PLAINTEXT://%s,SASL_PLAINTEXT://%s", e.plain, e.sasl)
	return []string{
		"--listeners", listeners, "--advertised-listeners", listeners,
		"--http-addr", "", "--log-level", "warn",
		"--data-dir", filepath.Join(e.dir, "data"),
		"--sasl-enabled-mechanisms", "SCRAM-SHA-512", "--sasl-credentials-file", filepath.Join(e.dir, "users.json"),
		"--authorizer", "acl", "--super-users", "User:ANONYMOUS;User:admin",
		"--delegation-token-secret-key", "volume-fixture-secret",
		"--delegation-token-max-lifetime", "87600h", "--delegation-token-expiry-time", "87600h",
		"--offsets-retention-minutes", "5256000",
		"--transactional-id-expiration", "87600h", "--producer-id-expiration", "87600h",
		"--transaction-max-timeout", "15m",
		"--cleaner-interval", "100ms",
		// Kafka's default, over the 3 s this package's brokers take:
		// restored members outlive the checks.
		"--group-consumer-session-timeout", "45s",
	}
}

func (e volumeEnv) start(t *testing.T) (stop func()) {
	t.Helper()
	_, stop = startBrokerArgs(t, e.args()...)
	return stop
}

func (e volumeEnv) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	return newClient(t, e.plain, opts...)
}

// as is a client of the SASL listener logged in as user.
func (e volumeEnv) as(t *testing.T, user, pass string) *kgo.Client {
	return newClient(t, e.sasl, kgo.SASL(scramMech(user, pass, true)))
}

// TestVolumeFixtureState: what fixtureWrite leaves on a fresh volume is
// all there after a restart, as fixtureCheck reads it.
func TestVolumeFixtureState(t *testing.T) {
	dir := t.TempDir()
	writeScramUsersTo(t, filepath.Join(dir, "users.json"), "admin")
	e := newVolumeEnv(t, dir)
	stop := e.start(t)
	fixtureWrite(t, e)
	stop()
	if out := os.Getenv("KAAS_WRITE_VOLUME_FIXTURE"); out != "" {
		writeTarGz(t, dir, out)
		t.Logf("volume written to %s", out)
	}
	e = newVolumeEnv(t, dir)
	e.start(t)
	fixtureCheck(t, e)
}

// TestVolumeFixtureOpens: the volume in testdata, written by kaas with
// fixtureWrite, opens with all its state (records, compacted and deleted
// ranges, producer state, committed and aborted transactions and one left
// open, classic and KIP-848 groups' offsets, a group config, a
// share-group's start, the members of a classic and a KIP-848 group,
// ACLs, a SCRAM user, a delegation token that logs in, a client
// quota, a dynamic broker config, topic configs and ids).
func TestVolumeFixtureOpens(t *testing.T) {
	dir := t.TempDir()
	readTarGz(t, volumeFixture, dir)
	e := newVolumeEnv(t, dir)
	e.start(t)
	fixtureCheck(t, e)
}

// fixtureWrite fills a running broker's volume.
func fixtureWrite(t *testing.T, e volumeEnv) {
	ctx := ctxT(t, 120*time.Second)
	cl := e.client(t)
	adm := kadm.NewClient(cl)
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	create := func(name string, parts int32, cfg map[string]*string) {
		t.Helper()
		r, err := adm.CreateTopic(ctx, parts, 1, cfg, name)
		must("create "+name, errors.Join(err, r.Err))
	}
	create("events", 3, fixtureTopicConfigs("segment.bytes", "4096", "max.message.bytes", "200000"))
	create("profiles", 1, fixtureTopicConfigs("cleanup.policy", "compact", "segment.bytes", "1024", "min.cleanable.dirty.ratio", "0.01"))
	create("ledger", 2, fixtureTopicConfigs())
	create("idem", 1, fixtureTopicConfigs())

	// Records: idempotent, lz4, a header each, fixed timestamps.
	prod := e.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	events := make([]*kgo.Record, fixtureEvents)
	for i := range events {
		events[i] = fixtureEvent(i)
	}
	must("produce events", prod.ProduceSync(ctx, events...).FirstErr())
	// One batch per record, so that "profiles" rolls segments the cleaner
	// can compact (it never touches the active one).
	for i := range fixtureProfiles {
		must("produce profiles", prod.ProduceSync(ctx, fixtureProfile(i)).FirstErr())
	}
	var del kadm.Offsets
	del.AddOffset("events", 0, fixtureDeletedTo, -1)
	dr, err := adm.DeleteRecords(ctx, del)
	must("delete records", errors.Join(err, dr.Error()))

	// Producer state: two batches of three from a producer built by hand,
	// so the checker can resend the second.
	raw := e.client(t, producesByName())
	ipr, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, raw)
	must("init producer id", errors.Join(err, kerr.ErrorForCode(ipr.ErrorCode)))
	for seq := int32(0); seq < 6; seq += 3 {
		r := rawProduce(t, raw, "idem", 0, -1, idemBatch(ipr.ProducerID, ipr.ProducerEpoch, seq))
		must("produce idem", kerr.ErrorForCode(r.ErrorCode))
	}

	// Transactions on "ledger": one committed, one aborted, one left open.
	txn := func(id string, n int) *kgo.Client {
		t.Helper()
		cl := e.client(t, kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		must("begin "+id, cl.BeginTransaction())
		for i := range n {
			r := &kgo.Record{Topic: "ledger", Partition: int32(i % 2), Value: []byte(fmt.Sprintf("%s-%02d", id, i)), Timestamp: fixtureBase.Add(time.Duration(i) * time.Millisecond)}
			must("produce "+id, cl.ProduceSync(ctx, r).FirstErr())
		}
		return cl
	}
	must("commit tx-commit", txn("tx-commit", fixtureCommitted).EndTransaction(ctx, kgo.TryCommit))
	must("abort tx-abort", txn("tx-abort", 10).EndTransaction(ctx, kgo.TryAbort))
	txn("tx-open", 5)

	// Groups: a classic group's offsets with metadata, a KIP-848 group's
	// (its member commits and leaves), a config of that group, a share
	// group's start.
	var billing kadm.Offsets
	for p := range int32(3) {
		billing.Add(kadm.Offset{Topic: "events", Partition: p, At: int64(50 + 10*p), LeaderEpoch: -1, Metadata: fmt.Sprintf("b%d", p)})
	}
	cr, err := adm.CommitOffsets(ctx, "billing", billing)
	must("commit billing", errors.Join(err, cr.Error()))
	member := e.client(t, kgo.ServerSideBalancer(), kgo.ConsumerGroup("audit"), kgo.ConsumeTopics("events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100*time.Millisecond))
	seen := map[int32]bool{}
	for len(seen) < 3 && ctx.Err() == nil {
		member.PollFetches(ctx).EachRecord(func(r *kgo.Record) { seen[r.Partition] = true })
	}
	audit := map[string]map[int32]kgo.EpochOffset{"events": {}}
	for p := range int32(3) {
		audit["events"][p] = kgo.EpochOffset{Epoch: -1, Offset: int64(20 + p)}
	}
	var commitErr error
	member.CommitOffsetsSync(ctx, audit, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		commitErr = err
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				commitErr = errors.Join(commitErr, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	})
	must("commit audit", commitErr)
	member.Close()
	alterConfig(t, ctx, cl, kmsg.ConfigResourceTypeGroupConfig, "audit", "consumer.heartbeat.interval.ms", "6000")
	var share kadm.Offsets
	share.AddOffset("events", 1, 42, -1)
	sr, err := adm.AlterShareGroupOffsets(ctx, "sharers", share)
	must("alter share offsets", errors.Join(err, sr.Error()))

	// Security: ACLs, a SCRAM user, a delegation token, a client quota.
	acl := kadm.NewACLs().Allow("User:reader").Topics("events").Operations(kadm.OpRead, kadm.OpDescribe).ResourcePatternType(kadm.ACLPatternLiteral)
	ar, err := adm.CreateACLs(ctx, acl)
	must("create topic ACL", errors.Join(err, firstACLErr(ar)))
	acl = kadm.NewACLs().Allow("User:reader").Groups("bill").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternPrefixed)
	ar, err = adm.CreateACLs(ctx, acl)
	must("create group ACL", errors.Join(err, firstACLErr(ar)))
	ur, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "reader", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "reader-pw"}})
	must("upsert reader", errors.Join(err, ur.Error()))
	_, err = kadm.NewClient(e.as(t, "admin", "admin-secret")).CreateDelegationToken(ctx, kadm.CreateDelegationToken{})
	must("create token", err)
	qr, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: []kadm.ClientQuotaEntityComponent{{Type: "user", Name: kadm.StringPtr("reader")}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}},
	}})
	must("alter quota", err)
	for _, q := range qr {
		must("alter quota", q.Err)
	}
	alterConfig(t, ctx, cl, kmsg.ConfigResourceTypeBroker, "", "log.cleaner.min.compaction.lag.ms", "1000")

	// Members at the stop: a static classic member and a KIP-848 member,
	// each assigned idem-0; the volume keeps a group's members.
	newClient(t, e.plain, kgo.ConsumerGroup("live-classic"), kgo.InstanceID("inst-1"), kgo.ClientID("fixture-classic"),
		kgo.Balancers(kgo.RangeBalancer()), kgo.ConsumeTopics("idem"))
	newClient(t, e.plain, kgo.ServerSideBalancer(), kgo.ConsumerGroup("live-848"), kgo.ClientID("fixture-848"), kgo.ConsumeTopics("idem"))
	waitUntil(t, 60*time.Second, "both groups' members assigned idem-0", func() bool {
		return liveMembersAssigned(t, ctx, adm) == nil
	})

	// The compacted topic has had a pass: a cleaned segment is part of
	// what the volume holds.
	waitUntil(t, 60*time.Second, "profiles compacted", func() bool {
		return len(readPartition(t, e.plain, "profiles", 0, kgo.ReadUncommitted())) < fixtureProfiles
	})
}

// fixtureCheck reads back everything fixtureWrite left.
func fixtureCheck(t *testing.T, e volumeEnv) {
	ctx := ctxT(t, 120*time.Second)
	cl := e.client(t)
	adm := kadm.NewClient(cl)
	// Every partition answers ListOffsets before the checks below read
	// offsets with kadm, which does not ask again.
	for topic, n := range map[string]int32{"events": 3, "profiles": 1, "ledger": 2, "idem": 1} {
		for p := range n {
			partitionEnd(t, cl, topic, p, kgo.ReadUncommitted())
		}
	}

	// Topics, their ids stable across the restart, and their configs.
	td, err := adm.ListTopics(ctx, "events", "profiles", "ledger", "idem")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"events", "profiles", "ledger", "idem"} {
		d := td[name]
		if d.Err != nil {
			t.Fatalf("topic %s: %v", name, d.Err)
		}
		// The id is the one its partitions' directories are named with.
		uuid := supervisor.FormatUUID(d.ID)
		if _, err := os.Stat(filepath.Join(e.dir, "data", name+"-0-"+uuid)); err != nil {
			t.Errorf("topic %s has id %s, not its directory's: %v", name, uuid, err)
		}
	}
	if n := len(td["events"].Partitions); n != 3 {
		t.Fatalf("events has %d partitions", n)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, "events", "profiles")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]map[string]string{
		"events":   {"retention.ms": "-1", "segment.bytes": "4096", "max.message.bytes": "200000"},
		"profiles": {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
	} {
		r, err := rc.On(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			i := slices.IndexFunc(r.Configs, func(c kadm.Config) bool { return c.Key == k })
			if i < 0 {
				t.Errorf("%s: no %s", name, k)
			} else if c := r.Configs[i]; c.MaybeValue() != v || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("%s %s = %q (source %v), want %q set on the topic", name, k, c.MaybeValue(), c.Source, v)
			}
		}
	}

	// Records: every one of events from its log starts, with key, value,
	// header and timestamp; the deleted range gone.
	starts, err := adm.ListStartOffsets(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := starts.Lookup("events", 0); s.Offset != fixtureDeletedTo {
		t.Errorf("events-0 starts at %d, want %d", s.Offset, fixtureDeletedTo)
	}
	for p := range int32(3) {
		got := readPartition(t, e.plain, "events", p, kgo.ReadUncommitted())
		var want []*kgo.Record
		for i := range fixtureEvents {
			if r := fixtureEvent(i); r.Partition == p && (p != 0 || int64(i/3) >= fixtureDeletedTo) {
				want = append(want, r)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("events-%d: %d records, want %d", p, len(got), len(want))
		}
		for j, r := range got {
			w := want[j]
			if r.Offset != int64(fixtureEventIndex(w)/3) || string(r.Key) != string(w.Key) || string(r.Value) != string(w.Value) ||
				!r.Timestamp.Equal(w.Timestamp) || len(r.Headers) != 1 || string(r.Headers[0].Value) != string(w.Headers[0].Value) {
				t.Fatalf("events-%d record %d: offset %d key %q value %q ts %v headers %v; want key %q value %q ts %v",
					p, j, r.Offset, r.Key, r.Value, r.Timestamp, r.Headers, w.Key, w.Value, w.Timestamp)
			}
		}
	}
	// A lookup by time finds the record stamped then.
	lo, err := adm.ListOffsetsAfterMilli(ctx, fixtureBase.Add(150*time.Millisecond).UnixMilli(), "events")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lo.Lookup("events", 0); o.Offset != 50 {
		t.Errorf("events-0 offset at +150 ms: %+v, want 50", o)
	}

	// The compacted topic: the last value of every key, at its offset.
	got := readPartition(t, e.plain, "profiles", 0, kgo.ReadUncommitted())
	last := map[string]string{}
	for _, r := range got {
		if want := fixtureProfile(int(r.Offset)); string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) {
			t.Fatalf("profiles offset %d: %q=%q, want %q=%q", r.Offset, r.Key, r.Value, want.Key, want.Value)
		}
		last[string(r.Key)] = string(r.Value)
	}
	for i := fixtureProfiles - fixtureKeys; i < fixtureProfiles; i++ {
		if w := fixtureProfile(i); last[string(w.Key)] != string(w.Value) {
			t.Errorf("profiles key %s: last %q, want %q", w.Key, last[string(w.Key)], w.Value)
		}
	}

	// Producer state: the last batch resent is known, answered with its
	// first offset, and not written again.
	dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"idem": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	var pid int64 = -1
	var pepoch int16
	dp.EachProducer(func(p kadm.DescribedProducer) { pid, pepoch = p.ProducerID, p.ProducerEpoch })
	if pid < 0 {
		t.Fatalf("no producer on idem-0: %+v", dp)
	}
	raw := e.client(t, producesByName())
	if r := rawProduce(t, raw, "idem", 0, -1, idemBatch(pid, pepoch, 3)); r.ErrorCode != 0 || r.BaseOffset != 3 {
		t.Errorf("idem's last batch resent: error %d, base offset %d; want 0 and 3", r.ErrorCode, r.BaseOffset)
	}
	if ends, err := adm.ListEndOffsets(ctx, "idem"); err != nil {
		t.Fatal(err)
	} else if o, _ := ends.Lookup("idem", 0); o.Offset != 6 {
		t.Errorf("idem-0 ends at %d after the resend, want 6", o.Offset)
	}

	// Transactions: read_committed sees tx-commit's records only, once the
	// open one is aborted (its timeout long past, or 10 s after the open).
	var committed []string
	waitUntil(t, 60*time.Second, "ledger's open transaction aborted", func() bool {
		committed = committed[:0]
		for p := range int32(2) {
			if partitionEnd(t, cl, "ledger", p, kgo.ReadCommitted()) != partitionEnd(t, cl, "ledger", p, kgo.ReadUncommitted()) {
				return false
			}
			for _, r := range readPartition(t, e.plain, "ledger", p, kgo.ReadCommitted()) {
				committed = append(committed, string(r.Value))
			}
		}
		return true
	})
	slices.Sort(committed)
	for i, v := range committed {
		if want := fmt.Sprintf("tx-commit-%02d", i); v != want {
			t.Fatalf("read_committed ledger: %v", committed)
		}
	}
	dt, err := adm.DescribeTransactions(ctx, "tx-commit", "tx-abort", "tx-open")
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"tx-commit": "CompleteCommit", "tx-abort": "CompleteAbort", "tx-open": "CompleteAbort"} {
		if d, ok := dt[id]; !ok || d.Err != nil || d.State != want {
			t.Errorf("transaction %s: %+v, want %s", id, d, want)
		}
	}

	// Groups.
	fo, err := adm.FetchOffsets(ctx, "billing")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if o, ok := fo.Lookup("events", p); !ok || o.Err != nil || o.At != int64(50+10*p) || o.Metadata != fmt.Sprintf("b%d", p) {
			t.Errorf("billing events-%d: %+v", p, o)
		}
	}
	fo, err = adm.FetchOffsets(ctx, "audit")
	if err != nil {
		t.Fatal(err)
	}
	for p := range int32(3) {
		if o, ok := fo.Lookup("events", p); !ok || o.Err != nil || o.At != int64(20+p) {
			t.Errorf("audit events-%d: %+v", p, o)
		}
	}
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for g, typ := range map[string]string{"billing": "classic", "audit": "consumer"} {
		if l, ok := lg[g]; !ok || l.GroupType != typ {
			t.Errorf("group %s listed as %+v, want type %s", g, l, typ)
		}
	}
	if v := describedConfig(t, ctx, cl, kmsg.ConfigResourceTypeGroupConfig, "audit", "consumer.heartbeat.interval.ms"); v != "6000" {
		t.Errorf("audit's consumer.heartbeat.interval.ms = %q, want 6000", v)
	}
	if err := liveMembersAssigned(t, ctx, adm); err != nil {
		t.Errorf("members kept on the volume: %v", err)
	}
	so, err := adm.DescribeShareGroupOffsets(ctx, "sharers")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := so["sharers"].Offsets["events"][1]; !ok || o.Err != nil || o.StartOffset != 42 {
		t.Errorf("sharers events-1: %+v", so["sharers"])
	}

	// Security: the ACLs; the SCRAM user logs in and reads what they let
	// it, and a wrong password does not; the token; the quota; the broker
	// config.
	var described []string
	for _, d := range describeAll(t, adm) {
		described = append(described, fmt.Sprintf("%s:%v:%s:%v:%v", d.Principal, d.Type, d.Name, d.Pattern, d.Operation))
	}
	slices.Sort(described)
	if want := []string{"User:reader:GROUP:bill:PREFIXED:READ", "User:reader:TOPIC:events:LITERAL:DESCRIBE", "User:reader:TOPIC:events:LITERAL:READ"}; !slices.Equal(described, want) {
		t.Errorf("reader's ACLs %v, want %v", described, want)
	}
	if got := readPartition(t, e.sasl, "events", 1, kgo.ReadUncommitted(), kgo.SASL(scramMech("reader", "reader-pw", true))); len(got) != fixtureEvents/3 {
		t.Errorf("reader read %d records of events-1, want %d", len(got), fixtureEvents/3)
	}
	wrong, err := kgo.NewClient(kgo.SeedBrokers(e.sasl), kgo.SASL(scramMech("reader", "wrong", true)), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, wrong); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Errorf("a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	wrong.Close()
	tokens, err := kadm.NewClient(e.as(t, "admin", "admin-secret")).DescribeDelegationTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 1 || tokens[0].Owner.Name != "admin" || !tokens[0].ExpiryTimestamp.After(time.Now()) {
		t.Fatalf("delegation tokens: %+v", tokens)
	}
	// The token logs in, as its owner.
	tok := scram.Auth{User: tokens[0].TokenID, Pass: delegation.Password(tokens[0].HMAC), IsToken: true}
	if got := readPartition(t, e.sasl, "events", 2, kgo.ReadUncommitted(), kgo.SASL(tok.AsSha512Mechanism())); len(got) != fixtureEvents/3 {
		t.Errorf("the token's login read %d records of events-2, want %d", len(got), fixtureEvents/3)
	}
	dq, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: kadm.StringPtr("reader"), MatchType: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(dq) != 1 || len(dq[0].Values) != 1 || dq[0].Values[0].Key != "producer_byte_rate" || dq[0].Values[0].Value != 1048576 {
		t.Errorf("reader's quotas: %+v", dq)
	}
	if v := describedConfig(t, ctx, cl, kmsg.ConfigResourceTypeBroker, "", "log.cleaner.min.compaction.lag.ms"); v != "1000" {
		t.Errorf("cluster-wide log.cleaner.min.compaction.lag.ms = %q, want 1000", v)
	}
}

// liveMembersAssigned checks that the classic group live-classic has its
// one static member, and the KIP-848 group live-848 its one member, each
// assigned idem-0.
func liveMembersAssigned(t *testing.T, ctx context.Context, adm *kadm.Client) error {
	t.Helper()
	dg, err := adm.DescribeGroups(ctx, "live-classic")
	if err != nil {
		return err
	}
	g := dg["live-classic"]
	if g.Err != nil || g.State != "Stable" || len(g.Members) != 1 {
		return fmt.Errorf("live-classic: %+v", g)
	}
	m := g.Members[0]
	if c, ok := m.Assigned.AsConsumer(); m.InstanceID == nil || *m.InstanceID != "inst-1" || m.ClientID != "fixture-classic" || !ok ||
		len(c.Topics) != 1 || c.Topics[0].Topic != "idem" || !slices.Equal(c.Topics[0].Partitions, []int32{0}) {
		return fmt.Errorf("live-classic's member: %+v", m)
	}
	cg, err := adm.DescribeConsumerGroups(ctx, "live-848")
	if err != nil {
		return err
	}
	c := cg["live-848"]
	if c.Err != nil || c.State != "Stable" || len(c.Members) != 1 || c.Members[0].ClientID != "fixture-848" ||
		len(c.Members[0].Assignment) != 1 || !slices.Equal(c.Members[0].Assignment.Sorted()[0].Partitions, []int32{0}) {
		return fmt.Errorf("live-848: %+v", c)
	}
	return nil
}

// fixtureEvent is record i of "events": partition i%3, so partition p
// holds i = 3k+p at offset k.
func fixtureEvent(i int) *kgo.Record {
	return &kgo.Record{Topic: "events", Partition: int32(i % 3), Key: []byte(fmt.Sprintf("k%d", i%7)), Value: []byte(fmt.Sprintf("event-%04d", i)),
		Headers: []kgo.RecordHeader{{Key: "n", Value: []byte(strconv.Itoa(i))}}, Timestamp: fixtureBase.Add(time.Duration(i) * time.Millisecond)}
}

// fixtureProfile is record i of "profiles", at offset i.
func fixtureProfile(i int) *kgo.Record {
	return &kgo.Record{Topic: "profiles", Key: []byte(fmt.Sprintf("user-%d", i%fixtureKeys)), Value: []byte(fmt.Sprintf("profile-%04d", i)),
		Timestamp: fixtureBase.Add(time.Duration(i) * time.Millisecond)}
}

// fixtureEventIndex is i of fixtureEvent(i), from its header.
func fixtureEventIndex(r *kgo.Record) int {
	i, _ := strconv.Atoi(string(r.Headers[0].Value))
	return i
}

// idemBatch is the producer's batch of three records from sequence seq.
func idemBatch(pid int64, epoch int16, seq int32) []byte {
	vals := make([][]byte, 3)
	for i := range vals {
		vals[i] = []byte(fmt.Sprintf("idem-%d", seq+int32(i)))
	}
	return batch.Build(batch.Spec{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, Timestamp: fixtureBase.UnixMilli(), Values: vals})
}

// partitionEnd is topic-p's end offset: the high watermark, or the last
// stable offset under read_committed. A leader just opened answers
// OFFSET_NOT_AVAILABLE until its inherited tail is known durable, and a
// partition not open yet NOT_LEADER_OR_FOLLOWER: both are asked again.
func partitionEnd(t *testing.T, cl *kgo.Client, topic string, p int32, iso kgo.IsolationLevel) int64 {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	var level int8
	if iso == kgo.ReadCommitted() {
		level = 1
	}
	for {
		rp := listOffsetAt(t, ctx, cl, topic, p, -1, level)
		err := kerr.ErrorForCode(rp.ErrorCode)
		if err == nil {
			return rp.Offset
		}
		if !kerr.IsRetriable(err) || ctx.Err() != nil {
			t.Fatalf("list end of %s-%d: %v", topic, p, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readPartition reads topic-p from its log start to its end as iso sees
// it, through addr with opts; control records are not returned.
func readPartition(t *testing.T, addr, topic string, p int32, iso kgo.IsolationLevel, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	c := newClient(t, addr, append([]kgo.Opt{kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}})}, opts...)...)
	defer c.Close()
	end := partitionEnd(t, c, topic, p, iso)
	var out []*kgo.Record
	for next := int64(0); next < end; {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %s-%d: at %d of %d: %v", topic, p, next, end, ctx.Err())
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("read %s-%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if !r.Attrs.IsControl() && r.Offset < end {
				out = append(out, r)
			}
		})
	}
	return out
}

// alterConfig sets name=value on a resource with IncrementalAlterConfigs.
func alterConfig(t *testing.T, ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, resource, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, resource
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, kmsg.StringPtr(value)
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("set %s=%s on %v %q: %v", name, value, typ, resource, err)
	}
}

// describedConfig is a resource's value of name, from DescribeConfigs.
func describedConfig(t *testing.T, ctx context.Context, cl *kgo.Client, typ kmsg.ConfigResourceType, resource, name string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = typ, resource, []string{name}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("describe %v %q: %v", typ, resource, err)
	}
	for _, c := range resp.Resources[0].Configs {
		if c.Name == name && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

// firstACLErr is the first error of created ACLs.
func firstACLErr(rs kadm.CreateACLsResults) error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// writeTarGz writes the tree under dir to the gzipped tar file out, in
// name order, with fixed times and modes, so the same tree writes the same
// bytes.
func writeTarGz(t *testing.T, dir, out string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: fixtureBase, Mode: 0o644, Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Size = int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = errors.Join(tw.Close(), zw.Close())
	}
	if err == nil {
		err = os.WriteFile(out, buf.Bytes(), 0o644)
	}
	if err != nil {
		t.Fatalf("write %s: %v", out, err)
	}
}

// readTarGz unpacks the gzipped tar file in into dir.
func readTarGz(t *testing.T, in, dir string) {
	t.Helper()
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", in, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Fatalf("%s: %q outside the tree", in, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var data []byte
			if data, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(path, data, 0o644)
			}
		default:
			err = fmt.Errorf("%q: type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
	}
}
