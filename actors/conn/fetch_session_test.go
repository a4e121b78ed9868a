package conn

import (
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/routing"
)

// sessionFetch runs one Fetch v12 of topic t through handleFetch (no long
// poll) and returns its answer: partitions maps a partition to its fetch
// offset; forget lists partitions to drop from the session.
func sessionFetch(t *testing.T, srv *Server, v *routing.View, id, epoch int32, partitions map[int32]int64, forget ...int32) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.SessionID, req.SessionEpoch = id, epoch
	if len(partitions) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		for p := int32(0); p < 3; p++ {
			off, ok := partitions[p]
			if !ok {
				continue
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, off, -1, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(forget) > 0 {
		ft := kmsg.NewFetchRequestForgottenTopic()
		ft.Topic, ft.Partitions = "t", forget
		req.ForgottenTopics = append(req.ForgottenTopics, ft)
	}
	switch r := handleFetch(&Request{Body: req, View: v, Server: srv})().(type) {
	case *fetchResponse:
		return r.FetchResponse
	case *kmsg.FetchResponse: // a top-level error
		return r
	default:
		t.Fatalf("answer %T", r)
		return nil
	}
}

// partitionsOf lists the partitions of topic t an answer carries, with their
// error codes.
func partitionsOf(resp *kmsg.FetchResponse) map[int32]int16 {
	got := map[int32]int16{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			got[rp.Partition] = rp.ErrorCode
		}
	}
	return got
}

// TestFetchSessionOverHandleFetch: a full fetch at epoch 0 opens a session
// and answers every partition; incremental fetches answer only what
// changed: nothing while the partitions are idle, and a partition that
// moves to another broker with NOT_LEADER_OR_FOLLOWER until the client
// forgets it. Unknown sessions and wrong epochs get their top-level codes.
func TestFetchSessionOverHandleFetch(t *testing.T) {
	system := actorsys.NewSystem()
	defer system.Shutdown()
	var refs []actorsys.Ref
	for _, name := range []string{"idle-0", "idle-1"} {
		ref, err := system.Spawn(name, func() actor.Actor { return idlePartition{} })
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	view := func(p1Leader int32) *routing.View {
		v := &routing.View{
			Self:    1,
			Brokers: []routing.Broker{{ID: 1, Host: "h1", Port: 9001, Alive: true}, {ID: 2, Host: "h2", Port: 9002, Alive: true}},
			Topics: map[string]*routing.Topic{"t": {Name: "t", ID: [16]byte{7}, Partitions: []routing.Partition{
				{Leader: 1, LeaderEpoch: 3}, {Leader: p1Leader, LeaderEpoch: 3},
			}}},
			Local: map[routing.TP]actorsys.Ref{{Topic: "t", Partition: 0}: refs[0]},
		}
		if p1Leader == 1 {
			v.Local[routing.TP{Topic: "t", Partition: 1}] = refs[1]
		}
		v.TopicIDs = map[[16]byte]*routing.Topic{{7}: v.Topics["t"]}
		return v
	}
	store := &routing.Store{}
	here := view(1)
	store.Publish(here)
	srv := NewServer(Config{}, system, store, actorsys.Ref{})

	resp := sessionFetch(t, srv, here, 0, 0, map[int32]int64{0: 5, 1: 5})
	id := resp.SessionID
	if id == 0 || resp.ErrorCode != 0 || len(partitionsOf(resp)) != 2 {
		t.Fatalf("full fetch: session %d, code %d, partitions %v", id, resp.ErrorCode, partitionsOf(resp))
	}
	resp = sessionFetch(t, srv, here, id, 1, nil)
	if resp.SessionID != id || len(resp.Topics) != 0 {
		t.Fatalf("idle incremental fetch: session %d, topics %+v", resp.SessionID, resp.Topics)
	}

	moved := view(2)
	store.Publish(moved)
	resp = sessionFetch(t, srv, moved, id, 2, nil)
	if got := partitionsOf(resp); len(got) != 1 || got[1] != kerr.NotLeaderForPartition.Code {
		t.Fatalf("after the move: %v, want only partition 1, NOT_LEADER_OR_FOLLOWER", got)
	}
	if l := resp.Topics[0].Partitions[0].CurrentLeader; l.LeaderID != 2 {
		t.Errorf("moved partition's leader hint %d, want 2", l.LeaderID)
	}
	resp = sessionFetch(t, srv, moved, id, 3, nil, 1)
	if resp.SessionID != id || len(resp.Topics) != 0 {
		t.Fatalf("after forgetting the moved partition: session %d, %v", resp.SessionID, partitionsOf(resp))
	}

	for _, tc := range []struct {
		name      string
		id, epoch int32
		want      int16
	}{
		{"stale epoch", id, 3, kerr.InvalidFetchSessionEpoch.Code},
		{"unknown session", id + 1, 1, kerr.FetchSessionIDNotFound.Code},
	} {
		resp := sessionFetch(t, srv, moved, tc.id, tc.epoch, nil)
		if resp.ErrorCode != tc.want || resp.SessionID != 0 {
			t.Errorf("%s: code %d, session id %d; want code %d, no session id", tc.name, resp.ErrorCode, resp.SessionID, tc.want)
		}
	}
	// The session is still usable at its epoch after the refused requests.
	if resp := sessionFetch(t, srv, moved, id, 4, nil); resp.ErrorCode != 0 || resp.SessionID != id {
		t.Fatalf("epoch 4: code %d, session %d", resp.ErrorCode, resp.SessionID)
	}
}

// TestFetchSessionPartitionsAreAuthorizedEveryFetch: a session's partitions
// are checked against the ACLs on every fetch, not only when named: once
// reading the topic is no longer allowed, the incremental fetch answers its
// partitions TOPIC_AUTHORIZATION_FAILED.
func TestFetchSessionPartitionsAreAuthorizedEveryFetch(t *testing.T) {
	system := actorsys.NewSystem()
	defer system.Shutdown()
	ref, err := system.Spawn("idle", func() actor.Actor { return idlePartition{} })
	if err != nil {
		t.Fatal(err)
	}
	v := &routing.View{
		Self:    1,
		Brokers: []routing.Broker{{ID: 1, Host: "h1", Port: 9001, Alive: true}},
		Topics:  map[string]*routing.Topic{"t": {Name: "t", ID: [16]byte{7}, Partitions: []routing.Partition{{Leader: 1, LeaderEpoch: 3}}}},
		Local:   map[routing.TP]actorsys.Ref{{Topic: "t", Partition: 0}: ref},
	}
	v.TopicIDs = map[[16]byte]*routing.Topic{{7}: v.Topics["t"]}
	store := &routing.Store{}
	store.Publish(v)
	srv := NewServer(Config{}, system, store, actorsys.Ref{})
	a := acl.New(acl.Config{})
	allow := func(topic string) {
		a.Set([]acl.Binding{{ResourceType: rtTopic, ResourceName: topic, PatternType: kmsg.ACLResourcePatternTypeLiteral,
			Principal: acl.WildcardPrincipal, Host: "*", Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeAllow}})
	}
	allow("t")
	srv.Authorizer = a
	fetch := func(id, epoch int32, partitions map[int32]int64) *kmsg.FetchResponse {
		req := kmsg.NewPtrFetchRequest()
		req.Version = 12
		req.SessionID, req.SessionEpoch = id, epoch
		if len(partitions) > 0 {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = "t"
			for p, off := range partitions {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.CurrentLeaderEpoch, rp.PartitionMaxBytes = p, off, -1, 1<<20
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		r := &Request{Body: req, View: v, Server: srv, Session: newSession("127.0.0.1")}
		d := authorize(authz{a: a, s: r.Session, view: v}, apiFor(req.Key()), req)
		if d.deny != nil {
			t.Fatalf("epoch %d: refused before the handler", epoch)
		}
		return handleFetch(r)().(*fetchResponse).FetchResponse
	}
	resp := fetch(0, 0, map[int32]int64{0: 5})
	id := resp.SessionID
	if id == 0 || partitionsOf(resp)[0] != 0 {
		t.Fatalf("full fetch: session %d, %v", id, partitionsOf(resp))
	}
	if resp = fetch(id, 1, nil); len(resp.Topics) != 0 {
		t.Fatalf("allowed, idle: %v", partitionsOf(resp))
	}
	allow("other")
	resp = fetch(id, 2, nil)
	if got := partitionsOf(resp); len(got) != 1 || got[0] != codeTopicAuth {
		t.Fatalf("after the ACL went: %v, want partition 0 TOPIC_AUTHORIZATION_FAILED", got)
	}
}
