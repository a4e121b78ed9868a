package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawShareSession is a share session driven by hand over one client's
// connection to the broker: what a client does, minus its closing the
// session when it leaves.
type rawShareSession struct {
	cl            *kgo.Client
	group, member string
	topicID       [16]byte
	partition     int32
	epoch         int32
	// noBytes sends MaxBytes 0 (a client's fetch.max.bytes=0).
	noBytes bool
}

func (s *rawShareSession) fetch(ctx context.Context) (*kmsg.ShareFetchResponse, error) {
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 1
	req.GroupID, req.MemberID = &s.group, &s.member
	req.ShareSessionEpoch = s.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, 100, 100
	if s.noBytes {
		req.MaxBytes = 0
	}
	t := kmsg.NewShareFetchRequestTopic()
	t.TopicID = s.topicID
	p := kmsg.NewShareFetchRequestTopicPartition()
	p.Partition = s.partition
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	r, err := s.cl.Broker(0).Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := r.(*kmsg.ShareFetchResponse)
	if resp.ErrorCode == 0 {
		s.epoch++
	}
	return resp, nil
}

// acquire fetches until the session holds records and returns how many.
func (s *rawShareSession) acquire(t *testing.T, ctx context.Context) int64 {
	t.Helper()
	for ctx.Err() == nil {
		resp, err := s.fetch(ctx)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch of %s: %v %v", s.member, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		var n int64
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				for _, ar := range p.AcquiredRecords {
					n += ar.LastOffset - ar.FirstOffset + 1
				}
			}
		}
		if n > 0 {
			return n
		}
	}
	t.Fatalf("%s acquired nothing: %v", s.member, ctx.Err())
	return 0
}

// TestShareFetchOfNoBytesAcquiresNothing: a ShareFetch with MaxBytes 0 (a
// client's fetch.max.bytes=0) is answered without records or an error, as
// Kafka's share fetch, and the same session then acquires them all with a
// byte budget.
func TestShareFetchOfNoBytesAcquiresNothing(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	const topic, group, n = "share-no-bytes", "sg-no-bytes", 5
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, n)
	td, err := newAdmin(t, addr).ListTopics(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	s := &rawShareSession{cl: newClient(t, addr), group: group, member: "m", topicID: td[topic].ID, noBytes: true}
	ctx := ctxT(t, 20*time.Second)
	for range 3 {
		resp, err := s.fetch(ctx)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("share fetch of no bytes: %v %v", err, kerr.ErrorForCode(resp.ErrorCode))
		}
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 || len(p.AcquiredRecords) > 0 || len(p.Records) > 0 {
					t.Fatalf("share fetch of no bytes: partition %d error %d, %d acquired ranges, %d record bytes",
						p.Partition, p.ErrorCode, len(p.AcquiredRecords), len(p.Records))
				}
			}
		}
	}
	s.noBytes = false
	if got := s.acquire(t, ctx); got != n {
		t.Fatalf("acquired %d records after the fetches of no bytes, want %d", got, n)
	}
}

// TestShareSessionGoesWithItsConnection: a client that acquires records
// and goes away without closing its share session (its connection just
// closes) holds nothing: the broker drops the session as Kafka does, and
// another member gets the records at once, not after their 60 s lock.
// /metrics counts the sessions and the eviction.
func TestShareSessionGoesWithItsConnection(t *testing.T) {
	httpAddr := freeAddr(t)
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest", "--share-record-lock-duration", "60s", "--http-addr", httpAddr)
	const topic, group, n = "share-vanish", "sg-vanish", 10
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, n)
	td, err := newAdmin(t, addr).ListTopics(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}

	gone, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	s := &rawShareSession{cl: gone, group: group, member: "vanishing-member", topicID: td[topic].ID}
	if got := s.acquire(t, ctxT(t, 20*time.Second)); got != n {
		t.Fatalf("the first member acquired %d records, want %d", got, n)
	}
	if _, fam := scrape(t, httpAddr); sample(fam, "kaas_share_sessions") != 1 {
		t.Fatalf("kaas_share_sessions = %v, want 1", sample(fam, "kaas_share_sessions"))
	}
	gone.Close()

	next := shareConsumer(t, addr, group, topic)
	ctx := ctxT(t, 20*time.Second)
	redelivered := map[string]bool{}
	for len(redelivered) < n {
		fs := next.PollRecords(ctx, n)
		if ctx.Err() != nil {
			t.Fatalf("the second member got %d of the %d records the vanished member held: %v", len(redelivered), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.DeliveryCount() != 2 {
				t.Errorf("record %s delivered with count %d, want 2", r.Key, r.DeliveryCount())
			}
			redelivered[string(r.Key)] = true
		})
		next.MarkAcks(kgo.AckAccept)
	}
	_, fam := scrape(t, httpAddr)
	if got := sample(fam, "kaas_share_session_evictions_total"); got != 1 {
		t.Errorf("kaas_share_session_evictions_total = %v, want 1", got)
	}
	if got := sample(fam, "kaas_share_sessions"); got != 1 {
		t.Errorf("kaas_share_sessions = %v, want 1 (the second member's)", got)
	}
}

// TestShareSessionLimit: with --group-share-max-share-sessions=1 a second
// member's new session is refused with SHARE_SESSION_LIMIT_REACHED until
// the first member's session goes, closed or with its connection; the
// limit is reported as the broker config group.share.max.share.sessions.
func TestShareSessionLimit(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest", "--group-share-max-size", "1", "--group-share-max-share-sessions", "1")
	const topic, group = "share-limit", "sg-limit"
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, 3)
	adm := newAdmin(t, addr)
	td, err := adm.ListTopics(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t, 30*time.Second)
	open := func(member string) (*rawShareSession, int16) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		s := &rawShareSession{cl: cl, group: group, member: member, topicID: td[topic].ID}
		resp, err := s.fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s, resp.ErrorCode
	}
	a, code := open("member-a")
	if code != 0 {
		t.Fatalf("first session: %v", kerr.ErrorForCode(code))
	}
	if _, code := open("member-b"); code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("second session: %v, want SHARE_SESSION_LIMIT_REACHED", kerr.ErrorForCode(code))
	}
	// Closing the session (epoch -1) frees its place.
	a.epoch = -1
	if resp, err := a.fetch(ctx); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("closing the first session: %v %v", err, resp)
	}
	b, code := open("member-b")
	if code != 0 {
		t.Fatalf("second session after the first closed: %v", kerr.ErrorForCode(code))
	}
	// So does the connection that opened it closing.
	if _, code := open("member-c"); code != kerr.ShareSessionLimitReached.Code {
		t.Fatalf("third session: %v, want SHARE_SESSION_LIMIT_REACHED", kerr.ErrorForCode(code))
	}
	b.cl.Close()
	for {
		_, code := open("member-c")
		if code == 0 {
			break
		}
		if code != kerr.ShareSessionLimitReached.Code || ctx.Err() != nil {
			t.Fatalf("third session after the second's connection closed: %v (%v)", kerr.ErrorForCode(code), ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}

	const name = "group.share.max.share.sessions"
	if cfg, ok := brokerConfig(t, ctx, newClient(t, addr), 0, "0", name); !ok || cfg.MaybeValue() != "1" {
		t.Errorf("%s: %q (found %v), want 1", name, cfg.MaybeValue(), ok)
	}
	v := "3"
	res, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: name, Value: &v}}, 0)
	if err != nil || !errors.Is(res[0].Err, kerr.InvalidRequest) {
		t.Errorf("alter %s: %v %+v, want INVALID_REQUEST (read-only)", name, err, res)
	}
}

// acknowledge sends one ShareAcknowledge of first-last with ackType in the
// session.
func (s *rawShareSession) acknowledge(t *testing.T, ctx context.Context, first, last int64, ackType int8) {
	t.Helper()
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID = &s.group, &s.member
	req.ShareSessionEpoch = s.epoch
	tp := kmsg.NewShareAcknowledgeRequestTopic()
	tp.TopicID = s.topicID
	p := kmsg.NewShareAcknowledgeRequestTopicPartition()
	p.Partition = s.partition
	b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
	b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{ackType}
	p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	r, err := s.cl.Broker(0).Request(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.ShareAcknowledgeResponse)
	code := resp.ErrorCode
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			code = max(code, rp.ErrorCode)
		}
	}
	if code != 0 {
		t.Fatalf("acknowledge %d-%d: %v", first, last, kerr.ErrorForCode(code))
	}
	s.epoch++
}

// shareLag is a share-partition's start offset and lag as
// DescribeShareGroupOffsets (v1, through kadm) reports them.
func shareLag(t *testing.T, adm *kadm.Client, group, topic string) (start, lag int64) {
	t.Helper()
	offs, err := adm.DescribeShareGroupOffsets(ctxT(t, 20*time.Second), group)
	if err != nil {
		t.Fatalf("describe share group offsets: %v", err)
	}
	o, ok := offs[group].Offsets[topic][0]
	if !ok || o.Err != nil {
		t.Fatalf("describe share group offsets of %s: found %v, %v", topic, ok, o.Err)
	}
	return o.StartOffset, o.Lag
}

// TestShareGroupLag: DescribeShareGroupOffsets v1 reports each
// share-partition's lag as Kafka 4.2 does (KIP-1226): the end offset less
// the start offset and the records after it already acknowledged or
// archived; with the state in memory and on the volume.
func TestShareGroupLag(t *testing.T) {
	for _, withDir := range []bool{false, true} {
		name := "memory"
		args := []string{"--share-auto-offset-reset", "earliest"}
		if withDir {
			name = "data-dir"
			args = append(args, "--data-dir", t.TempDir())
		}
		t.Run(name, func(t *testing.T) {
			_, addr := testBroker(t, args...)
			const topic, group, n = "share-lag", "sg-lag", 10
			createTopic(t, addr, topic, 1, nil)
			produceKeys(t, addr, topic, 0, n)
			adm := newAdmin(t, addr)
			td, err := adm.ListTopics(ctxT(t, 10*time.Second), topic)
			if err != nil {
				t.Fatal(err)
			}
			ctx := ctxT(t, 30*time.Second)
			s := &rawShareSession{cl: newClient(t, addr), group: group, member: "lag-member", topicID: td[topic].ID}
			if got := s.acquire(t, ctx); got != n {
				t.Fatalf("acquired %d records, want %d", got, n)
			}
			if start, lag := shareLag(t, adm, group, topic); start != 0 || lag != n {
				t.Fatalf("all %d held: start %d lag %d, want 0 and %d", n, start, lag, n)
			}
			s.acknowledge(t, ctx, 2, 3, 1) // accept
			s.acknowledge(t, ctx, 5, 5, 3) // reject: archived
			if start, lag := shareLag(t, adm, group, topic); start != 0 || lag != n-3 {
				t.Fatalf("3 of %d done: start %d lag %d, want 0 and %d", n, start, lag, n-3)
			}
			s.acknowledge(t, ctx, 0, 1, 1)
			produceKeys(t, addr, topic, n, n+5)
			// 0-3 and 5 done: the start moves to 4; 4 and 6-14 remain.
			if start, lag := shareLag(t, adm, group, topic); start != 4 || lag != 10 {
				t.Fatalf("after 5 more produced: start %d lag %d, want 4 and 10", start, lag)
			}
		})
	}
}
