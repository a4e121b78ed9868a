package conn

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/internal/kmsgtest"
	"github.com/kaas-project/kaas/actors/routing"
)

// groupKeys are the consumer-group APIs actors/group serves on this server.
var groupKeys = []kmsg.Key{kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.FindCoordinator, kmsg.JoinGroup, kmsg.Heartbeat,
	kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.DeleteGroups, kmsg.OffsetDelete,
	kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe, kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe,
	kmsg.AlterShareGroupOffsets, kmsg.DeleteShareGroupOffsets}

// shareKeys are the share-group APIs actors/share serves on this server.
var shareKeys = []kmsg.Key{kmsg.ShareFetch, kmsg.ShareAcknowledge, kmsg.DescribeShareGroupOffsets}

func TestEveryAPIHasAnAuthRule(t *testing.T) {
	for key := range coreAPIs {
		if _, ok := authRules[key]; !ok {
			t.Errorf("%s has no authorization rule", kmsg.NameForKey(key))
		}
	}
	for _, k := range append(slices.Clone(groupKeys), shareKeys...) {
		if _, ok := authRules[k.Int16()]; !ok {
			t.Errorf("%s has no authorization rule", kmsg.NameForKey(k.Int16()))
		}
	}
}

// apiFor is key's API: the core table's, else a commit's error response
// shaped like actors/group's.
func apiFor(key int16) API {
	if a, ok := coreAPIs[key]; ok {
		return a
	}
	a := API{Key: key}
	if key == kmsg.OffsetCommit.Int16() {
		a.ErrorResponse = func(body kmsg.Request, code int16) kmsg.Response {
			req := body.(*kmsg.OffsetCommitRequest)
			resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp
		}
	}
	return a
}

// answer is what the client gets for req under z: the denial, or the
// patched answer of a handler that found nothing to do.
func answer(t *testing.T, z authz, req kmsg.Request) kmsg.Response {
	t.Helper()
	d := authorize(z, apiFor(req.Key()), req)
	if d.deny != nil {
		return d.deny
	}
	resp := req.ResponseKind()
	if d.patch != nil {
		d.patch(resp)
	}
	return resp
}

func groupRequests() []kmsg.Request {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group = "g"
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = "g"
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	ct.Partitions = append(ct.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
	commit.Topics = append(commit.Topics, ct)
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g1", "g2"}
	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.Groups = []string{"g1", "g2"}
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version = 4
	find.CoordinatorKeys = []string{"g1", "g2"}
	apt := kmsg.NewPtrAddPartitionsToTxnRequest()
	apt.Version, apt.TransactionalID = 3, "tx"
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = "t", []int32{0, 1}
	apt.Topics = append(apt.Topics, at)
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group = "tx", "g"
	tt := kmsg.NewTxnOffsetCommitRequestTopic()
	tt.Topic = "t"
	tt.Partitions = append(tt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
	toc.Topics = append(toc.Topics, tt)
	return append([]kmsg.Request{join, commit, del, desc, find, apt, toc}, shareRequests()...)
}

func shareRequests() []kmsg.Request {
	g, m := "g", "m"
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = g, m, []string{"t"}
	sgd := kmsg.NewPtrShareGroupDescribeRequest()
	sgd.GroupIDs = []string{"g1", "g2"}
	sf := kmsg.NewPtrShareFetchRequest()
	sf.GroupID, sf.MemberID = &g, &m
	sa := kmsg.NewPtrShareAcknowledgeRequest()
	sa.GroupID, sa.MemberID = &g, &m
	dso := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	dso.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g1"}, {GroupID: "g2", Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	asgo, dsgo := shareAdminRequests()
	return []kmsg.Request{hb, sgd, sf, sa, dso, asgo, dsgo}
}

// shareAdminRequests are an AlterShareGroupOffsets and a
// DeleteShareGroupOffsets of group g naming topics a and b.
func shareAdminRequests() (*kmsg.AlterShareGroupOffsetsRequest, *kmsg.DeleteShareGroupOffsetsRequest) {
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "g"
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "g"
	for _, n := range []string{"a", "b"} {
		at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		at.Topic = n
		ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		ap.Partition, ap.StartOffset = 1, 5
		at.Partitions = append(at.Partitions, ap)
		alter.Topics = append(alter.Topics, at)
		dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		dt.Topic = n
		del.Topics = append(del.Topics, dt)
	}
	return alter, del
}

// TestAuthShareGroupOffsetsAdmin: AlterShareGroupOffsets needs READ on
// the group, DeleteShareGroupOffsets DELETE on it (else
// GROUP_AUTHORIZATION_FAILED); both READ on each topic, a refused topic
// answered TOPIC_AUTHORIZATION_FAILED while the handler gets the others.
func TestAuthShareGroupOffsetsAdmin(t *testing.T) {
	lit, allowP := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
	bind := func(ops ...kmsg.ACLOperation) authz {
		a := acl.New(acl.Config{})
		bs := []acl.Binding{{ResourceType: rtTopic, ResourceName: "a", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opRead, Permission: allowP}}
		for _, op := range ops {
			bs = append(bs, acl.Binding{ResourceType: rtGroup, ResourceName: "g", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: op, Permission: allowP})
		}
		a.Set(bs)
		return authz{a: a, s: newSession("127.0.0.1"), view: &routing.View{}}
	}
	alter, del := shareAdminRequests()
	if d := authorize(bind(opDelete), apiFor(alter.Key()), alter); d.deny == nil || kmsgtest.ErrorCodes(d.deny)[0] != codeGroupAuth {
		t.Fatalf("alter without READ on the group: %+v", d.deny)
	}
	if d := authorize(bind(opRead), apiFor(del.Key()), del); d.deny == nil || kmsgtest.ErrorCodes(d.deny)[0] != codeGroupAuth {
		t.Fatalf("delete without DELETE on the group: %+v", d.deny)
	}
	d := authorize(bind(opRead), apiFor(alter.Key()), alter)
	if d.deny != nil || len(alter.Topics) != 1 || alter.Topics[0].Topic != "a" {
		t.Fatalf("alter reaches the handler with %+v (%+v), want topic a", alter.Topics, d.deny)
	}
	ar := alter.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	d.patch(ar)
	if len(ar.Topics) != 1 || ar.Topics[0].Topic != "b" || ar.Topics[0].Partitions[0].Partition != 1 || ar.Topics[0].Partitions[0].ErrorCode != codeTopicAuth {
		t.Fatalf("alter's refused topic answered %+v", ar.Topics)
	}
	d = authorize(bind(opDelete), apiFor(del.Key()), del)
	if d.deny != nil || len(del.Topics) != 1 || del.Topics[0].Topic != "a" {
		t.Fatalf("delete reaches the handler with %+v (%+v), want topic a", del.Topics, d.deny)
	}
	dr := del.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	d.patch(dr)
	if len(dr.Topics) != 1 || dr.Topics[0].Topic != "b" || dr.Topics[0].ErrorCode != codeTopicAuth {
		t.Fatalf("delete's refused topic answered %+v", dr.Topics)
	}
}

// TestAuthRulesRefuseEveryItem: with no ACL, every item of every request
// is answered with an authorization error and the handler is left nothing.
func TestAuthRulesRefuseEveryItem(t *testing.T) {
	z := authz{a: acl.New(acl.Config{}), s: newSession("127.0.0.1"), view: &routing.View{}}
	authCodes := map[int16]bool{codeTopicAuth: true, codeGroupAuth: true, codeClusterAuth: true, codeTxnAuth: true}
	for _, req := range append(errorRequests(), groupRequests()...) {
		if req.Key() == kmsg.Fetch.Int16() {
			continue // no topics in it; Fetch is covered by the client tests
		}
		resp := answer(t, z, req)
		got := 0
		for _, c := range kmsgtest.ErrorCodes(resp) {
			if authCodes[c] {
				got++
			} else if c != 0 {
				t.Errorf("%s: error %d, want an authorization error", kmsg.NameForKey(req.Key()), c)
			}
		}
		if got == 0 {
			t.Errorf("%s: no authorization error in %+v", kmsg.NameForKey(req.Key()), resp)
		}
	}
}

// TestAuthRulesNarrow: allowed on topic a only, a two-topic request reaches
// the handler with a alone and b comes back TOPIC_AUTHORIZATION_FAILED.
func TestAuthRulesNarrow(t *testing.T) {
	a := acl.New(acl.Config{})
	a.Set([]acl.Binding{{ResourceType: rtTopic, ResourceName: "a", PatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: acl.WildcardPrincipal, Host: "*", Operation: kmsg.ACLOperationAll, Permission: kmsg.ACLPermissionTypeAllow}})
	z := authz{a: a, s: newSession("127.0.0.1"), view: &routing.View{}}
	var produce *kmsg.ProduceRequest
	for _, r := range errorRequests() {
		if p, ok := r.(*kmsg.ProduceRequest); ok {
			produce = p
		}
	}
	d := authorize(z, apiFor(produce.Key()), produce)
	if d.deny != nil || d.patch == nil {
		t.Fatalf("want a narrowed produce, got %+v", d)
	}
	if len(produce.Topics) != 1 || produce.Topics[0].Topic != "a" {
		t.Fatalf("handler sees %+v, want topic a only", produce.Topics)
	}
	resp := produce.ResponseKind().(*kmsg.ProduceResponse)
	d.patch(resp)
	if len(resp.Topics) != 1 || resp.Topics[0].Topic != "b" || resp.Topics[0].Partitions[0].ErrorCode != codeTopicAuth {
		t.Fatalf("patched answer %+v", resp.Topics)
	}
	// All-topics Metadata hides b; KIP-430 operations for a.
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	md.IncludeTopicAuthorizedOperations = true
	d = authorize(z, apiFor(md.Key()), md)
	mresp := md.ResponseKind().(*kmsg.MetadataResponse)
	for _, n := range []string{"a", "b"} {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = &n
		mresp.Topics = append(mresp.Topics, mt)
	}
	d.patch(mresp)
	if len(mresp.Topics) != 1 || *mresp.Topics[0].Topic != "a" {
		t.Fatalf("metadata shows %d topics, want a only", len(mresp.Topics))
	}
	if want := acl.OperationsBitField(acl.TopicOperations); mresp.Topics[0].AuthorizedOperations != want {
		t.Fatalf("authorized operations %b, want %b", mresp.Topics[0].AuthorizedOperations, want)
	}
}

// TestAuthDescribeTopicPartitions: allowed to describe and read topic a
// only, naming a and b answers a with its operations (Kafka sets them on
// every topic it describes; the request has no flag) and b
// TOPIC_AUTHORIZATION_FAILED without them.
func TestAuthDescribeTopicPartitions(t *testing.T) {
	a := acl.New(acl.Config{})
	lit, allowP := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
	a.Set([]acl.Binding{
		{ResourceType: rtTopic, ResourceName: "a", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opRead, Permission: allowP},
		{ResourceType: rtTopic, ResourceName: "a", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opDescribe, Permission: allowP},
	})
	z := authz{a: a, s: newSession("127.0.0.1"), view: &routing.View{}}
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	for _, n := range []string{"a", "b"} {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
		dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		dt.Topic = kmsg.StringPtr(n)
		resp.Topics = append(resp.Topics, dt)
	}
	d := authorize(z, apiFor(req.Key()), req)
	if d.deny != nil || d.patch == nil {
		t.Fatalf("want a patched answer, got %+v", d)
	}
	d.patch(resp)
	want := acl.OperationsBitField([]kmsg.ACLOperation{opRead, opDescribe})
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || resp.Topics[0].AuthorizedOperations != want ||
		resp.Topics[1].ErrorCode != codeTopicAuth || resp.Topics[1].AuthorizedOperations == want {
		t.Fatalf("answered %+v, want a with operations %b and b refused", resp.Topics, want)
	}
}

// TestAuthAddPartitionsToTxn: one refused topic stops the whole request;
// the allowed ones are answered OPERATION_NOT_ATTEMPTED.
func TestAuthAddPartitionsToTxn(t *testing.T) {
	a := acl.New(acl.Config{})
	lit, allowP := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
	a.Set([]acl.Binding{
		{ResourceType: rtTopic, ResourceName: "a", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opWrite, Permission: allowP},
		{ResourceType: rtTxn, ResourceName: "tx", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opWrite, Permission: allowP},
	})
	z := authz{a: a, s: newSession("127.0.0.1"), view: &routing.View{}}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID = 3, "tx"
	for _, n := range []string{"a", "b"} {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = n, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	d := authorize(z, apiFor(req.Key()), req)
	resp, ok := d.deny.(*kmsg.AddPartitionsToTxnResponse)
	if !ok {
		t.Fatalf("want a refusal, got %+v", d)
	}
	want := map[string]int16{"a": kerr.OperationNotAttempted.Code, "b": codeTopicAuth}
	for _, rt := range resp.Topics {
		if rt.Partitions[0].ErrorCode != want[rt.Topic] {
			t.Errorf("topic %s: code %d, want %d", rt.Topic, rt.Partitions[0].ErrorCode, want[rt.Topic])
		}
	}
	req.Topics = req.Topics[:1]
	if d := authorize(z, apiFor(req.Key()), req); d.deny != nil {
		t.Fatalf("allowed topic and transactional id refused: %+v", d.deny)
	}
}

// TestAuthShareFetchNarrows: READ on the group and on topic a only: a
// ShareFetch of a and b reaches the handler with a alone, b's partitions
// answer TOPIC_AUTHORIZATION_FAILED; without READ on the group the whole
// request is refused GROUP_AUTHORIZATION_FAILED.
func TestAuthShareFetchNarrows(t *testing.T) {
	a := acl.New(acl.Config{})
	lit, allowP := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLPermissionTypeAllow
	a.Set([]acl.Binding{
		{ResourceType: rtTopic, ResourceName: "a", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opRead, Permission: allowP},
		{ResourceType: rtGroup, ResourceName: "g", PatternType: lit, Principal: acl.Anonymous, Host: "*", Operation: opRead, Permission: allowP},
	})
	ta := &routing.Topic{Name: "a", ID: [16]byte{1}}
	tb := &routing.Topic{Name: "b", ID: [16]byte{2}}
	z := authz{a: a, s: newSession("127.0.0.1"), view: &routing.View{TopicIDs: map[[16]byte]*routing.Topic{ta.ID: ta, tb.ID: tb}}}
	fetch := func(group string) *kmsg.ShareFetchRequest {
		m := "m"
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID = &group, &m
		for _, id := range [][16]byte{ta.ID, tb.ID} {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = id
			rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	req := fetch("g")
	d := authorize(z, apiFor(req.Key()), req)
	if d.deny != nil || d.patch == nil || len(req.Topics) != 1 || req.Topics[0].TopicID != ta.ID {
		t.Fatalf("want a narrowed share fetch of topic a, got %+v, topics %+v", d, req.Topics)
	}
	resp := req.ResponseKind().(*kmsg.ShareFetchResponse)
	d.patch(resp)
	if len(resp.Topics) != 1 || resp.Topics[0].TopicID != tb.ID || resp.Topics[0].Partitions[0].ErrorCode != codeTopicAuth {
		t.Fatalf("patched answer %+v", resp.Topics)
	}
	other := fetch("other")
	if r, ok := answer(t, z, other).(*kmsg.ShareFetchResponse); !ok || r.ErrorCode != codeGroupAuth {
		t.Fatalf("share fetch of a group without READ: %+v", r)
	}
}
