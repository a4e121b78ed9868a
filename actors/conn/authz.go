package conn

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/routing"
)

// Authorization: which operation each API needs on which resource, as
// Apache Kafka's KafkaApis checks it. One rule per API key, run in the
// connection actor before the handler (authorizeAndHandle). A rule either
// refuses the whole request (deny: the API's error response with the
// *_AUTHORIZATION_FAILED code in every slot), or narrows a multi-item
// request to the items the principal may touch and patches the refused
// items back into the handler's answer with their error, so no handler
// ever sees (or writes to) a resource it may not.

var (
	codeTopicAuth   = kerr.TopicAuthorizationFailed.Code
	codeGroupAuth   = kerr.GroupAuthorizationFailed.Code
	codeClusterAuth = kerr.ClusterAuthorizationFailed.Code
	codeTxnAuth     = kerr.TransactionalIDAuthorizationFailed.Code
)

// Short names for the resource types and operations the rules use.
const (
	rtTopic   = kmsg.ACLResourceTypeTopic
	rtGroup   = kmsg.ACLResourceTypeGroup
	rtCluster = kmsg.ACLResourceTypeCluster
	rtTxn     = kmsg.ACLResourceTypeTransactionalId

	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

// authz asks the authorizer about one connection's principal. A nil
// authorizer (authorization off) allows everything.
type authz struct {
	a    *acl.Authorizer
	s    Session
	view *routing.View
}

func (z authz) allowed(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return z.a.Authorize(acl.Action{Principal: z.s.Principal, Host: z.s.ClientHost, Operation: op, ResourceType: rt, ResourceName: name})
}

func (z authz) topic(op kmsg.ACLOperation, name string) bool { return z.allowed(op, rtTopic, name) }
func (z authz) group(op kmsg.ACLOperation, name string) bool { return z.allowed(op, rtGroup, name) }
func (z authz) txn(op kmsg.ACLOperation, id string) bool     { return z.allowed(op, rtTxn, id) }
func (z authz) cluster(op kmsg.ACLOperation) bool {
	return z.allowed(op, rtCluster, acl.ClusterName)
}

// topicOf names a topic a request gives by name or (newer versions) by
// id; "" for an id this broker does not know (the handler answers it).
func (z authz) topicOf(name string, id [16]byte) string {
	if name != "" {
		return name
	}
	n, _ := topicName(z.view, "", id)
	return n
}

// ops is KIP-430's authorized-operations bit field for one resource.
func (z authz) ops(rt kmsg.ACLResourceType, name string, all []kmsg.ACLOperation) int32 {
	return acl.OperationsBitField(z.a.AuthorizedOperations(z.s.Principal, z.s.ClientHost, rt, name, all))
}

// authDecision is a rule's answer: deny is sent instead of running the
// handler; patch (if set) amends the handler's answer.
type authDecision struct {
	deny  kmsg.Response
	patch func(kmsg.Response)
}

type authRule func(z authz, api API, req kmsg.Request) authDecision

var allow = authDecision{}

// refuse answers the whole request with code.
func refuse(api API, req kmsg.Request, code int16) authDecision {
	return authDecision{deny: errorResponse(api, req, code)}
}

// narrowed is the decision for a request whose refused items patch puts
// back; when nothing is left for the handler the patched empty answer is
// sent without running it.
func narrowed(nothingLeft bool, req kmsg.Request, patch func(kmsg.Response)) authDecision {
	if nothingLeft {
		resp := req.ResponseKind()
		patch(resp)
		return authDecision{deny: resp}
	}
	return authDecision{patch: patch}
}

// needCluster: the request needs op on the cluster.
func needCluster(op kmsg.ACLOperation) authRule {
	return func(z authz, api API, req kmsg.Request) authDecision {
		if z.cluster(op) {
			return allow
		}
		return refuse(api, req, codeClusterAuth)
	}
}

// needGroup: the request needs op on the group it names.
func needGroup(op kmsg.ACLOperation, group func(kmsg.Request) string) authRule {
	return func(z authz, api API, req kmsg.Request) authDecision {
		if z.group(op, group(req)) {
			return allow
		}
		return refuse(api, req, codeGroupAuth)
	}
}

func noCheck(authz, API, kmsg.Request) authDecision { return allow }

// authRules maps every served API key to its rule; a key without one is
// refused with CLUSTER_AUTHORIZATION_FAILED while authorization is on
// (TestEveryAPIHasAnAuthRule keeps the table complete).
var authRules = map[int16]authRule{
	kmsg.Produce.Int16():         authProduce,
	kmsg.Fetch.Int16():           authFetch,
	kmsg.ListOffsets.Int16():     authListOffsets,
	kmsg.Metadata.Int16():        authMetadata,
	kmsg.OffsetCommit.Int16():    authOffsetCommit,
	kmsg.OffsetFetch.Int16():     authOffsetFetch,
	kmsg.FindCoordinator.Int16(): authFindCoordinator,
	kmsg.JoinGroup.Int16():       needGroup(opRead, func(r kmsg.Request) string { return r.(*kmsg.JoinGroupRequest).Group }),
	kmsg.Heartbeat.Int16():       needGroup(opRead, func(r kmsg.Request) string { return r.(*kmsg.HeartbeatRequest).Group }),
	kmsg.LeaveGroup.Int16():      needGroup(opRead, func(r kmsg.Request) string { return r.(*kmsg.LeaveGroupRequest).Group }),
	kmsg.SyncGroup.Int16():       needGroup(opRead, func(r kmsg.Request) string { return r.(*kmsg.SyncGroupRequest).Group }),
	kmsg.DescribeGroups.Int16():  authDescribeGroups,
	kmsg.ListGroups.Int16():      authListGroups,
	kmsg.ApiVersions.Int16():     noCheck,
	// The SASL APIs run before a principal exists (the connection's
	// pre-authentication gate handles them).
	kmsg.SASLHandshake.Int16():    noCheck,
	kmsg.SASLAuthenticate.Int16(): noCheck,
	// The delegation-token APIs decide in their handlers, as Kafka's do:
	// the owner, requester and renewers act on their own tokens, others
	// need CREATE_TOKENS / DESCRIBE_TOKENS on the user or DESCRIBE on the
	// token (delegation_tokens.go).
	kmsg.CreateDelegationToken.Int16():   noCheck,
	kmsg.RenewDelegationToken.Int16():    noCheck,
	kmsg.ExpireDelegationToken.Int16():   noCheck,
	kmsg.DescribeDelegationToken.Int16(): noCheck,
	// Any client may ask for its telemetry subscription and push (KIP-714,
	// as Kafka: the receiver is the broker's own).
	kmsg.GetTelemetrySubscriptions.Int16(): noCheck,
	kmsg.PushTelemetry.Int16():             noCheck,
	// Markers come from another broker's transaction coordinator.
	kmsg.WriteTxnMarkers.Int16():            needCluster(kmsg.ACLOperationClusterAction),
	kmsg.DescribeTopicPartitions.Int16():    authDescribeTopicPartitions,
	kmsg.CreateTopics.Int16():               authCreateTopics,
	kmsg.DeleteTopics.Int16():               authDeleteTopics,
	kmsg.DeleteRecords.Int16():              authDeleteRecords,
	kmsg.InitProducerID.Int16():             authInitProducerID,
	kmsg.OffsetForLeaderEpoch.Int16():       authOffsetForLeaderEpoch,
	kmsg.DescribeACLs.Int16():               needCluster(opDescribe),
	kmsg.CreateACLs.Int16():                 needCluster(opAlter),
	kmsg.DeleteACLs.Int16():                 needCluster(opAlter),
	kmsg.DescribeConfigs.Int16():            authDescribeConfigs,
	kmsg.AlterConfigs.Int16():               authAlterConfigs,
	kmsg.DescribeLogDirs.Int16():            needCluster(opDescribe),
	kmsg.AlterReplicaLogDirs.Int16():        needCluster(opAlter),
	kmsg.CreatePartitions.Int16():           authCreatePartitions,
	kmsg.DeleteGroups.Int16():               authDeleteGroups,
	kmsg.ElectLeaders.Int16():               needCluster(opAlter),
	kmsg.IncrementalAlterConfigs.Int16():    authIncrementalAlterConfigs,
	kmsg.AlterPartitionAssignments.Int16():  needCluster(opAlter),
	kmsg.ListPartitionReassignments.Int16(): needCluster(opDescribe),
	kmsg.OffsetDelete.Int16():               authOffsetDelete,
	kmsg.DescribeClientQuotas.Int16():       needCluster(opDescribeConfigs),
	kmsg.ListConfigResources.Int16():        needCluster(opDescribeConfigs),
	kmsg.AlterClientQuotas.Int16():          needCluster(opAlterConfigs),
	kmsg.UpdateFeatures.Int16():             needCluster(opAlter),
	kmsg.UnregisterBroker.Int16():           needCluster(opAlter),
	kmsg.DescribeQuorum.Int16():             needCluster(opDescribe),
	kmsg.DescribeCluster.Int16():            authDescribeCluster,
	kmsg.DescribeProducers.Int16():          authDescribeProducers,
	kmsg.ConsumerGroupHeartbeat.Int16():     authConsumerGroupHeartbeat,
	kmsg.ConsumerGroupDescribe.Int16():      authConsumerGroupDescribe,
	// Share groups (KIP-932): READ on the group; ShareFetch and
	// ShareAcknowledge also READ on each topic, whose partitions are
	// refused one by one.
	kmsg.ShareGroupHeartbeat.Int16():       authShareGroupHeartbeat,
	kmsg.ShareGroupDescribe.Int16():        authShareGroupDescribe,
	kmsg.ShareFetch.Int16():                authShareFetch,
	kmsg.ShareAcknowledge.Int16():          authShareAcknowledge,
	kmsg.DescribeShareGroupOffsets.Int16(): authDescribeShareGroupOffsets,
	kmsg.AlterShareGroupOffsets.Int16():    authAlterShareGroupOffsets,
	kmsg.DeleteShareGroupOffsets.Int16():   authDeleteShareGroupOffsets,
	// Streams groups (KIP-1071): authz_streams.go.
	kmsg.StreamsGroupHeartbeat.Int16():        authStreamsGroupHeartbeat,
	kmsg.StreamsGroupDescribe.Int16():         authStreamsGroupDescribe,
	kmsg.AddPartitionsToTxn.Int16():           authAddPartitionsToTxn,
	kmsg.TxnOffsetCommit.Int16():              authTxnOffsetCommit,
	kmsg.DescribeTransactions.Int16():         authDescribeTransactions,
	kmsg.ListTransactions.Int16():             authListTransactions,
	kmsg.DescribeUserSCRAMCredentials.Int16(): needCluster(opDescribe),
	kmsg.AlterUserSCRAMCredentials.Int16():    needCluster(opAlter),
	kmsg.EndTxn.Int16(): func(z authz, api API, req kmsg.Request) authDecision {
		if z.txn(opWrite, req.(*kmsg.EndTxnRequest).TransactionalID) {
			return allow
		}
		return refuse(api, req, codeTxnAuth)
	},
	kmsg.AddOffsetsToTxn.Int16(): func(z authz, api API, req kmsg.Request) authDecision {
		r := req.(*kmsg.AddOffsetsToTxnRequest)
		if !z.txn(opWrite, r.TransactionalID) {
			return refuse(api, req, codeTxnAuth)
		}
		if !z.group(opRead, r.Group) {
			return refuse(api, req, codeGroupAuth)
		}
		return allow
	},
}

// kip430Keys answer KIP-430 authorized operations even with authorization
// off (every operation then).
var kip430Keys = map[int16]bool{
	kmsg.Metadata.Int16(): true, kmsg.DescribeGroups.Int16(): true,
	kmsg.DescribeCluster.Int16(): true, kmsg.ConsumerGroupDescribe.Int16(): true,
	kmsg.ShareGroupDescribe.Int16(): true, kmsg.DescribeTopicPartitions.Int16(): true,
	kmsg.StreamsGroupDescribe.Int16(): true,
}

// HasAuthRule reports whether key has an authorization rule: a served key
// without one is refused with CLUSTER_AUTHORIZATION_FAILED while
// authorization is on.
func HasAuthRule(key int16) bool {
	_, ok := authRules[key]
	return ok
}

// authorize runs the rule of req's API key.
func authorize(z authz, api API, req kmsg.Request) authDecision {
	rule, ok := authRules[api.Key]
	if !ok {
		if z.a == nil {
			return allow
		}
		return refuse(api, req, codeClusterAuth)
	}
	return rule(z, api, req)
}

func authProduce(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ProduceRequest)
	if req.TransactionID != nil && !z.txn(opWrite, *req.TransactionID) {
		return refuse(api, req, codeTxnAuth)
	}
	// A topic id the broker does not know is the handler's to answer
	// (UNKNOWN_TOPIC_ID), as Kafka authorizes by name once ids resolve.
	keep, refused := split(req.Topics, func(t kmsg.ProduceRequestTopic) bool {
		name := produceTopic(z.view, req.Version, &t)
		return name == "" || z.topic(opWrite, name)
	})
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	// The handler runs even with nothing left: acks=0 is answered by
	// not answering.
	return authDecision{patch: func(r kmsg.Response) {
		resp := r.(*kmsg.ProduceResponse)
		for _, t := range refused {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, codeTopicAuth, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}}
}

// fetchOf is the Fetch answer inside the handler's response (which may
// carry its records without a copy).
func fetchOf(r kmsg.Response) *kmsg.FetchResponse {
	switch x := r.(type) {
	case *fetchResponse:
		return x.FetchResponse
	case *kmsg.FetchResponse:
		return x
	}
	return nil
}

func authFetch(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.FetchRequest)
	var keep, refused []kmsg.FetchRequestTopic
	for _, t := range req.Topics {
		name, known := t.Topic, true
		if req.Version >= 13 {
			name, known = topicName(z.view, "", t.TopicID)
		}
		if !known || z.topic(opRead, name) {
			keep = append(keep, t)
		} else {
			refused = append(refused, t)
		}
	}
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	// An incremental fetch (session epoch above 0) always reaches the
	// handler: its session holds partitions the request does not name,
	// and its epoch must advance.
	return narrowed(len(keep) == 0 && req.SessionEpoch <= 0, req, func(r kmsg.Response) {
		resp := fetchOf(r)
		for _, t := range refused {
			rt := kmsg.NewFetchResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuth
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
				rp.RecordBatches = []byte{}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

func authListOffsets(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ListOffsetsRequest)
	keep, refused := split(req.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return z.topic(opDescribe, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.ListOffsetsResponse)
		for _, t := range refused {
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.Offset, rp.Timestamp, rp.LeaderEpoch = p.Partition, codeTopicAuth, -1, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

func authOffsetForLeaderEpoch(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.OffsetForLeaderEpochRequest)
	keep, refused := split(req.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return z.topic(opDescribe, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.OffsetForLeaderEpochResponse)
		for _, t := range refused {
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, codeTopicAuth, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authMetadata: DESCRIBE per topic. Asked for by name, a topic the
// principal may not describe is answered TOPIC_AUTHORIZATION_FAILED, and so
// is a missing one it may not create (CREATE on the cluster or the topic)
// when auto-creation applies; asked for all topics, the ones it may not
// describe are left out. KIP-430 operations when the client asks.
func authMetadata(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.MetadataRequest)
	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	autoCreate := req.Version < 4 || req.AllowAutoTopicCreation
	var refused []kmsg.MetadataRequestTopic
	if !all && z.a != nil {
		var keep []kmsg.MetadataRequestTopic
		for _, t := range req.Topics {
			name, known := "", false
			if t.Topic != nil {
				name, known = topicName(z.view, *t.Topic, [16]byte{})
			} else {
				name, known = topicName(z.view, "", t.TopicID)
			}
			ok := true
			switch {
			case name == "":
			case !z.topic(opDescribe, name):
				ok = false
			case !known && autoCreate && !z.cluster(opCreate) && !z.topic(opCreate, name):
				ok = false
			}
			if ok {
				keep = append(keep, t)
			} else {
				refused = append(refused, t)
			}
		}
		if keep == nil {
			keep = []kmsg.MetadataRequestTopic{}
		}
		req.Topics = keep
	}
	patch := func(r kmsg.Response) {
		resp := r.(*kmsg.MetadataResponse)
		if all && z.a != nil {
			shown := resp.Topics[:0]
			for _, t := range resp.Topics {
				if t.Topic != nil && z.topic(opDescribe, *t.Topic) {
					shown = append(shown, t)
				}
			}
			resp.Topics = shown
		}
		if req.IncludeTopicAuthorizedOperations {
			for i := range resp.Topics {
				if t := &resp.Topics[i]; t.ErrorCode == 0 && t.Topic != nil {
					t.AuthorizedOperations = z.ops(rtTopic, *t.Topic, acl.TopicOperations)
				}
			}
		}
		if req.IncludeClusterAuthorizedOperations {
			resp.AuthorizedOperations = z.ops(rtCluster, acl.ClusterName, acl.ClusterOperations)
		}
		for _, t := range refused {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic, mt.TopicID, mt.ErrorCode = t.Topic, t.TopicID, codeTopicAuth
			resp.Topics = append(resp.Topics, mt)
		}
	}
	if len(refused) > 0 && len(req.Topics) == 0 && req.Version == 0 {
		// v0 reads an empty list as "all topics": answer here.
		cp := *req
		cp.Version = 1
		resp := metadataResponse(&cp, z.view)
		resp.Version = 0
		patch(resp)
		return authDecision{deny: resp}
	}
	return authDecision{patch: patch}
}

func authOffsetCommit(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.OffsetCommitRequest)
	if !z.group(opRead, req.Group) {
		return refuse(api, req, codeGroupAuth)
	}
	keep, refused := split(req.Topics, func(t kmsg.OffsetCommitRequestTopic) bool {
		name := z.topicOf(t.Topic, t.TopicID)
		return name == "" || z.topic(opRead, name)
	})
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.OffsetCommitResponse)
		for _, t := range refused {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authOffsetFetch: DESCRIBE on the group, then DESCRIBE per topic: asked
// by name a topic the principal may not describe is answered
// TOPIC_AUTHORIZATION_FAILED; asked for all, it is left out.
func authOffsetFetch(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.OffsetFetchRequest)
	if z.a == nil {
		return allow
	}
	if req.Version < 8 {
		if !z.group(opDescribe, req.Group) {
			return refuse(api, req, codeGroupAuth)
		}
		named := req.Topics != nil
		return authDecision{patch: func(r kmsg.Response) {
			resp := r.(*kmsg.OffsetFetchResponse)
			resp.Topics = filterOffsetFetchTopics(z, resp.Topics, named)
		}}
	}
	named := map[string]bool{}
	for _, g := range req.Groups {
		named[g.Group] = g.Topics != nil
	}
	return authDecision{patch: func(r kmsg.Response) {
		resp := r.(*kmsg.OffsetFetchResponse)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if !z.group(opDescribe, g.Group) {
				g.ErrorCode, g.Topics = codeGroupAuth, nil
				continue
			}
			kept := g.Topics[:0]
			for _, t := range g.Topics {
				if name := z.topicOf(t.Topic, t.TopicID); name == "" || z.topic(opDescribe, name) {
					kept = append(kept, t)
				} else if named[g.Group] {
					for j := range t.Partitions {
						p := &t.Partitions[j]
						p.ErrorCode, p.Offset, p.LeaderEpoch, p.Metadata = codeTopicAuth, -1, -1, nil
					}
					kept = append(kept, t)
				}
			}
			g.Topics = kept
		}
	}}
}

func filterOffsetFetchTopics(z authz, ts []kmsg.OffsetFetchResponseTopic, named bool) []kmsg.OffsetFetchResponseTopic {
	kept := ts[:0]
	for _, t := range ts {
		if z.topic(opDescribe, t.Topic) {
			kept = append(kept, t)
		} else if named {
			for j := range t.Partitions {
				p := &t.Partitions[j]
				p.ErrorCode, p.Offset, p.LeaderEpoch, p.Metadata = codeTopicAuth, -1, -1, nil
			}
			kept = append(kept, t)
		}
	}
	return kept
}

// authFindCoordinator: DESCRIBE on the group (key type 0) or the
// transactional id (key type 1).
func authFindCoordinator(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.FindCoordinatorRequest)
	rt, code := rtGroup, codeGroupAuth
	if req.CoordinatorType == 1 {
		rt, code = rtTxn, codeTxnAuth
	}
	if req.Version < 4 {
		if z.allowed(opDescribe, rt, req.CoordinatorKey) {
			return allow
		}
		return refuse(api, req, code)
	}
	keep, refused := split(req.CoordinatorKeys, func(k string) bool { return z.allowed(opDescribe, rt, k) })
	if len(refused) == 0 {
		return allow
	}
	req.CoordinatorKeys = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.FindCoordinatorResponse)
		for _, k := range refused {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, code
			resp.Coordinators = append(resp.Coordinators, c)
		}
	})
}

func authDescribeGroups(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DescribeGroupsRequest)
	keep, refused := split(req.Groups, func(g string) bool { return z.group(opDescribe, g) })
	req.Groups = keep
	patch := func(r kmsg.Response) {
		resp := r.(*kmsg.DescribeGroupsResponse)
		if req.IncludeAuthorizedOperations {
			for i := range resp.Groups {
				if g := &resp.Groups[i]; g.ErrorCode == 0 {
					g.AuthorizedOperations = z.ops(rtGroup, g.Group, acl.GroupOperations)
				}
			}
		}
		for _, g := range refused {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, codeGroupAuth
			resp.Groups = append(resp.Groups, rg)
		}
	}
	return narrowed(len(keep) == 0 && len(refused) > 0, req, patch)
}

// authConsumerGroupHeartbeat: READ on the group, and DESCRIBE on every
// topic subscribed by name, as Kafka 4 checks them (KAFKA-18813): a name
// the member may not describe answers TOPIC_AUTHORIZATION_FAILED. A regex
// is not refused: the coordinator resolves it to the topics the member may
// describe (group.Config.DescribeTopic).
func authConsumerGroupHeartbeat(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if !z.group(opRead, req.Group) {
		return refuse(api, req, codeGroupAuth)
	}
	var denied []string
	for _, n := range req.SubscribedTopicNames {
		if !z.topic(opDescribe, n) {
			denied = append(denied, n)
		}
	}
	if len(denied) == 0 {
		return allow
	}
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = codeTopicAuth
	msg := "The member is not authorized to describe topics " + strings.Join(denied, ", ") + "."
	resp.ErrorMessage = &msg
	return authDecision{deny: resp}
}

// authConsumerGroupDescribe: DESCRIBE on each group; a group whose members
// hold or are to get partitions of a topic the principal may not describe
// is answered TOPIC_AUTHORIZATION_FAILED alone, as Kafka 4's (KAFKA-18813).
func authConsumerGroupDescribe(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.ConsumerGroupDescribeRequest)
	keep, refused := split(req.Groups, func(g string) bool { return z.group(opDescribe, g) })
	req.Groups = keep
	patch := func(r kmsg.Response) {
		resp := r.(*kmsg.ConsumerGroupDescribeResponse)
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if g.ErrorCode != 0 {
				continue
			}
			if t := undescribable(z, g.Members); t != "" {
				*g = kmsg.NewConsumerGroupDescribeResponseGroup()
				g.Group, g.ErrorCode = resp.Groups[i].Group, codeTopicAuth
				msg := "The described group uses topics that the client is not authorized to describe."
				g.ErrorMessage = &msg
				continue
			}
			if req.IncludeAuthorizedOperations {
				g.AuthorizedOperations = z.ops(rtGroup, g.Group, acl.GroupOperations)
			}
		}
		for _, g := range refused {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, codeGroupAuth
			resp.Groups = append(resp.Groups, rg)
		}
	}
	return narrowed(len(keep) == 0 && len(refused) > 0, req, patch)
}

// undescribable returns a topic in members' current or target
// assignments that the principal may not describe, or "".
func undescribable(z authz, members []kmsg.ConsumerGroupDescribeResponseGroupMember) string {
	for _, m := range members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if tp.Topic != "" && !z.topic(opDescribe, tp.Topic) {
					return tp.Topic
				}
			}
		}
	}
	return ""
}

// authListGroups: DESCRIBE on the cluster lists every group; otherwise the
// groups the principal may describe.
func authListGroups(z authz, _ API, _ kmsg.Request) authDecision {
	if z.cluster(opDescribe) {
		return allow
	}
	return authDecision{patch: func(r kmsg.Response) {
		resp := r.(*kmsg.ListGroupsResponse)
		kept := resp.Groups[:0]
		for _, g := range resp.Groups {
			if z.group(opDescribe, g.Group) {
				kept = append(kept, g)
			}
		}
		resp.Groups = kept
	}}
}

func authDeleteGroups(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DeleteGroupsRequest)
	keep, refused := split(req.Groups, func(g string) bool { return z.group(opDelete, g) })
	if len(refused) == 0 {
		return allow
	}
	req.Groups = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.DeleteGroupsResponse)
		for _, g := range refused {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, codeGroupAuth
			resp.Groups = append(resp.Groups, rg)
		}
	})
}

// authOffsetDelete: DELETE on the group, READ per topic.
func authOffsetDelete(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.OffsetDeleteRequest)
	if !z.group(opDelete, req.Group) {
		return refuse(api, req, codeGroupAuth)
	}
	keep, refused := split(req.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return z.topic(opRead, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.OffsetDeleteResponse)
		for _, t := range refused {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authCreateTopics: CREATE on the cluster, or on each topic.
func authCreateTopics(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.CreateTopicsRequest)
	if z.cluster(opCreate) {
		return allow
	}
	keep, refused := split(req.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return z.topic(opCreate, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.CreateTopicsResponse)
		for _, t := range refused {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.NumPartitions, rt.ReplicationFactor = t.Topic, codeTopicAuth, -1, -1
			msg := "not authorized to create topic " + t.Topic
			rt.ErrorMessage = &msg
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authDeleteTopics: DELETE per topic, named (v0-5) or by name or id (v6).
func authDeleteTopics(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DeleteTopicsRequest)
	type refusal struct {
		name *string
		id   [16]byte
	}
	var refused []refusal
	var keepNames []string
	for _, n := range req.TopicNames {
		if z.topic(opDelete, n) {
			keepNames = append(keepNames, n)
		} else {
			n := n
			refused = append(refused, refusal{name: &n})
		}
	}
	var keep []kmsg.DeleteTopicsRequestTopic
	for _, t := range req.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		} else {
			name, _ = topicName(z.view, "", t.TopicID)
		}
		if name == "" || z.topic(opDelete, name) {
			keep = append(keep, t)
		} else {
			refused = append(refused, refusal{name: t.Topic, id: t.TopicID})
		}
	}
	if len(refused) == 0 {
		return allow
	}
	req.TopicNames, req.Topics = keepNames, keep
	return narrowed(len(keepNames) == 0 && len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.DeleteTopicsResponse)
		for _, t := range refused {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.name, t.id, codeTopicAuth
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

func authDeleteRecords(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DeleteRecordsRequest)
	keep, refused := split(req.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return z.topic(opDelete, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.DeleteRecordsResponse)
		for _, t := range refused {
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, codeTopicAuth, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authInitProducerID: WRITE on the transactional id; an idempotent
// producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic
// (KIP-679).
func authInitProducerID(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.InitProducerIDRequest)
	if req.TransactionalID != nil {
		if z.txn(opWrite, *req.TransactionalID) {
			return allow
		}
		return refuse(api, req, codeTxnAuth)
	}
	if z.cluster(opIdempotentWrite) || z.a.AuthorizeAny(z.s.Principal, z.s.ClientHost, opWrite, rtTopic) {
		return allow
	}
	return refuse(api, req, codeClusterAuth)
}

// configResource maps a config resource to the ACL resource it is
// authorized on and the error a refusal carries; ok is false for config
// resources without a rule here (left to the handler).
func configResource(t kmsg.ConfigResourceType, name string) (kmsg.ACLResourceType, string, int16, bool) {
	switch t {
	case kmsg.ConfigResourceTypeTopic:
		return rtTopic, name, codeTopicAuth, true
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		return rtCluster, acl.ClusterName, codeClusterAuth, true
	case kmsg.ConfigResourceTypeGroupConfig:
		return rtGroup, name, codeGroupAuth, true
	}
	return 0, "", 0, false
}

func authDescribeConfigs(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DescribeConfigsRequest)
	return authConfigs(z, opDescribeConfigs, &req.Resources, req,
		func(r kmsg.DescribeConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return r.ResourceType, r.ResourceName
		},
		func(out kmsg.Response, r kmsg.DescribeConfigsRequestResource, code int16) {
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, code
			resp := out.(*kmsg.DescribeConfigsResponse)
			resp.Resources = append(resp.Resources, rr)
		})
}

func authAlterConfigs(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.AlterConfigsRequest)
	return authConfigs(z, opAlterConfigs, &req.Resources, req,
		func(r kmsg.AlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return r.ResourceType, r.ResourceName
		},
		func(out kmsg.Response, r kmsg.AlterConfigsRequestResource, code int16) {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, code
			resp := out.(*kmsg.AlterConfigsResponse)
			resp.Resources = append(resp.Resources, rr)
		})
}

func authIncrementalAlterConfigs(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.IncrementalAlterConfigsRequest)
	return authConfigs(z, opAlterConfigs, &req.Resources, req,
		func(r kmsg.IncrementalAlterConfigsRequestResource) (kmsg.ConfigResourceType, string) {
			return r.ResourceType, r.ResourceName
		},
		func(out kmsg.Response, r kmsg.IncrementalAlterConfigsRequestResource, code int16) {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = r.ResourceType, r.ResourceName, code
			resp := out.(*kmsg.IncrementalAlterConfigsResponse)
			resp.Resources = append(resp.Resources, rr)
		})
}

// authConfigs is the rule the three config APIs share: op on each
// resource (DESCRIBE_CONFIGS or ALTER_CONFIGS on the topic, the cluster for
// broker configs, the group); the refused resources are taken out of
// *resources and answered with their code.
func authConfigs[R any](z authz, op kmsg.ACLOperation, resources *[]R, req kmsg.Request,
	name func(R) (kmsg.ConfigResourceType, string), answer func(kmsg.Response, R, int16)) authDecision {
	var keep, refused []R
	var codes []int16
	for _, res := range *resources {
		typ, n := name(res)
		rt, rn, code, ok := configResource(typ, n)
		if !ok || z.allowed(op, rt, rn) {
			keep = append(keep, res)
		} else {
			refused = append(refused, res)
			codes = append(codes, code)
		}
	}
	if len(refused) == 0 {
		return allow
	}
	*resources = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		for i, res := range refused {
			answer(r, res, codes[i])
		}
	})
}

func authCreatePartitions(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.CreatePartitionsRequest)
	keep, refused := split(req.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return z.topic(opAlter, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.CreatePartitionsResponse)
		for _, t := range refused {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, codeTopicAuth
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

func authDescribeCluster(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DescribeClusterRequest)
	if !z.cluster(opDescribe) {
		return refuse(api, req, codeClusterAuth)
	}
	if !req.IncludeClusterAuthorizedOperations {
		return allow
	}
	return authDecision{patch: func(r kmsg.Response) {
		r.(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations = z.ops(rtCluster, acl.ClusterName, acl.ClusterOperations)
	}}
}

func authDescribeProducers(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.DescribeProducersRequest)
	keep, refused := split(req.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return z.topic(opRead, t.Topic) })
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		resp := r.(*kmsg.DescribeProducersResponse)
		for _, t := range refused {
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codeTopicAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
}

// authAddPartitionsToTxn: WRITE on the transactional id, WRITE on every
// topic; if any topic is refused nothing is added (the others are answered
// OPERATION_NOT_ATTEMPTED, as Kafka does). The v4+ batch form is
// broker-to-broker: CLUSTER_ACTION on the cluster.
func authAddPartitionsToTxn(z authz, api API, body kmsg.Request) authDecision {
	req := body.(*kmsg.AddPartitionsToTxnRequest)
	if req.Version >= 4 {
		if z.cluster(kmsg.ACLOperationClusterAction) {
			return allow
		}
		return refuse(api, req, codeClusterAuth)
	}
	txnOK := z.txn(opWrite, req.TransactionalID)
	anyRefused := false
	for _, t := range req.Topics {
		if !z.topic(opWrite, t.Topic) {
			anyRefused = true
		}
	}
	if txnOK && !anyRefused {
		return allow
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range req.Topics {
		code := codeTxnAuth
		if txnOK {
			code = kerr.OperationNotAttempted.Code
			if !z.topic(opWrite, t.Topic) {
				code = codeTopicAuth
			}
		}
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return authDecision{deny: resp}
}

// authTxnOffsetCommit: WRITE on the transactional id, READ on the group,
// READ per topic.
func authTxnOffsetCommit(z authz, _ API, body kmsg.Request) authDecision {
	req := body.(*kmsg.TxnOffsetCommitRequest)
	answerAll := func(ts []kmsg.TxnOffsetCommitRequestTopic, code int16, resp *kmsg.TxnOffsetCommitResponse) {
		for _, t := range ts {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}
	whole := int16(0)
	switch {
	case !z.txn(opWrite, req.TransactionalID):
		whole = codeTxnAuth
	case !z.group(opRead, req.Group):
		whole = codeGroupAuth
	}
	if whole != 0 {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		answerAll(req.Topics, whole, resp)
		return authDecision{deny: resp}
	}
	keep, refused := split(req.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool {
		name := z.topicOf(t.Topic, t.TopicID)
		return name == "" || z.topic(opRead, name)
	})
	if len(refused) == 0 {
		return allow
	}
	req.Topics = keep
	return narrowed(len(keep) == 0, req, func(r kmsg.Response) {
		answerAll(refused, codeTopicAuth, r.(*kmsg.TxnOffsetCommitResponse))
	})
}

// safeAuthorizeAndHandle runs req's authorization rule, then (unless it
// refused) the handler, then the rule's patch of the answer. With
// authorization off only the KIP-430 answers are patched.
func (a *connActor) safeAuthorizeAndHandle(api API, req *Request) (p Pending) {
	if a.srv.Authorizer == nil && !kip430Keys[api.Key] {
		return a.safeHandle(api, req)
	}
	defer func() {
		if r := recover(); r != nil {
			p = Ready(a.recovered(api, req, r, "authorization panic"))
		}
	}()
	d := authorize(authz{a: a.srv.Authorizer, s: req.Session, view: req.View}, api, req.Body)
	if d.deny != nil {
		a.log.Debug().Str("api", kmsg.NameForKey(req.Header.Key)).Str("principal", req.Session.Principal).Msg("request refused by ACLs")
		return Ready(d.deny)
	}
	inner := a.safeHandle(api, req)
	if d.patch == nil {
		return inner
	}
	return func() kmsg.Response {
		resp := inner()
		if resp != nil && topLevelError(resp) == 0 {
			d.patch(resp)
		}
		return resp
	}
}

// authDescribeTopicPartitions: DESCRIBE on each topic. A listing of every
// topic leaves out those the principal may not describe; a named one it may
// not describe is answered TOPIC_AUTHORIZATION_FAILED with no partitions,
// as Metadata does. Every topic described carries its KIP-430 authorized
// operations: the request has no flag for them, and Kafka always sets them.
func authDescribeTopicPartitions(z authz, _ API, body kmsg.Request) authDecision {
	named := len(body.(*kmsg.DescribeTopicPartitionsRequest).Topics) > 0
	return authDecision{patch: func(r kmsg.Response) {
		resp := r.(*kmsg.DescribeTopicPartitionsResponse)
		keep := resp.Topics[:0]
		for _, t := range resp.Topics {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			if z.topic(opDescribe, name) {
				t.AuthorizedOperations = z.ops(rtTopic, name, acl.TopicOperations)
				keep = append(keep, t)
				continue
			}
			if named {
				t.ErrorCode, t.Partitions, t.TopicID = codeTopicAuth, nil, [16]byte{}
				keep = append(keep, t)
			}
		}
		resp.Topics = keep
	}}
}

// authDescribeTransactions: DESCRIBE on each transactional id; one the
// principal may not describe is answered TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func authDescribeTransactions(z authz, _ API, _ kmsg.Request) authDecision {
	return authDecision{patch: func(r kmsg.Response) {
		resp := r.(*kmsg.DescribeTransactionsResponse)
		for i, s := range resp.TransactionStates {
			if !z.txn(opDescribe, s.TransactionalID) {
				id := s.TransactionalID
				resp.TransactionStates[i] = kmsg.NewDescribeTransactionsResponseTransactionState()
				resp.TransactionStates[i].TransactionalID = id
				resp.TransactionStates[i].ErrorCode = codeTxnAuth
			}
		}
	}}
}

// authListTransactions lists only the transactional ids the principal may
// describe, as Kafka does.
func authListTransactions(z authz, _ API, _ kmsg.Request) authDecision {
	return authDecision{patch: func(r kmsg.Response) {
		resp := r.(*kmsg.ListTransactionsResponse)
		keep := resp.TransactionStates[:0]
		for _, s := range resp.TransactionStates {
			if z.txn(opDescribe, s.TransactionalID) {
				keep = append(keep, s)
			}
		}
		resp.TransactionStates = keep
	}}
}

// split divides items into those ok allows and those it refuses, in order.
func split[T any](items []T, ok func(T) bool) (keep, refused []T) {
	for _, it := range items {
		if ok(it) {
			keep = append(keep, it)
		} else {
			refused = append(refused, it)
		}
	}
	return keep, refused
}

// MayCreateTopic reports whether the request's principal may create topic
// name: CREATE on the cluster or on the topic, as CreateTopics checks it
// (a handler that creates topics on a client's behalf asks it; true with
// authorization off).
func (r *Request) MayCreateTopic(name string) bool {
	z := authz{a: r.Server.Authorizer, s: r.Session, view: r.View}
	return z.cluster(opCreate) || z.topic(opCreate, name)
}
