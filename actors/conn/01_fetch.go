package conn

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/actors/quota"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
)

// Fetch (key 1): v4-16, long polling, KIP-74 size limits, leader-epoch
// checks and diverging epochs (answered by the partition actor), KIP-951
// leader hints (leader_hints.go). Records go out without a copy
// (zerocopy.go). A consumer_byte_rate quota meters the records answered
// and throttles (throttleFetch). Fetch sessions (KIP-227) are not offered.
func init() {
	serve(API{Key: kmsg.Fetch.Int16(), MinVersion: 4, MaxVersion: 16, Handle: handleFetch, ErrorResponse: fetchError})
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
	req    *kmsg.FetchRequestTopicPartition
	res    messages.FetchResult
	done   bool
	// committed: read_committed (IsolationLevel 1).
	committed bool
}

// handleFetch serves Fetch with long polling: if fewer than MinBytes are
// available it waits (up to MaxWaitMillis) for any partition's high
// watermark to move, then reads again. Fetch sessions (KIP-227) are not
// offered: the response's session id is 0, so clients send full fetches.
func handleFetch(r *Request) Pending {
	req := r.Body.(*kmsg.FetchRequest)
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	if req.SessionID != 0 {
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return Ready(resp)
	}
	v := r.View
	var slots []*fetchSlot
	// A partition refused at routing (not led here) answers the whole fetch
	// at once, as Kafka does for a partition in error, not after the long
	// poll of the others: the consumer needs the error (and its hint) now.
	refusedHere := false
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for i := range req.Topics {
		t := &req.Topics[i]
		rt := &resp.Topics[i]
		*rt = kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name, known := t.Topic, true
		if req.Version >= 13 {
			name, known = topicName(v, "", t.TopicID)
		}
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		var tm *metrics.Topic // resolved once per topic, on its first served partition
		for j := range t.Partitions {
			p := &t.Partitions[j]
			rp := &rt.Partitions[j]
			*rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			// Empty, not null: librdkafka rejects a null record set.
			rp.RecordBatches = []byte{}
			if !known {
				rp.ErrorCode = kerr.UnknownTopicID.Code
				continue
			}
			target, code := partitionTarget(v, name, p.Partition)
			if code != 0 {
				rp.ErrorCode = code
				refusedHere = true
				continue
			}
			if tm == nil {
				tm = metrics.ForTopic(name)
			}
			slots = append(slots, &fetchSlot{ti: i, pi: j, topic: tm, rp: rp, target: target, req: p, committed: req.IsolationLevel == 1})
		}
	}
	maxBytes := int(req.MaxBytes)
	if maxBytes <= 0 {
		maxBytes = 1 << 30
	}
	// Under a consumer_byte_rate quota one answer holds at most what the
	// quota allows in its window, as Kafka caps it, so that an answer
	// can fit the quota at all.
	if n, ok := r.Server.Quotas.MaxInWindow(quota.Fetch, r.quotaUser(), r.Header.ClientIDString()); ok {
		maxBytes = max(min(maxBytes, n), 1)
		for _, s := range slots {
			s.req.PartitionMaxBytes = int32(min(int(s.req.PartitionMaxBytes), maxBytes))
		}
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
			woken := make(chan struct{}, 1)
			watch := func() {
				for _, s := range slots {
					if recordsLen(s) > 0 {
						continue
					}
					s.target.ref.Send(tracing.Wrap(waitCtx, &messages.WatchHighWatermark{Offset: s.req.FetchOffset, Committed: s.committed, Notify: func() {
						select {
						case woken <- struct{}{}:
						default:
						}
					}}))
				}
			}
			watch()
		loop:
			for total < minBytes {
				select {
				case <-deadline.C:
					break loop
				case <-woken:
					tracing.Event(waitSpan, "woken")
					again := sendFetches(waitCtx, slots, func(s *fetchSlot) bool { return recordsLen(s) == 0 })
					again.Wait()
					total = fetchedBytes(slots)
					if anyError(slots) {
						break loop
					}
					watch()
				}
			}
			deadline.Stop()
			tracing.EndWait(waitSpan, total)
		}
		out := fill(resp, slots, maxBytes)
		r.Server.noteRefusal(hintFetch(r.CurrentView(), resp))
		return throttleFetch(r, slots, out.(*fetchResponse))
	}
}

func recordsLen(s *fetchSlot) int {
	if s.res.Records == nil {
		return 0
	}
	return s.res.Records.Len()
}

// sendFetches sends a Fetch to every slot (that want selects) and returns
// the wait group for the replies.
func sendFetches(ctx context.Context, slots []*fetchSlot, want func(*fetchSlot) bool) *waitGroup {
	wg := new(waitGroup)
	for _, s := range slots {
		if want != nil && !want(s) {
			continue
		}
		if s.res.Records != nil {
			_ = s.res.Records.Close()
		}
		s := s
		wg.Add(1)
		s.target.ref.Send(tracing.Wrap(ctx, &messages.Fetch{
			Offset:             s.req.FetchOffset,
			MaxBytes:           s.req.PartitionMaxBytes,
			CurrentLeaderEpoch: s.req.CurrentLeaderEpoch,
			LastFetchedEpoch:   s.req.LastFetchedEpoch,
			IsolationLevel:     isolation(s.committed),
			Reply: func(res messages.FetchResult) {
				s.res, s.done = res, true
				wg.Done()
			},
		}))
	}
	return wg
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
func fill(resp *kmsg.FetchResponse, slots []*fetchSlot, maxBytes int) kmsg.Response {
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
func throttleFetch(r *Request, slots []*fetchSlot, out *fetchResponse) kmsg.Response {
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
		return sent()
	}
	out.ThrottleMillis = throttleMillis(d)
	if limit, _ := r.Server.Quotas.MaxInWindow(quota.Fetch, r.quotaUser(), r.Header.ClientIDString()); n > limit {
		return sent()
	}
	r.unrecordQuota(quota.Fetch, n)
	out.release()
	resp := out.FetchResponse
	resp.Topics = nil
	return resp
}

// isolation is the Fetch isolation level of a slot.
func isolation(committed bool) int8 {
	if committed {
		return 1
	}
	return 0
}
