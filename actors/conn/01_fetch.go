package conn

import (
	"cmp"
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn/fetchsession"
	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/quota"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
)

// Fetch (key 1): v4-18 (v17 and v18 add only tagged fields a follower
// replica sends), long polling, KIP-74 size limits, leader-epoch
// checks and diverging epochs (answered by the partition actor), KIP-951
// leader hints (leader_hints.go), incremental fetch sessions (KIP-227,
// fetchsession). Records go out without a copy (zerocopy.go). A
// consumer_byte_rate quota meters the records answered and throttles
// (throttleFetch).
func init() {
	serve(API{Key: kmsg.Fetch.Int16(), MinVersion: 4, MaxVersion: 18, Handle: handleFetch, ErrorResponse: fetchError})
}

// fetchError answers a Fetch with code at the top level.
func fetchError(body kmsg.Request, code int16) kmsg.Response {
	resp := body.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = code
	return resp
}

// fetchSlot is one partition of a fetch in flight.
type fetchSlot struct {
	ti, pi int // indexes of rp in the response
	topic  *metrics.Topic
	rp     *kmsg.FetchResponseTopicPartition
	target partitionRef
	req    fetchsession.Params
	res    messages.FetchResult
	done   bool
	// woke: the partition's high-watermark watch fired during the long poll.
	woke atomic.Bool
	// committed: read_committed (IsolationLevel 1).
	committed bool
}

// sessionRequest is the session part of a Fetch request. Fetch v4-6 have
// no session fields: they are full fetches without a session.
func sessionRequest(req *kmsg.FetchRequest) fetchsession.Request {
	sr := fetchsession.Request{SessionID: req.SessionID, Epoch: req.SessionEpoch, UsesTopicIDs: req.Version >= 13}
	if req.Version < 7 {
		sr.SessionID, sr.Epoch = 0, fetchsession.FinalEpoch
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			sr.Partitions = append(sr.Partitions, fetchsession.Entry{
				Key: sessionKey(sr.UsesTopicIDs, t.Topic, t.TopicID, p.Partition),
				Params: fetchsession.Params{FetchOffset: p.FetchOffset, LogStartOffset: p.LogStartOffset, MaxBytes: p.PartitionMaxBytes,
					CurrentLeaderEpoch: p.CurrentLeaderEpoch, LastFetchedEpoch: p.LastFetchedEpoch},
			})
		}
	}
	if req.Version >= 7 {
		for _, t := range req.ForgottenTopics {
			for _, p := range t.Partitions {
				sr.Forgotten = append(sr.Forgotten, sessionKey(sr.UsesTopicIDs, t.Topic, t.TopicID, p))
			}
		}
	}
	return sr
}

// sessionKey names a partition by topic id (v13+) or by name, never both,
// so a session's keys do not change when a topic's name resolves.
func sessionKey(usesIDs bool, topic string, id [16]byte, p int32) fetchsession.Key {
	if usesIDs {
		return fetchsession.Key{TopicID: id, Partition: p}
	}
	return fetchsession.Key{Topic: topic, Partition: p}
}

// handleFetch serves Fetch with long polling: if fewer than MinBytes are
// available it waits (up to MaxWaitMillis) for any partition's high
// watermark to move, then reads again. A fetch in a session reads every
// partition of its session and answers only those with something new.
func handleFetch(r *Request) Pending {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	sessions, clk := r.Server.fetchSessions, r.Server.cfg.Clock
	fs, code := sessions.Begin(clk.Now(), sessionRequest(req))
	if code != 0 {
		resp.ErrorCode = code
		return Ready(resp)
	}
	v := r.View
	var z *authz
	if fs.Incremental() && r.Server.Authorizer != nil {
		// Partitions the session holds from earlier requests are checked
		// again on every fetch, as Kafka does.
		z = &authz{a: r.Server.Authorizer, s: r.Session, view: v}
	}
	var slots []*fetchSlot
	// A partition refused at routing (not led here) answers the whole fetch
	// at once, as Kafka does for a partition in error, not after the long
	// poll of the others: the consumer needs the error (and its hint) now.
	refusedHere := false
	// at is where each of fs.Partitions sits in the response: consecutive
	// partitions of one topic share a response topic.
	at := make([][2]int, len(fs.Partitions))
	resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(req.Topics))
	var rt *kmsg.FetchResponseTopic
	var name string
	var known bool
	var tm *metrics.Topic // resolved once per topic, on its first served partition
	for i, e := range fs.Partitions {
		if rt == nil || e.Topic != rt.Topic || e.TopicID != rt.TopicID {
			resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
			rt = &resp.Topics[len(resp.Topics)-1]
			rt.Topic, rt.TopicID = e.Topic, e.TopicID
			name, known, tm = e.Topic, true, nil
			if req.Version >= 13 {
				name, known = topicName(v, "", e.TopicID)
			}
		}
		ti := len(resp.Topics) - 1
		rt.Partitions = append(rt.Partitions, kmsg.NewFetchResponseTopicPartition())
		at[i] = [2]int{ti, len(rt.Partitions) - 1}
		rp := &rt.Partitions[len(rt.Partitions)-1]
		rp.Partition = e.Partition
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		// Empty, not null: librdkafka rejects a null record set.
		rp.RecordBatches = []byte{}
		if !known {
			rp.ErrorCode = kerr.UnknownTopicID.Code
			continue
		}
		if z != nil && !z.topic(opRead, name) {
			rp.ErrorCode = codeTopicAuth
			continue
		}
		target, code := partitionTarget(v, name, e.Partition)
		if code != 0 {
			rp.ErrorCode = code
			refusedHere = true
			continue
		}
		if tm == nil {
			tm = metrics.ForTopic(name)
		}
		slots = append(slots, &fetchSlot{ti: ti, pi: at[i][1], topic: tm, target: target, req: e.Params, committed: req.IsolationLevel == 1})
	}
	// Response partitions are appended above, so their addresses are taken
	// once every topic is complete.
	for _, s := range slots {
		s.rp = &resp.Topics[s.ti].Partitions[s.pi]
	}
	// The broker's fetch.max.bytes caps what the request asks, as Kafka's
	// does (the first batch still goes whole, KIP-74).
	maxBytes := int(req.MaxBytes)
	if limit := cmp.Or(r.Server.FetchMaxBytes, DefaultFetchMaxBytes); maxBytes <= 0 || maxBytes > limit {
		maxBytes = limit
	}
	// Under a consumer_byte_rate quota one answer holds at most what the
	// quota allows in its window, as Kafka caps it, so that an answer
	// can fit the quota at all.
	if n, ok := r.Server.Quotas.MaxInWindow(quota.Fetch, r.quotaUser(), r.Header.ClientIDString()); ok {
		maxBytes = max(min(maxBytes, n), 1)
	}
	// No partition reads more than the whole answer may hold (Kafka reads
	// each partition up to what is left of it): the partitions are read
	// at once here, so each is bounded by the whole, and fill keeps the
	// answer within it.
	for _, s := range slots {
		s.req.MaxBytes = int32(min(int(s.req.MaxBytes), maxBytes))
	}
	minBytes := int(req.MinBytes)
	wait := time.Duration(req.MaxWaitMillis) * time.Millisecond
	// The first read is sent now, from Receive, so it observes every produce
	// this connection sent before it.
	first := sendFetches(r.Ctx, slots, nil)
	return func() kmsg.Response {
		first.Wait()
		total := fetchedBytes(slots)
		if total < minBytes && wait > 0 && !refusedHere && !anyError(slots) && len(slots) > 0 {
			waitCtx, waitSpan := tracing.StartWait(r.Ctx, "conn Fetch wait", wait)
			deadline := time.NewTimer(wait)
			// A partition whose watch fires marks its slot and wakes the
			// poll, which reads again only the partitions that woke: the
			// others' watches stay in place.
			woken := make(chan struct{}, 1)
			var answered atomic.Bool
			abandoned := answered.Load
			watch := func(s *fetchSlot) {
				s.target.ref.Send(tracing.Wrap(waitCtx, &messages.WatchHighWatermark{Offset: s.req.FetchOffset, Committed: s.committed, Abandoned: abandoned, Notify: func() {
					s.woke.Store(true)
					select {
					case woken <- struct{}{}:
					default:
					}
				}}))
			}
			for _, s := range slots {
				if recordsLen(s) == 0 {
					watch(s)
				}
			}
		loop:
			for total < minBytes {
				select {
				case <-deadline.C:
					break loop
				case <-woken:
					tracing.Event(waitSpan, "woken")
					again := sendFetches(waitCtx, slots, func(s *fetchSlot) bool { return s.woke.Swap(false) && recordsLen(s) == 0 })
					again.Wait()
					total = fetchedBytes(slots)
					if anyError(slots) {
						break loop
					}
					for _, s := range again.slots {
						if recordsLen(s) == 0 {
							watch(s)
						}
					}
				}
			}
			answered.Store(true)
			deadline.Stop()
			tracing.EndWait(waitSpan, total)
		}
		out := fill(resp, slots, maxBytes)
		if throttled, emptied := throttleFetch(r, slots, out); emptied {
			throttled.(*kmsg.FetchResponse).SessionID = sessions.Throttled(clk.Now(), fs)
			r.Server.noteRefusal(hintFetch(r.CurrentView(), resp))
			return throttled
		}
		outcomes := make([]fetchsession.Outcome, len(fs.Partitions))
		for i, a := range at {
			rp := &resp.Topics[a[0]].Partitions[a[1]]
			_, recs := out.recs[a]
			outcomes[i] = fetchsession.Outcome{ErrorCode: rp.ErrorCode, HighWatermark: rp.HighWatermark, LastStableOffset: rp.LastStableOffset,
				LogStartOffset: rp.LogStartOffset, Records: recs, Diverging: rp.DivergingEpoch.Epoch >= 0}
		}
		id, include := sessions.Finish(clk.Now(), fs, outcomes)
		resp.SessionID = id
		if fs.Incremental() {
			omitUnchanged(out, at, include)
		}
		r.Server.noteRefusal(hintFetch(r.CurrentView(), resp))
		return out
	}
}

// omitUnchanged drops from an incremental answer the partitions include
// leaves out, and the topics left without partitions. Records stay with
// their partitions (the answer's record map is re-keyed).
func omitUnchanged(out *fetchResponse, at [][2]int, include []bool) {
	resp := out.FetchResponse
	keep := make(map[[2]int]bool, len(at))
	for i, a := range at {
		if include[i] {
			keep[a] = true
		}
	}
	recs := make(map[[2]int]storage.Records, len(out.recs))
	topics := resp.Topics[:0]
	for ti := range resp.Topics {
		t := resp.Topics[ti]
		parts := t.Partitions[:0]
		for pi := range t.Partitions {
			if !keep[[2]int{ti, pi}] {
				continue
			}
			if rec, ok := out.recs[[2]int{ti, pi}]; ok {
				recs[[2]int{len(topics), len(parts)}] = rec
			}
			parts = append(parts, t.Partitions[pi])
		}
		if len(parts) == 0 {
			continue
		}
		t.Partitions = parts
		topics = append(topics, t)
	}
	resp.Topics = topics
	out.recs = recs
}

func recordsLen(s *fetchSlot) int {
	if s.res.Records == nil {
		return 0
	}
	return s.res.Records.Len()
}

// fetchRound is the reads of one round of a fetch: the slots read and
// the wait for their replies.
type fetchRound struct {
	wg    waitGroup
	slots []*fetchSlot
}

// Wait waits for every reply of the round.
func (r *fetchRound) Wait() { r.wg.Wait() }

// sendFetches sends a Fetch to every slot (that want selects) and returns
// the round.
func sendFetches(ctx context.Context, slots []*fetchSlot, want func(*fetchSlot) bool) *fetchRound {
	round := new(fetchRound)
	for _, s := range slots {
		if want != nil && !want(s) {
			continue
		}
		if s.res.Records != nil {
			_ = s.res.Records.Close()
		}
		s := s
		round.slots = append(round.slots, s)
		round.wg.Add(1)
		s.target.ref.Send(tracing.Wrap(ctx, &messages.Fetch{
			Offset:             s.req.FetchOffset,
			MaxBytes:           s.req.MaxBytes,
			CurrentLeaderEpoch: s.req.CurrentLeaderEpoch,
			LastFetchedEpoch:   s.req.LastFetchedEpoch,
			IsolationLevel:     isolation(s.committed),
			Reply: func(res messages.FetchResult) {
				s.res, s.done = res, true
				round.wg.Done()
			},
		}))
	}
	return round
}

func fetchedBytes(slots []*fetchSlot) int {
	n := 0
	for _, s := range slots {
		n += recordsLen(s)
	}
	return n
}

func anyError(slots []*fetchSlot) bool {
	for _, s := range slots {
		if s.res.ErrorCode != 0 || s.res.Diverging {
			return true
		}
	}
	return false
}

// fill puts results into the response, honouring the request-wide
// MaxBytes: the first non-empty partition is always returned whole (KIP-74),
// later ones only while they fit. Records are not copied: the response
// carries them to the connection's writer, which sends them (sendfile for
// file-backed records) and closes them.
func fill(resp *kmsg.FetchResponse, slots []*fetchSlot, maxBytes int) *fetchResponse {
	out := &fetchResponse{FetchResponse: resp, recs: map[[2]int]storage.Records{}}
	used := 0
	for _, s := range slots {
		rp, res := s.rp, s.res
		rp.ErrorCode = res.ErrorCode
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
		if res.Diverging {
			rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset = res.DivergingEpoch, res.DivergingEndOffset
		}
		for _, t := range res.Aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = t.ProducerID, t.FirstOffset
			rp.AbortedTransactions = append(rp.AbortedTransactions, at)
		}
		// An empty record set, never a null one: librdkafka refuses null
		// (MessageSetSize -1) in Fetch responses.
		rp.RecordBatches = []byte{}
		if res.Records == nil {
			continue
		}
		n := res.Records.Len()
		if n > 0 && (used == 0 || used+n <= maxBytes) {
			out.recs[[2]int{s.ti, s.pi}] = res.Records
			used += n
			continue
		}
		_ = res.Records.Close()
	}
	return out
}

var _ storage.Records = storage.BytesRecords(nil)

// throttleFetch meters a Fetch answer's record bytes against the
// connection's consumer_byte_rate quota. Over quota, the answer is sent
// empty with the throttle time and the bytes are taken back, as Kafka
// does: the consumer fetches them again once unmuted. An answer larger
// than the quota allows in a window (one record batch bigger than that
// cap) goes out whole with its throttle time instead, so the consumer is
// slowed, never stalled.
func throttleFetch(r *Request, slots []*fetchSlot, out *fetchResponse) (resp kmsg.Response, emptied bool) {
	n := 0
	for _, rec := range out.recs {
		n += rec.Len()
	}
	// kaas_fetched_bytes_total counts the records an answer carries.
	sent := func() kmsg.Response {
		for _, s := range slots {
			if rec, ok := out.recs[[2]int{s.ti, s.pi}]; ok {
				s.topic.Fetched(rec.Len())
			}
		}
		return out
	}
	d := r.recordQuota(quota.Fetch, n)
	if d == 0 {
		return sent(), false
	}
	out.ThrottleMillis = throttleMillis(d)
	if limit, _ := r.Server.Quotas.MaxInWindow(quota.Fetch, r.quotaUser(), r.Header.ClientIDString()); n > limit {
		return sent(), false
	}
	r.unrecordQuota(quota.Fetch, n)
	out.release()
	empty := out.FetchResponse
	empty.Topics = nil
	return empty, true
}

// isolation is the Fetch isolation level of a slot.
func isolation(committed bool) int8 {
	if committed {
		return 1
	}
	return 0
}

// DefaultFetchMaxBytes is Kafka's fetch.max.bytes default (55 MiB).
const DefaultFetchMaxBytes = 57671680
