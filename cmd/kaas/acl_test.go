package main

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
)

// Until SASL supplies principals every connection here is User:ANONYMOUS:
// these tests grant and deny that principal (and User:*), and bootstrap the
// first ACL (ALTER on the cluster, so the test can manage ACLs) through the
// local-mode ACL file, <data-dir>/acls.json.

const anon = "User:ANONYMOUS"

// aclBroker starts a local broker with --authorizer=acl over a data dir
// whose ACL file grants ANONYMOUS ALTER on the cluster.
func aclBroker(t *testing.T, extra ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	file := `[{"resourceType":"Cluster","resourceName":"kafka-cluster","principal":"User:ANONYMOUS","operation":"Alter"}]`
	if err := os.WriteFile(filepath.Join(dir, "acls.json"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	_, addr := testBroker(t, append([]string{"--data-dir", dir, "--authorizer", "acl", "--group-initial-rebalance-delay", "0"}, extra...)...)
	return addr, dir
}

func mustCreateACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctxT(t, 10*time.Second), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateAcls %s %s %s: %v %s", r.Type, r.Name, r.Operation, r.Err, r.ErrMessage)
		}
	}
}

func mustDeleteACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) int {
	t.Helper()
	res, err := adm.DeleteACLs(ctxT(t, 10*time.Second), b)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("DeleteAcls: %v %s", r.Err, r.ErrMessage)
		}
		n += len(r.Deleted)
	}
	return n
}

func allACLs() *kadm.ACLBuilder {
	return kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)
}

func describeAll(t *testing.T, adm *kadm.Client) kadm.DescribedACLs {
	t.Helper()
	res, err := adm.DescribeACLs(ctxT(t, 10*time.Second), allACLs())
	if err != nil {
		t.Fatal(err)
	}
	var out kadm.DescribedACLs
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("DescribeAcls: %v %s", r.Err, r.ErrMessage)
		}
		out = append(out, r.Described...)
	}
	return out
}

// TestACLAdminAPIs: CreateAcls, DescribeAcls (ANY, LITERAL, PREFIXED and
// MATCH filters) and DeleteAcls through kadm, validation errors, and the
// ACLs surviving a restart in the local ACL file.
func TestACLAdminAPIs(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := startTestBroker(t, "--data-dir", dir, "--authorizer", "acl", "--super-users", anon)
	adm := newAdmin(t, addr)
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead, kadm.OpWrite))
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("app-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Deny("User:*").DenyHosts("10.1.2.3").Operations(kadm.OpDelete))
	mustCreateACLs(t, adm, kadm.NewACLs().Groups("*").Clusters().TransactionalIDs("tx").Allow("User:bob").Operations(kadm.OpDescribe))
	// Creating an existing ACL again is not an error and adds nothing.
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("orders").Allow("User:alice").Operations(kadm.OpRead))
	if got := describeAll(t, adm); len(got) != 6 {
		t.Fatalf("DescribeAcls(any) found %d ACLs, want 6: %+v", len(got), got)
	}

	describe := func(b *kadm.ACLBuilder) kadm.DescribedACLs {
		res, err := adm.DescribeACLs(ctxT(t, 10*time.Second), b)
		if err != nil {
			t.Fatal(err)
		}
		var out kadm.DescribedACLs
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("DescribeAcls: %v", r.Err)
			}
			out = append(out, r.Described...)
		}
		return out
	}
	// MATCH on topic app-1: the prefixed app- ACL applies to it.
	got := describe(kadm.NewACLs().Topics("app-1").Allow().Deny().AllowHosts().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternMatch))
	if len(got) != 1 || got[0].Name != "app-" || got[0].Pattern != kadm.ACLPatternPrefixed || got[0].Permission != kmsg.ACLPermissionTypeDeny ||
		got[0].Host != "10.1.2.3" || got[0].Operation != kadm.OpDelete {
		t.Fatalf("MATCH app-1: %+v", got)
	}
	// LITERAL on topic app-1: nothing.
	if got := describe(kadm.NewACLs().Topics("app-1").Allow().Deny().AllowHosts().DenyHosts().Operations().ResourcePatternType(kadm.ACLPatternLiteral)); len(got) != 0 {
		t.Fatalf("LITERAL app-1: %+v", got)
	}
	// By principal.
	if got := describe(kadm.NewACLs().AnyResource().Allow("User:alice").AllowHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)); len(got) != 2 {
		t.Fatalf("alice's ACLs: %+v", got)
	}

	// Invalid creations are refused one by one with INVALID_REQUEST (a
	// delegation-token resource is valid).
	req := kmsg.NewPtrCreateACLsRequest()
	for _, c := range []struct {
		rt   kmsg.ACLResourceType
		name string
		p    string
	}{{kmsg.ACLResourceTypeCluster, "not-kafka-cluster", "User:a"}, {kmsg.ACLResourceTypeTopic, "t", "no-colon"},
		{kmsg.ACLResourceTypeDelegationToken, "tok", "User:a"}, {kmsg.ACLResourceTypeTopic, "ok-topic", "User:a"},
		{kmsg.ACLResourceTypeAny, "any", "User:a"}} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = c.rt, c.name, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = c.p, "*", kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
	}
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), newClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, 0, 0, kerr.InvalidRequest.Code} {
		if resp.Results[i].ErrorCode != want {
			t.Errorf("creation %d: code %d (%v), want %d", i, resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage, want)
		}
	}
	// The delegation-token ACL is deleted by a filter on its type.
	dt := kmsg.NewPtrDeleteACLsRequest()
	df := kmsg.NewDeleteACLsRequestFilter()
	df.ResourceType, df.ResourcePatternType = kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourcePatternTypeAny
	df.Operation, df.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	dt.Filters = append(dt.Filters, df)
	if dr, err := dt.RequestWith(ctxT(t, 10*time.Second), newClient(t, addr)); err != nil || dr.Results[0].ErrorCode != 0 ||
		len(dr.Results[0].MatchingACLs) != 1 || dr.Results[0].MatchingACLs[0].ResourceName != "tok" {
		t.Fatalf("DeleteAcls of the delegation-token ACL: %v %+v", err, dr)
	}

	// DeleteAcls by filter returns what it removed.
	if n := mustDeleteACLs(t, adm, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts().Operations().ResourcePatternType(kadm.ACLPatternLiteral)); n != 2 {
		t.Fatalf("deleted %d, want 2", n)
	}
	if got := describeAll(t, adm); len(got) != 5 {
		t.Fatalf("after delete: %d ACLs, want 5", len(got))
	}

	// DescribeAcls v1 (the oldest Kafka 4 serves) filtering on LITERAL
	// sees the literal ACLs only.
	d1 := kmsg.NewPtrDescribeACLsRequest()
	d1.ResourceType, d1.Operation, d1.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	d1.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
	r1 := rawRequest(t, addr, d1, 1).(*kmsg.DescribeACLsResponse)
	if r1.ErrorCode != 0 || len(r1.Resources) != 4 {
		t.Fatalf("DescribeAcls v1: code %d, %d resources, want the 4 literal ones: %+v", r1.ErrorCode, len(r1.Resources), r1.Resources)
	}

	// The ACL file keeps them across a restart.
	stop()
	_, addr = testBroker(t, "--data-dir", dir, "--authorizer", "acl", "--super-users", anon)
	if got := describeAll(t, newAdmin(t, addr)); len(got) != 5 {
		t.Fatalf("after restart: %d ACLs, want 5", len(got))
	}
}

// TestACLAPIsWithoutAuthorizer: with authorization off (the default) the
// ACL APIs answer SECURITY_DISABLED and every request is allowed.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	res, err := adm.DescribeACLs(ctxT(t, 10*time.Second), allACLs())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || !errors.Is(res[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeAcls without an authorizer: %+v", res)
	}
	cres, err := adm.CreateACLs(ctxT(t, 10*time.Second), kadm.NewACLs().Topics("t").Allow("User:a").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if len(cres) != 1 || !errors.Is(cres[0].Err, kerr.SecurityDisabled) {
		t.Fatalf("CreateAcls without an authorizer: %+v", cres)
	}
	// KIP-430 with authorization off: every cluster operation.
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	dresp, err := dc.RequestWith(ctxT(t, 10*time.Second), newClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	if ops := kadm.DecodeACLOperations(dresp.ClusterAuthorizedOperations); !slices.Contains(ops, kadm.OpAlter) || !slices.Contains(ops, kadm.OpIdempotentWrite) {
		t.Fatalf("cluster authorized operations without an authorizer: %v", ops)
	}
}

func topicErr(t *testing.T, err error, want *kerr.Error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got %v, want %s", what, err, want.Message)
	}
}

// TestACLMatrix: each API allowed and refused with its Kafka error, over
// real clients, as ACLs for ANONYMOUS and User:* are added and removed.
func TestACLMatrix(t *testing.T) {
	addr, _ := aclBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)

	// CreateTopics: CREATE on the topic (prefixed) or on the cluster.
	res, err := adm.CreateTopics(ctx, 1, 1, nil, "app-orders", "secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Sorted() {
		topicErr(t, r.Err, kerr.TopicAuthorizationFailed, "CreateTopics "+r.Topic+" with no ACL")
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow(anon).Operations(kadm.OpCreate))
	res, _ = adm.CreateTopics(ctx, 1, 1, nil, "app-orders", "secret")
	if err := res["app-orders"].Err; err != nil {
		t.Fatalf("CreateTopics app-orders with prefixed CREATE: %v", err)
	}
	topicErr(t, res["secret"].Err, kerr.TopicAuthorizationFailed, "CreateTopics secret")
	clusterCreate := kadm.NewACLs().Clusters().Allow(anon).AllowHosts("*").Operations(kadm.OpCreate)
	mustCreateACLs(t, adm, clusterCreate)
	res, _ = adm.CreateTopics(ctx, 1, 1, nil, "secret")
	if err := res["secret"].Err; err != nil {
		t.Fatalf("CreateTopics secret with cluster CREATE: %v", err)
	}
	mustDeleteACLs(t, adm, clusterCreate)

	// Metadata: topics without DESCRIBE are hidden from a full listing and
	// refused by name.
	// A fresh client each time: kgo answers Metadata from its cache for a while.
	listed := func() []string {
		td, err := newAdmin(t, addr).ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return td.Names()
	}
	if names := listed(); len(names) != 0 {
		t.Fatalf("topics listed with no DESCRIBE: %v", names)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("app-orders").Allow(anon).Operations(kadm.OpWrite))
	if names := listed(); !slices.Equal(names, []string{"app-orders"}) {
		t.Fatalf("topics listed with WRITE on app-orders: %v", names)
	}
	td, err := newAdmin(t, addr).ListTopics(ctx, "secret")
	if err == nil {
		err = td["secret"].Err
	}
	topicErr(t, err, kerr.TopicAuthorizationFailed, "Metadata secret")
	// Auto-creation needs CREATE: DESCRIBE alone is refused.
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("auto").Allow(anon).Operations(kadm.OpDescribe))
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = sp("auto")
	md.Topics, md.AllowAutoTopicCreation, md.IncludeTopicAuthorizedOperations = []kmsg.MetadataRequestTopic{mt}, true, true
	raw := newClient(t, addr)
	mresp, err := md.RequestWith(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(mresp.Topics) != 1 || mresp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("auto-create without CREATE: %+v", mresp.Topics)
	}

	// Produce: WRITE on the topic. The idempotent producer's InitProducerId
	// is allowed by WRITE on some topic (KIP-679).
	prod := newClient(t, addr, kgo.DefaultProduceTopic("app-orders"))
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("v1")}).FirstErr(); err != nil {
		t.Fatalf("produce with WRITE: %v", err)
	}
	denied := newClient(t, addr, kgo.RetryTimeout(2*time.Second))
	topicErr(t, denied.ProduceSync(ctx, &kgo.Record{Topic: "secret", Value: []byte("x")}).FirstErr(), kerr.TopicAuthorizationFailed, "produce to secret")

	// ListOffsets: DESCRIBE.
	offs, err := adm.ListEndOffsets(ctx, "app-orders")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("app-orders", 0); o.Err != nil || o.Offset != 1 {
		t.Fatalf("ListOffsets app-orders: %+v", o)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "secret"
	lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{kmsg.NewListOffsetsRequestTopicPartition()}
	lo.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	// Sent to the broker itself: kgo would refuse it from its metadata.
	r, err := raw.Broker(0).Request(ctx, lo)
	if err != nil {
		t.Fatal(err)
	}
	lresp := r.(*kmsg.ListOffsetsResponse)
	if len(lresp.Topics) != 1 || lresp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("ListOffsets secret: %v %+v", err, lresp)
	}

	// Consumer groups: READ on the group, READ on the topic.
	const group = "g-app"
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "app-orders", Partition: 0, At: 1, LeaderEpoch: -1})
	_, err = adm.CommitOffsets(ctx, group, commit)
	topicErr(t, err, kerr.GroupAuthorizationFailed, "OffsetCommit with no group ACL")
	mustCreateACLs(t, adm, kadm.NewACLs().Groups("g-").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:*").Operations(kadm.OpRead))
	cr, err := adm.CommitOffsets(ctx, group, commit)
	if err != nil {
		t.Fatal(err)
	}
	topicErr(t, cr.Error(), kerr.TopicAuthorizationFailed, "OffsetCommit without READ on the topic")
	fetchDenied := newClient(t, addr, kgo.ConsumeTopics("app-orders"), kgo.FetchMaxWait(200*time.Millisecond))
	fs := fetchDenied.PollFetches(ctxT(t, 5*time.Second))
	var fetchErr error
	fs.EachError(func(_ string, _ int32, err error) { fetchErr = err })
	topicErr(t, fetchErr, kerr.TopicAuthorizationFailed, "Fetch without READ")
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("app-orders").Allow(anon).Operations(kadm.OpRead))
	consumer := newClient(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics("app-orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	var got []string
	for len(got) == 0 {
		fs := consumer.PollFetches(ctx)
		fs.EachError(func(tp string, p int32, err error) {
			t.Fatalf("consume with READ on group and topic: %s/%d: %v", tp, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if got[0] != "v1" {
		t.Fatalf("consumed %v", got)
	}
	if err := consumer.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit with READ on group and topic: %v", err)
	}
	consumer.Close()

	// DescribeGroups: DESCRIBE (implied by READ) on g-*, refused on others;
	// DeleteGroups needs DELETE.
	dg, err := adm.DescribeGroups(ctx, group)
	if err != nil || dg[group].Err != nil {
		t.Fatalf("DescribeGroups %s: %v %v", group, err, dg[group].Err)
	}
	// kadm finds the coordinator first: FindCoordinator needs DESCRIBE too.
	dg, err = adm.DescribeGroups(ctx, "other")
	if err == nil {
		err = dg["other"].Err
	}
	topicErr(t, err, kerr.GroupAuthorizationFailed, "DescribeGroups other")
	dgr := kmsg.NewPtrDescribeGroupsRequest()
	dgr.Groups = []string{group, "other"}
	dgr.IncludeAuthorizedOperations = true
	r, err = raw.Broker(0).Request(ctx, dgr)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range r.(*kmsg.DescribeGroupsResponse).Groups {
		switch g.Group {
		case group:
			if ops := kadm.DecodeACLOperations(g.AuthorizedOperations); g.ErrorCode != 0 || !slices.Equal(ops, []kadm.ACLOperation{kadm.OpRead, kadm.OpDescribe}) {
				t.Fatalf("DescribeGroups %s: code %d, operations %v, want READ DESCRIBE", group, g.ErrorCode, ops)
			}
		case "other":
			if g.ErrorCode != kerr.GroupAuthorizationFailed.Code {
				t.Fatalf("DescribeGroups other: code %d", g.ErrorCode)
			}
		}
	}
	del, err := adm.DeleteGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	topicErr(t, del[group].Err, kerr.GroupAuthorizationFailed, "DeleteGroups without DELETE")

	// Configs: DESCRIBE_CONFIGS, implied by ALTER_CONFIGS. (kadm returns
	// a request-level error when every item failed.)
	rc, err := adm.DescribeTopicConfigs(ctx, "app-orders")
	if err == nil {
		err = rc[0].Err
	}
	topicErr(t, err, kerr.TopicAuthorizationFailed, "DescribeConfigs without DESCRIBE_CONFIGS")
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("app-orders").Allow(anon).Operations(kadm.OpAlterConfigs))
	rc, err = adm.DescribeTopicConfigs(ctx, "app-orders")
	if err != nil || rc[0].Err != nil {
		t.Fatalf("DescribeConfigs with ALTER_CONFIGS: %v %v", err, rc)
	}
	ac, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: sp("60000")}}, "app-orders", "secret")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ac {
		if r.Name == "app-orders" && r.Err != nil {
			t.Fatalf("AlterConfigs app-orders: %v", r.Err)
		}
		if r.Name == "secret" {
			topicErr(t, r.Err, kerr.TopicAuthorizationFailed, "AlterConfigs secret")
		}
	}

	// DeleteRecords, CreatePartitions, DeleteTopics.
	dr, err := adm.DeleteRecords(ctx, commit)
	if err == nil {
		err = dr.Error()
	}
	topicErr(t, err, kerr.TopicAuthorizationFailed, "DeleteRecords without DELETE")
	cp, err := adm.CreatePartitions(ctx, 1, "app-orders")
	if err == nil {
		err = cp["app-orders"].Err
	}
	topicErr(t, err, kerr.TopicAuthorizationFailed, "CreatePartitions without ALTER")
	dt, err := adm.DeleteTopics(ctx, "secret")
	if err == nil {
		err = dt["secret"].Err
	}
	topicErr(t, err, kerr.TopicAuthorizationFailed, "DeleteTopics without DELETE")
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("secret").Allow(anon).Operations(kadm.OpDelete))
	dt, err = adm.DeleteTopics(ctx, "secret")
	if err != nil || dt["secret"].Err != nil {
		t.Fatalf("DeleteTopics with DELETE: %v %v", err, dt["secret"].Err)
	}

	// Deny wins: a DENY WRITE for User:* on app- stops the producer.
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("app-").ResourcePatternType(kadm.ACLPatternPrefixed).Deny("User:*").Operations(kadm.OpWrite))
	// The idempotent producer no longer has WRITE on any topic (InitProducerId
	// is refused); a plain one is refused the topic.
	p2 := newClient(t, addr, kgo.RetryTimeout(2*time.Second))
	topicErr(t, p2.ProduceSync(ctx, &kgo.Record{Topic: "app-orders", Value: []byte("x")}).FirstErr(), kerr.ClusterAuthorizationFailed, "idempotent produce under DENY")
	p3 := newClient(t, addr, kgo.RetryTimeout(2*time.Second), kgo.DisableIdempotentWrite())
	topicErr(t, p3.ProduceSync(ctx, &kgo.Record{Topic: "app-orders", Value: []byte("x")}).FirstErr(), kerr.TopicAuthorizationFailed, "produce under DENY")

	// Cluster: DescribeCluster with KIP-430 operations, then refused by a
	// DENY DESCRIBE (which also stops DescribeAcls).
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	dresp, err := dc.RequestWith(ctx, raw)
	if err != nil || dresp.ErrorCode != 0 {
		t.Fatalf("DescribeCluster: %v %v", err, dresp)
	}
	if ops := kadm.DecodeACLOperations(dresp.ClusterAuthorizedOperations); !slices.Equal(ops, []kadm.ACLOperation{kadm.OpAlter, kadm.OpDescribe}) {
		t.Fatalf("cluster authorized operations %v, want ALTER DESCRIBE", ops)
	}
	ipid := kmsg.NewPtrInitProducerIDRequest()
	txn := "tx-1"
	ipid.TransactionalID = &txn
	r, err = raw.Broker(0).Request(ctx, ipid)
	if err != nil {
		t.Fatal(err)
	}
	if iresp := r.(*kmsg.InitProducerIDResponse); iresp.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("InitProducerId with a transactional id and no ACL: %+v", iresp)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Clusters().Deny(anon).Operations(kadm.OpDescribe))
	dresp, err = dc.RequestWith(ctx, raw)
	if err != nil || dresp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("DescribeCluster under DENY DESCRIBE: %v %+v", err, dresp)
	}
	dar, err := adm.DescribeACLs(ctx, allACLs())
	if err == nil && (len(dar) == 0 || !errors.Is(dar[0].Err, kerr.ClusterAuthorizationFailed)) {
		t.Fatalf("DescribeAcls under DENY DESCRIBE: %+v", dar)
	}
}

// TestACLSuperUser: a super user is allowed everything with no ACL at all.
func TestACLSuperUser(t *testing.T) {
	_, addr := testBroker(t, "--authorizer", "acl", "--super-users", "User:admin;"+anon)
	cl := newClient(t, addr, kgo.DefaultProduceTopic("su"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("super user produce: %v", err)
	}
	// Not a super user, no ACL: refused, and allowed once
	// --allow-everyone-if-no-acl-found is on.
	_, addr = testBroker(t, "--authorizer", "acl", "--super-users", "User:admin")
	cl = newClient(t, addr, kgo.RetryTimeout(2*time.Second))
	topicErr(t, cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Topic: "su", Value: []byte("v")}).FirstErr(), kerr.TopicAuthorizationFailed, "produce without ACLs")
	_, addr = testBroker(t, "--authorizer", "acl", "--allow-everyone-if-no-acl-found")
	cl = newClient(t, addr, kgo.DefaultProduceTopic("open"), kgo.AllowAutoTopicCreation())
	if err := cl.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce with allow-everyone-if-no-acl-found: %v", err)
	}
}

// TestSaramaACLs: sarama's ClusterAdmin creates, lists and deletes ACLs.
func TestSaramaACLs(t *testing.T) {
	_, addr := testBroker(t, "--authorizer", "acl", "--super-users", anon)
	admin, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig(sarama.V2_8_0_0))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	err = admin.CreateACLs([]*sarama.ResourceAcls{{
		Resource: sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: "s-", ResourcePatternType: sarama.AclPatternPrefixed},
		Acls: []*sarama.Acl{
			{Principal: "User:sam", Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionAllow},
			{Principal: "User:sam", Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny},
		},
	}})
	if err != nil {
		t.Fatalf("sarama CreateACLs: %v", err)
	}
	all := sarama.AclFilter{ResourceType: sarama.AclResourceAny, ResourcePatternTypeFilter: sarama.AclPatternAny,
		Operation: sarama.AclOperationAny, PermissionType: sarama.AclPermissionAny}
	list, err := admin.ListAcls(all)
	if err != nil {
		t.Fatalf("sarama ListAcls: %v", err)
	}
	if len(list) != 1 || list[0].ResourceName != "s-" || list[0].ResourcePatternType != sarama.AclPatternPrefixed || len(list[0].Acls) != 2 {
		t.Fatalf("sarama ListAcls: %+v", list)
	}
	deny := all
	deny.PermissionType = sarama.AclPermissionDeny
	matched, err := admin.DeleteACL(deny, false)
	if err != nil || len(matched) != 1 || matched[0].Operation != sarama.AclOperationWrite {
		t.Fatalf("sarama DeleteACL: %v %+v", err, matched)
	}
	if list, err = admin.ListAcls(all); err != nil || len(list) != 1 || len(list[0].Acls) != 1 {
		t.Fatalf("after DeleteACL: %v %+v", err, list)
	}
}

// TestKafkajsACLs: kafkajs's admin creates, describes and deletes ACLs
// against a kaas process.
func TestKafkajsACLs(t *testing.T) {
	dir := kafkajsDir(t)
	k := startKaas(t, "--authorizer", "acl", "--super-users", anon)
	res := runNode(t, dir, 40*time.Second, "acls.js", k.Addr)
	var out struct {
		Described []struct {
			ResourceType        int    `json:"resourceType"`
			ResourceName        string `json:"resourceName"`
			ResourcePatternType int    `json:"resourcePatternType"`
			ACLs                []struct {
				Principal string `json:"principal"`
				Operation int    `json:"operation"`
			} `json:"acls"`
		} `json:"described"`
		Deleted int `json:"deleted"`
		After   int `json:"after"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("acls.js output: %v\n%s", err, res.Stdout)
	}
	if len(out.Described) != 2 || out.Deleted != 2 || out.After != 0 {
		t.Fatalf("kafkajs ACLs: %+v", out)
	}
	for _, r := range out.Described {
		if len(r.ACLs) != 1 || r.ACLs[0].Principal != "User:js" || r.ACLs[0].Operation != int(kmsg.ACLOperationRead) {
			t.Fatalf("kafkajs describeAcls resource %+v", r)
		}
		if r.ResourceName == "js-" && r.ResourcePatternType != int(kmsg.ACLResourcePatternTypePrefixed) {
			t.Fatalf("js- is not prefixed: %+v", r)
		}
	}
}

// fromHost makes a client's connections leave from a loopback address of
// its own (every 127.0.0.0/8 address reaches the broker on Linux), so the
// broker sees each client as a different host.
func fromHost(ip string) kgo.Opt {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return kgo.Dialer(d.DialContext)
}

// TestACLHostBlocks: ACL hosts in CIDR notation (KIP-1276) allow and deny
// the clients connecting from their blocks, over real TCP from distinct
// source addresses; a malformed block is refused with INVALID_REQUEST and
// DescribeAcls shows a block as written.
func TestACLHostBlocks(t *testing.T) {
	addr, _ := aclBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)

	res, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("blocks").Allow(anon).AllowHosts("127.0.0.0/33").Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || !errors.Is(res[0].Err, kerr.InvalidRequest) || !strings.Contains(res[0].ErrMessage, "CIDR") {
		t.Fatalf("CreateAcls with host 127.0.0.0/33: %+v", res)
	}

	// Everything from 127.0.0.0-7, but no writes from 127.0.0.4-7.
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("blocks").Allow(anon).AllowHosts("127.0.0.0/29").Operations(kadm.OpAll))
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("blocks").Deny(anon).DenyHosts("127.0.0.4/30").Operations(kadm.OpWrite))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "blocks"); err != nil {
		t.Fatalf("CreateTopics from 127.0.0.1, inside 127.0.0.0/29: %v", err)
	}

	writer := newClient(t, addr, fromHost("127.0.0.2"), kgo.DefaultProduceTopic("blocks"))
	if err := writer.ProduceSync(ctx, &kgo.Record{Value: []byte("from .2")}).FirstErr(); err != nil {
		t.Fatalf("produce from 127.0.0.2: %v", err)
	}
	// From 127.0.0.5 WRITE is denied on the only topic, so an idempotent
	// producer may not even get a producer id (KIP-679: WRITE on some topic).
	denied := newClient(t, addr, fromHost("127.0.0.5"), kgo.RetryTimeout(2*time.Second))
	topicErr(t, denied.ProduceSync(ctx, &kgo.Record{Topic: "blocks", Value: []byte("from .5")}).FirstErr(),
		kerr.ClusterAuthorizationFailed, "idempotent produce from 127.0.0.5, inside the denied 127.0.0.4/30")
	denied = newClient(t, addr, fromHost("127.0.0.5"), kgo.RetryTimeout(2*time.Second), kgo.DisableIdempotentWrite())
	topicErr(t, denied.ProduceSync(ctx, &kgo.Record{Topic: "blocks", Value: []byte("from .5")}).FirstErr(),
		kerr.TopicAuthorizationFailed, "produce from 127.0.0.5, inside the denied 127.0.0.4/30")
	reader := newClient(t, addr, fromHost("127.0.0.6"), kgo.ConsumeTopics("blocks"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := reader.PollFetches(ctxT(t, 10*time.Second))
	if err := fs.Err0(); err != nil {
		t.Fatalf("fetch from 127.0.0.6: %v", err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "from .2" {
		t.Fatalf("fetch from 127.0.0.6: %d records", len(recs))
	}
	outside := newClient(t, addr, fromHost("127.0.0.9"), kgo.RetryTimeout(2*time.Second))
	td, err := kadm.NewClient(outside).ListTopics(ctx, "blocks")
	if err == nil {
		err = td["blocks"].Err
	}
	topicErr(t, err, kerr.TopicAuthorizationFailed, "Metadata from 127.0.0.9, outside 127.0.0.0/29")

	// Filters match hosts as written: a block is not widened or narrowed.
	for host, want := range map[string]int{"127.0.0.0/29": 1, "127.0.0.4/30": 1, "127.0.0.2": 0, "127.0.0.0/28": 0} {
		d, err := adm.DescribeACLs(ctx, kadm.NewACLs().Topics("blocks").Allow().Deny().AllowHosts(host).DenyHosts(host).Operations())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range d {
			if r.Err != nil {
				t.Fatalf("DescribeAcls host %s: %v", host, r.Err)
			}
			for _, b := range r.Described {
				if b.Host != host {
					t.Fatalf("DescribeAcls host %s returned host %s", host, b.Host)
				}
				n++
			}
		}
		if n != want {
			t.Errorf("DescribeAcls host %s: %d bindings, want %d", host, n, want)
		}
	}
}

// TestEveryServedAPIHasAnAuthRule: every API key the broker serves (the
// core table and those the group, share, transaction and other
// coordinators register) has an authorization rule; a key without one
// would be refused to every principal under --authorizer=acl.
func TestEveryServedAPIHasAnAuthRule(t *testing.T) {
	b, _, _ := startTestBroker(t, "--data-dir", t.TempDir(), "--authorizer", "acl", "--super-users", anon)
	for _, a := range b.srv.APIs() {
		if !conn.HasAuthRule(a.Key) {
			t.Errorf("%s (key %d) is served without an authorization rule", kmsg.NameForKey(a.Key), a.Key)
		}
	}
}

// TestACLTransactionAdmin: DescribeTransactions and ListTransactions need
// DESCRIBE on each transactional id, as Kafka's: an id the principal may
// not describe is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, and a listing
// leaves it out.
func TestACLTransactionAdmin(t *testing.T) {
	addr, _ := aclBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 30*time.Second)
	mustCreateACLs(t, adm, kadm.NewACLs().TransactionalIDs("tx-seen", "tx-hidden").Allow(anon).Operations(kadm.OpWrite))
	cl := newClient(t, addr)
	for _, id := range []string{"tx-seen", "tx-hidden"} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = &id, 60_000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("InitProducerId %s: %v %v", id, err, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	if n := mustDeleteACLs(t, adm, kadm.NewACLs().TransactionalIDs("tx-hidden").Allow(anon).AllowHosts().Operations(kadm.OpWrite)); n != 1 {
		t.Fatalf("deleted %d ACLs, want 1", n)
	}
	dreq := kmsg.NewPtrDescribeTransactionsRequest()
	dreq.TransactionalIDs = []string{"tx-seen", "tx-hidden"}
	dresp, err := dreq.RequestWith(ctx, cl)
	if err != nil || len(dresp.TransactionStates) != 2 {
		t.Fatalf("DescribeTransactions: %+v, %v", dresp, err)
	}
	for _, st := range dresp.TransactionStates {
		want := int16(0)
		if st.TransactionalID == "tx-hidden" {
			want = kerr.TransactionalIDAuthorizationFailed.Code
		}
		if st.ErrorCode != want || (want == 0 && st.State != "Empty") {
			t.Errorf("describe %s: %v, state %q; want %v", st.TransactionalID, kerr.ErrorForCode(st.ErrorCode), st.State, kerr.ErrorForCode(want))
		}
	}
	listed, err := adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids := listed.TransactionalIDs(); !slices.Equal(ids, []string{"tx-seen"}) {
		t.Fatalf("listed %v, want only tx-seen", ids)
	}
}
