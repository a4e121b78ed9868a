package txn

import (
	"regexp"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/txnlog"
)

// The transaction APIs, up to the transaction protocol v2 (KIP-890 part 2:
// InitProducerId v5, AddPartitionsToTxn v5, AddOffsetsToTxn v4, EndTxn v5).
// Of those, EndTxn v5 changes what the coordinator does (every end bumps
// the epoch, endTxnV2); the others are the versions a client of the
// protocol sends, answered as their previous ones. InitProducerId replaces
// the idempotent-only handler of actors/conn.

// APIs lists the coordinator's APIs, by key.
func (c *Coordinator) APIs() []conn.API {
	return []conn.API{
		{Key: kmsg.InitProducerID.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleInitProducerID},
		{Key: kmsg.AddPartitionsToTxn.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleAddPartitions, ErrorResponse: addPartitionsError},
		{Key: kmsg.AddOffsetsToTxn.Int16(), MinVersion: 0, MaxVersion: 4, Handle: c.handleAddOffsets},
		{Key: kmsg.EndTxn.Int16(), MinVersion: 0, MaxVersion: 5, Handle: c.handleEndTxn},
		{Key: kmsg.DescribeTransactions.Int16(), MinVersion: 0, MaxVersion: 0, Handle: c.handleDescribe, ErrorResponse: describeError},
		{Key: kmsg.ListTransactions.Int16(), MinVersion: 0, MaxVersion: 2, Handle: c.handleList},
	}
}

// Register serves the transaction APIs on srv.
func (c *Coordinator) Register(srv *conn.Server) {
	for _, a := range c.APIs() {
		srv.Register(a)
	}
}

// ask sends ev (built with its reply) for id to the coordinator and returns
// a function that waits for the result.
func (c *Coordinator) ask(r *conn.Request, id string, build func(reply func(Result)) any) func() Result {
	if id == "" {
		return func() Result { return Result{ErrorCode: kerr.InvalidRequest.Code, ProducerID: -1, Epoch: -1} }
	}
	if _, ours := r.View.CoordinatorFor(id); !ours {
		return func() Result { return Result{ErrorCode: kerr.NotCoordinator.Code, ProducerID: -1, Epoch: -1} }
	}
	ch := make(chan Result, 1)
	c.ref.Send(&call{id: id, ev: build(func(res Result) { ch <- res })})
	return func() Result {
		select {
		case res := <-ch:
			return res
		case <-c.done:
			return Result{ErrorCode: kerr.CoordinatorNotAvailable.Code, ProducerID: -1, Epoch: -1}
		}
	}
}

// fencedCode answers PRODUCER_FENCED as INVALID_PRODUCER_EPOCH to versions
// older than fencedSince, which predate the code (KIP-588).
func fencedCode(code int16, version, fencedSince int16) int16 {
	if code == kerr.ProducerFenced.Code && version < fencedSince {
		return kerr.InvalidProducerEpoch.Code
	}
	return code
}

func (c *Coordinator) handleInitProducerID(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID == nil {
		// Idempotent producer: a fresh id, nothing to coordinate.
		resp.ProducerID, resp.ProducerEpoch = r.Server.NextProducerID(), 0
		return conn.Ready(resp)
	}
	id, timeout, pid, epoch := *req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch
	newPID := r.Server.NextProducerID()
	wait := c.ask(r, id, func(reply func(Result)) any {
		return InitProducerID{ID: id, TimeoutMs: timeout, ProducerID: pid, Epoch: epoch, NewPID: newPID, Reply: reply}
	})
	return func() kmsg.Response {
		res := wait()
		resp.ErrorCode = fencedCode(res.ErrorCode, req.Version, 4)
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch
		if res.ErrorCode != 0 {
			resp.ProducerID, resp.ProducerEpoch = -1, -1
		}
		return resp
	}
}

// addTarget is one transaction of an AddPartitionsToTxn request.
type addTarget struct {
	id         string
	pid        int64
	epoch      int16
	verifyOnly bool
	topics     map[string][]int32
	order      []string
}

func (c *Coordinator) handleAddPartitions(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var targets []addTarget
	if req.Version < 4 {
		t := addTarget{id: req.TransactionalID, pid: req.ProducerID, epoch: req.ProducerEpoch, topics: map[string][]int32{}}
		for _, tp := range req.Topics {
			t.order = append(t.order, tp.Topic)
			t.topics[tp.Topic] = append(t.topics[tp.Topic], tp.Partitions...)
		}
		targets = append(targets, t)
	} else {
		for _, x := range req.Transactions {
			t := addTarget{id: x.TransactionalID, pid: x.ProducerID, epoch: x.ProducerEpoch, verifyOnly: x.VerifyOnly, topics: map[string][]int32{}}
			for _, tp := range x.Topics {
				t.order = append(t.order, tp.Topic)
				t.topics[tp.Topic] = append(t.topics[tp.Topic], tp.Partitions...)
			}
			targets = append(targets, t)
		}
	}
	type pending struct {
		t       addTarget
		unknown map[TP]bool
		wait    func() Result
	}
	var all []pending
	for _, t := range targets {
		p := pending{t: t, unknown: map[TP]bool{}}
		if group, ok := groupAdd(req, t); ok {
			// A group coordinator adding a group (TxnOffsetCommit v5+).
			t := t
			p.wait = c.ask(r, t.id, func(reply func(Result)) any {
				return AddOffsets{ID: t.id, ProducerID: t.pid, Epoch: t.epoch, Group: group, Reply: reply}
			})
			all = append(all, p)
			continue
		}
		var tps []TP
		for _, topic := range t.order {
			top, ok := r.View.Topics[topic]
			for _, part := range t.topics[topic] {
				tp := TP{Topic: topic, Partition: part}
				if !ok || part < 0 || int(part) >= len(top.Partitions) {
					p.unknown[tp] = true
					continue
				}
				tps = append(tps, tp)
			}
		}
		if len(p.unknown) == 0 {
			t := t
			p.wait = c.ask(r, t.id, func(reply func(Result)) any {
				return AddPartitions{ID: t.id, ProducerID: t.pid, Epoch: t.epoch, Partitions: tps, VerifyOnly: t.verifyOnly, Reply: reply}
			})
		}
		all = append(all, p)
	}
	return func() kmsg.Response {
		for _, p := range all {
			// A request naming an unknown partition adds nothing: that
			// partition answers UNKNOWN_TOPIC_OR_PARTITION, the others
			// OPERATION_NOT_ATTEMPTED, as Kafka.
			code := int16(0)
			if p.wait != nil {
				code = fencedCode(p.wait().ErrorCode, req.Version, 2)
			}
			var topics []kmsg.AddPartitionsToTxnResponseTopic
			for _, topic := range p.t.order {
				rt := kmsg.NewAddPartitionsToTxnResponseTopic()
				rt.Topic = topic
				for _, part := range p.t.topics[topic] {
					rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
					rp.Partition, rp.ErrorCode = part, code
					if p.wait == nil {
						rp.ErrorCode = kerr.OperationNotAttempted.Code
						if p.unknown[TP{Topic: topic, Partition: part}] {
							rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
						}
					}
					rt.Partitions = append(rt.Partitions, rp)
				}
				topics = append(topics, rt)
			}
			if req.Version < 4 {
				resp.Topics = topics
				continue
			}
			rx := kmsg.NewAddPartitionsToTxnResponseTransaction()
			rx.TransactionalID = p.t.id
			for _, t := range topics {
				rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, p.ErrorCode
					rt.Partitions = append(rt.Partitions, rp)
				}
				rx.Topics = append(rx.Topics, rt)
			}
			resp.Transactions = append(resp.Transactions, rx)
		}
		return resp
	}
}

// groupAdd reports whether t, of a broker's AddPartitionsToTxn (v4+), adds
// a consumer group to its transaction: one partition of the group's marker
// topic (messages.GroupMarkerTopic), which no topic is named like.
func groupAdd(req *kmsg.AddPartitionsToTxnRequest, t addTarget) (string, bool) {
	if req.Version < 4 || t.verifyOnly || len(t.order) != 1 || len(t.topics[t.order[0]]) != 1 {
		return "", false
	}
	if group, ok := messages.GroupOfMarkerTopic(t.order[0]); ok {
		return group, true
	}
	return "", false
}

// addPartitionsError answers every partition (v0-3) or the request (v4+)
// with code.
func addPartitionsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version >= 4 {
		resp.ErrorCode = code
		return resp
	}
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) handleAddOffsets(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	if req.Group == "" {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return conn.Ready(resp)
	}
	wait := c.ask(r, req.TransactionalID, func(reply func(Result)) any {
		return AddOffsets{ID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch, Group: req.Group, Reply: reply}
	})
	return func() kmsg.Response {
		resp.ErrorCode = fencedCode(wait().ErrorCode, req.Version, 2)
		return resp
	}
}

func (c *Coordinator) handleEndTxn(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	v2, newPID := req.Version >= 5, int64(-1)
	if v2 {
		newPID = r.Server.NextProducerID() // used when the epoch is exhausted
	}
	wait := c.ask(r, req.TransactionalID, func(reply func(Result)) any {
		return EndTxn{ID: req.TransactionalID, ProducerID: req.ProducerID, Epoch: req.ProducerEpoch, Commit: req.Commit,
			V2: v2, NewPID: newPID, Reply: reply}
	})
	return func() kmsg.Response {
		res := wait()
		resp.ErrorCode = fencedCode(res.ErrorCode, req.Version, 2)
		resp.ProducerID, resp.ProducerEpoch = res.ProducerID, res.Epoch // v5+
		return resp
	}
}

// states asks the coordinator for the states of ids (nil: all it holds).
func (c *Coordinator) states(ids []string) func() []txnlog.State {
	ch := make(chan []txnlog.State, 1)
	c.ref.Send(&describe{ids: ids, reply: func(s []txnlog.State) { ch <- s }})
	return func() []txnlog.State {
		select {
		case s := <-ch:
			return s
		case <-c.done:
			return nil
		}
	}
}

func (c *Coordinator) handleDescribe(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	var ours []string
	for _, id := range req.TransactionalIDs {
		if _, ok := r.View.CoordinatorFor(id); ok {
			ours = append(ours, id)
		}
	}
	wait := c.states(ours)
	return func() kmsg.Response {
		got := map[string]txnlog.State{}
		for _, st := range wait() {
			got[st.ID] = st
		}
		for _, id := range req.TransactionalIDs {
			ts := kmsg.NewDescribeTransactionsResponseTransactionState()
			ts.TransactionalID, ts.ProducerID, ts.ProducerEpoch, ts.StartTimestamp = id, -1, -1, -1
			st, ok := got[id]
			switch {
			case !slices.Contains(ours, id):
				ts.ErrorCode = kerr.NotCoordinator.Code
			case !ok:
				ts.ErrorCode = kerr.TransactionalIDNotFound.Code
			default:
				ts.State, ts.TimeoutMillis, ts.ProducerID, ts.ProducerEpoch = st.Status.String(), st.TimeoutMs, st.ProducerID, st.Epoch
				if st.Status == txnlog.Ongoing || st.Status == txnlog.PrepareCommit || st.Status == txnlog.PrepareAbort {
					ts.StartTimestamp = st.StartMs
				}
				byTopic := map[string][]int32{}
				var topics []string
				for _, tp := range st.Partitions {
					if _, seen := byTopic[tp.Topic]; !seen {
						topics = append(topics, tp.Topic)
					}
					byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
				}
				for _, t := range topics {
					rt := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					rt.Topic, rt.Partitions = t, byTopic[t]
					ts.Topics = append(ts.Topics, rt)
				}
			}
			resp.TransactionStates = append(resp.TransactionStates, ts)
		}
		return resp
	}
}

// describeError answers every transactional id with code.
func describeError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		ts := kmsg.NewDescribeTransactionsResponseTransactionState()
		ts.TransactionalID, ts.ErrorCode = id, code
		resp.TransactionStates = append(resp.TransactionStates, ts)
	}
	return resp
}

// knownStates are the state names ListTransactions filters on.
var knownStates = []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (c *Coordinator) handleList(r *conn.Request) conn.Pending {
	req := r.Body.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRequest.Code
			return conn.Ready(resp)
		}
		pattern = re
	}
	for _, s := range req.StateFilters {
		if !slices.Contains(knownStates, s) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
		}
	}
	nowMs := c.clock.Now().UnixMilli()
	wait := c.states(nil)
	return func() kmsg.Response {
		states := wait()
		sort.Slice(states, func(i, j int) bool { return states[i].ID < states[j].ID })
		for _, st := range states {
			name := st.Status.String()
			switch {
			case len(req.StateFilters) > 0 && !slices.Contains(req.StateFilters, name):
				continue
			case len(req.ProducerIDFilters) > 0 && !slices.Contains(req.ProducerIDFilters, st.ProducerID):
				continue
			case req.DurationFilterMillis > 0 && (st.Status != txnlog.Ongoing || nowMs-st.StartMs < req.DurationFilterMillis):
				continue
			case pattern != nil && !pattern.MatchString(st.ID):
				continue
			}
			ts := kmsg.NewListTransactionsResponseTransactionState()
			ts.TransactionalID, ts.ProducerID, ts.TransactionState = st.ID, st.ProducerID, name
			resp.TransactionStates = append(resp.TransactionStates, ts)
		}
		return resp
	}
}
