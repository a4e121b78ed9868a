package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// admin <bootstrap> <prefix> <saslBootstrap>: the AdminClient calls of
// librdkafka 2.11 that confluent-kafka-python 1.7.0 lacks, on a broker with
// an ACL authorizer whose PLAINTEXT principal (ANONYMOUS) is a super user
// and whose saslBootstrap is a SASL_PLAINTEXT listener with SCRAM-SHA-512.
// Each answer goes into the output under the call's name.
func admin(ctx context.Context, bootstrap string, args []string, out map[string]any) error {
	if len(args) != 2 {
		return fmt.Errorf("admin wants <prefix> <saslBootstrap>, got %q", args)
	}
	prefix, saslBootstrap := args[0], args[1]
	topic := prefix + "-t"
	classic, consumer := prefix+"-classic", prefix+"-848"
	adm, err := kafka.NewAdminClient(conf(bootstrap))
	if err != nil {
		return err
	}
	defer adm.Close()
	withOps := kafka.SetAdminOptionIncludeAuthorizedOperations(true)

	cl, err := adm.DescribeCluster(ctx, withOps)
	if err != nil {
		return fmt.Errorf("DescribeCluster: %w", err)
	}
	dc := map[string]any{"nodes": nodesJSON(cl.Nodes), "operations": opsJSON(cl.AuthorizedOperations)}
	if cl.ClusterID != nil {
		dc["clusterId"] = *cl.ClusterID
	}
	if cl.Controller != nil {
		dc["controller"] = cl.Controller.ID
	}
	out["describeCluster"] = dc

	ct, err := adm.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: topic, NumPartitions: 3, ReplicationFactor: 1}})
	if err != nil || ct[0].Error.Code() != kafka.ErrNoError {
		return fmt.Errorf("CreateTopics %s: %v %v", topic, err, ct)
	}

	dt, err := adm.DescribeTopics(ctx, kafka.NewTopicCollectionOfTopicNames([]string{topic, prefix + "-missing"}), withOps)
	if err != nil {
		return fmt.Errorf("DescribeTopics: %w", err)
	}
	var topics []map[string]any
	for _, d := range dt.TopicDescriptions {
		var parts []map[string]any
		for _, p := range d.Partitions {
			pj := map[string]any{"partition": p.Partition, "replicas": nodeIDs(p.Replicas), "isr": nodeIDs(p.Isr)}
			if p.Leader != nil {
				pj["leader"] = p.Leader.ID
			}
			parts = append(parts, pj)
		}
		topics = append(topics, map[string]any{"name": d.Name, "topicId": d.TopicID.String(), "error": kerr(d.Error),
			"internal": d.IsInternal, "partitions": parts, "operations": opsJSON(d.AuthorizedOperations)})
	}
	out["describeTopics"] = topics

	// Five records on partition 0, the third with the greatest timestamp;
	// three on partition 1 and 2 each for the groups below.
	p, err := kafka.NewProducer(conf(bootstrap, "acks", "all", "enable.idempotence", true))
	if err != nil {
		return err
	}
	defer p.Close()
	base := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	out["baseTimestamp"] = base.UnixMilli()
	var msgs []*kafka.Message
	for i, d := range []time.Duration{0, time.Second, 30 * time.Second, 3 * time.Second, 4 * time.Second} {
		msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
			Value: []byte(fmt.Sprintf("p0-%d", i)), Timestamp: base.Add(d)})
	}
	for _, part := range []int32{1, 2} {
		for i := 0; i < 3; i++ {
			msgs = append(msgs, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part},
				Value: []byte(fmt.Sprintf("p%d-%d", part, i))})
		}
	}
	if _, err := produceAll(ctx, p, msgs); err != nil {
		return err
	}

	p0 := kafka.TopicPartition{Topic: &topic, Partition: 0}
	listOffsets := func(spec kafka.OffsetSpec) (map[string]any, error) {
		r, err := adm.ListOffsets(ctx, map[kafka.TopicPartition]kafka.OffsetSpec{p0: spec})
		if err != nil {
			return nil, fmt.Errorf("ListOffsets %d: %w", spec, err)
		}
		for _, info := range r.ResultInfos {
			return map[string]any{"offset": int64(info.Offset), "timestamp": info.Timestamp, "error": kerr(info.Error)}, nil
		}
		return nil, fmt.Errorf("ListOffsets %d: no result", spec)
	}
	lo := map[string]any{}
	for name, spec := range map[string]kafka.OffsetSpec{"earliest": kafka.EarliestOffsetSpec, "latest": kafka.LatestOffsetSpec,
		"maxTimestamp": kafka.MaxTimestampOffsetSpec, "byTimestamp": kafka.NewOffsetSpecForTimestamp(base.Add(1500 * time.Millisecond).UnixMilli())} {
		if lo[name], err = listOffsets(spec); err != nil {
			return err
		}
	}
	out["listOffsets"] = lo

	del := p0
	del.Offset = 2
	dr, err := adm.DeleteRecords(ctx, []kafka.TopicPartition{del})
	if err != nil {
		return fmt.Errorf("DeleteRecords: %w", err)
	}
	drj := map[string]any{"error": kerr(dr.DeleteRecordsResults[0].TopicPartition.Error)}
	if d := dr.DeleteRecordsResults[0].DeletedRecords; d != nil {
		drj["lowWatermark"] = int64(d.LowWatermark)
	}
	if drj["earliestAfter"], err = listOffsets(kafka.EarliestOffsetSpec); err != nil {
		return err
	}
	out["deleteRecords"] = drj

	res := kafka.ConfigResource{Type: kafka.ResourceTopic, Name: topic, Config: []kafka.ConfigEntry{
		{Name: "retention.ms", Value: "3600000", IncrementalOperation: kafka.AlterConfigOpTypeSet},
		{Name: "cleanup.policy", Value: "compact", IncrementalOperation: kafka.AlterConfigOpTypeAppend},
	}}
	iac, err := adm.IncrementalAlterConfigs(ctx, []kafka.ConfigResource{res})
	if err != nil {
		return fmt.Errorf("IncrementalAlterConfigs: %w", err)
	}
	dcfg, err := adm.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		return fmt.Errorf("DescribeConfigs: %w", err)
	}
	cfgs := map[string]any{}
	for _, name := range []string{"retention.ms", "cleanup.policy", "segment.bytes"} {
		e := dcfg[0].Config[name]
		cfgs[name] = map[string]any{"value": e.Value, "source": e.Source.String()}
	}
	out["incrementalAlterConfigs"] = map[string]any{"error": kerr(iac[0].Error), "described": cfgs}

	// A classic group and a KIP-848 group read the topic and commit.
	startGroup := func(name, group, protocol string) (*member, error) {
		return startMember(name, conf(bootstrap, "group.id", group, "group.protocol", protocol, "client.id", name,
			"enable.auto.commit", false, "auto.offset.reset", "earliest"), []string{topic})
	}
	cm, err := startGroup("classic-1", classic, "classic")
	if err != nil {
		return err
	}
	defer cm.close()
	km, err := startGroup("consumer-1", consumer, "consumer")
	if err != nil {
		return err
	}
	defer km.close()
	// 3 left on partition 0 after DeleteRecords, 3 on 1 and 2.
	for _, m := range []*member{cm, km} {
		if err := waitFor(ctx, m.name+" reads 9 records", func() bool { r, _, _ := m.snapshot(); return len(r) >= 9 }); err != nil {
			r, a, e := m.snapshot()
			out[m.name] = map[string]any{"records": r, "assignment": a, "errors": e}
			return err
		}
	}
	listGroups := func(opts ...kafka.ListConsumerGroupsAdminOption) (any, error) {
		r, err := adm.ListConsumerGroups(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("ListConsumerGroups: %w", err)
		}
		var gs []map[string]any
		for _, g := range r.Valid {
			if g.GroupID == classic || g.GroupID == consumer {
				gs = append(gs, map[string]any{"group": g.GroupID, "state": g.State.String(), "type": g.Type.String(), "simple": g.IsSimpleConsumerGroup})
			}
		}
		sort.Slice(gs, func(i, j int) bool { return gs[i]["group"].(string) < gs[j]["group"].(string) })
		return map[string]any{"groups": gs, "errors": len(r.Errors)}, nil
	}
	lg := map[string]any{}
	for name, opts := range map[string][]kafka.ListConsumerGroupsAdminOption{
		"all":      nil,
		"stable":   {kafka.SetAdminMatchConsumerGroupStates([]kafka.ConsumerGroupState{kafka.ConsumerGroupStateStable})},
		"empty":    {kafka.SetAdminMatchConsumerGroupStates([]kafka.ConsumerGroupState{kafka.ConsumerGroupStateEmpty})},
		"classic":  {kafka.SetAdminMatchConsumerGroupTypes([]kafka.ConsumerGroupType{kafka.ConsumerGroupTypeClassic})},
		"consumer": {kafka.SetAdminMatchConsumerGroupTypes([]kafka.ConsumerGroupType{kafka.ConsumerGroupTypeConsumer})},
	} {
		if lg[name], err = listGroups(opts...); err != nil {
			return err
		}
	}
	out["listGroupsLive"] = lg
	desc, err := adm.DescribeConsumerGroups(ctx, []string{classic, consumer}, withOps)
	if err != nil {
		return fmt.Errorf("DescribeConsumerGroups: %w", err)
	}
	out["describeGroups"] = groupsJSON(desc.ConsumerGroupDescriptions)

	// Both leave; the classic group's offsets are listed, altered, listed.
	if err := cm.close(); err != nil {
		return fmt.Errorf("close %s: %w", cm.name, err)
	}
	if err := km.close(); err != nil {
		return fmt.Errorf("close %s: %w", km.name, err)
	}
	if out["listGroupsEmpty"], err = listGroups(kafka.SetAdminMatchConsumerGroupStates([]kafka.ConsumerGroupState{kafka.ConsumerGroupStateEmpty})); err != nil {
		return err
	}
	groupOffsets := func() (map[string]int64, error) {
		r, err := adm.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: classic}}, kafka.SetAdminRequireStableOffsets(true))
		if err != nil {
			return nil, fmt.Errorf("ListConsumerGroupOffsets: %w", err)
		}
		o := map[string]int64{}
		for _, tp := range r.ConsumerGroupsTopicPartitions[0].Partitions {
			o[tpKey(tp)] = int64(tp.Offset)
		}
		return o, nil
	}
	if out["groupOffsets"], err = groupOffsets(); err != nil {
		return err
	}
	set := p0
	set.Offset = 3
	ao, err := adm.AlterConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: classic, Partitions: []kafka.TopicPartition{set}}})
	if err != nil {
		return fmt.Errorf("AlterConsumerGroupOffsets: %w", err)
	}
	out["alterGroupOffsets"] = kerr(ao.ConsumerGroupsTopicPartitions[0].Partitions[0].Error)
	if out["groupOffsetsAltered"], err = groupOffsets(); err != nil {
		return err
	}
	dg, err := adm.DeleteConsumerGroups(ctx, []string{consumer})
	if err != nil {
		return fmt.Errorf("DeleteConsumerGroups: %w", err)
	}
	out["deleteGroups"] = kerr(dg.ConsumerGroupResults[0].Error)
	if out["listGroupsAfterDelete"], err = listGroups(); err != nil {
		return err
	}

	// ACLs: carol may do anything on the topic (kept: she produces below);
	// bob may read the topics of the prefix and the classic group.
	acls := kafka.ACLBindings{
		{Type: kafka.ResourceTopic, Name: topic, ResourcePatternType: kafka.ResourcePatternTypeLiteral,
			Principal: "User:carol", Host: "*", Operation: kafka.ACLOperationAll, PermissionType: kafka.ACLPermissionTypeAllow},
		{Type: kafka.ResourceTopic, Name: prefix + "-", ResourcePatternType: kafka.ResourcePatternTypePrefixed,
			Principal: "User:bob", Host: "*", Operation: kafka.ACLOperationRead, PermissionType: kafka.ACLPermissionTypeAllow},
		{Type: kafka.ResourceGroup, Name: classic, ResourcePatternType: kafka.ResourcePatternTypeLiteral,
			Principal: "User:bob", Host: "*", Operation: kafka.ACLOperationRead, PermissionType: kafka.ACLPermissionTypeAllow},
	}
	ca, err := adm.CreateACLs(ctx, acls)
	if err != nil {
		return fmt.Errorf("CreateACLs: %w", err)
	}
	var caErrs []*errJSON
	for _, r := range ca {
		caErrs = append(caErrs, kerr(r.Error))
	}
	out["createAcls"] = caErrs
	anyFilter := kafka.ACLBindingFilter{Type: kafka.ResourceAny, ResourcePatternType: kafka.ResourcePatternTypeAny,
		Operation: kafka.ACLOperationAny, PermissionType: kafka.ACLPermissionTypeAny}
	describeACLs := func() (any, error) {
		r, err := adm.DescribeACLs(ctx, anyFilter)
		if err != nil {
			return nil, fmt.Errorf("DescribeACLs: %w", err)
		}
		return map[string]any{"error": kerr(r.Error), "acls": aclsJSON(r.ACLBindings)}, nil
	}
	if out["describeAcls"], err = describeACLs(); err != nil {
		return err
	}
	bobs := anyFilter
	bobs.Principal = "User:bob"
	da, err := adm.DeleteACLs(ctx, kafka.ACLBindingFilters{bobs})
	if err != nil {
		return fmt.Errorf("DeleteACLs: %w", err)
	}
	out["deleteAcls"] = map[string]any{"error": kerr(da[0].Error), "acls": aclsJSON(da[0].ACLBindings)}
	if out["describeAclsAfter"], err = describeACLs(); err != nil {
		return err
	}

	// SCRAM: alice exists; carol is added with SCRAM-SHA-512, then
	// produces over SASL; a wrong password is refused.
	describeScram := func(users []string) (any, error) {
		r, err := adm.DescribeUserScramCredentials(ctx, users)
		if err != nil {
			return nil, fmt.Errorf("DescribeUserScramCredentials: %w", err)
		}
		o := map[string]any{}
		for user, d := range r.Descriptions {
			var creds []string
			for _, c := range d.ScramCredentialInfos {
				creds = append(creds, fmt.Sprintf("%s/%d", c.Mechanism, c.Iterations))
			}
			sort.Strings(creds)
			o[user] = map[string]any{"credentials": creds, "error": kerr(d.Error)}
		}
		return o, nil
	}
	if out["describeScram"], err = describeScram([]string{"alice", "nobody"}); err != nil {
		return err
	}
	as, err := adm.AlterUserScramCredentials(ctx, []kafka.UserScramCredentialUpsertion{{User: "carol",
		ScramCredentialInfo: kafka.ScramCredentialInfo{Mechanism: kafka.ScramMechanismSHA512, Iterations: 8192}, Password: []byte("carol-pw")}}, nil)
	if err != nil {
		return fmt.Errorf("AlterUserScramCredentials: %w", err)
	}
	out["alterScram"] = kerr(as.Errors["carol"])
	if out["describeScramAfter"], err = describeScram(nil); err != nil {
		return err
	}
	scram := func(password string) (string, error) {
		sp, err := kafka.NewProducer(conf(saslBootstrap, "security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "SCRAM-SHA-512",
			"sasl.username", "carol", "sasl.password", password, "acks", "all", "message.timeout.ms", 8000))
		if err != nil {
			return "", err
		}
		defer sp.Close()
		ch := make(chan kafka.Event, 1)
		part := kafka.TopicPartition{Topic: &topic, Partition: 2}
		// Keyed: the topic is compacted by now.
		if err := sp.Produce(&kafka.Message{TopicPartition: part, Key: []byte("carol"), Value: []byte("carol")}, ch); err != nil {
			return "", err
		}
		// An authentication failure comes as an error event first.
		for {
			select {
			case e := <-ch:
				m := e.(*kafka.Message)
				if m.TopicPartition.Error != nil {
					return "delivery: " + m.TopicPartition.Error.Error(), nil
				}
				return fmt.Sprintf("%s/%d/%d", *m.TopicPartition.Topic, m.TopicPartition.Partition, m.TopicPartition.Offset), nil
			case e := <-sp.Events():
				if ke, ok := e.(kafka.Error); ok {
					return ke.Code().String(), nil
				}
			case <-ctx.Done():
				return "", fmt.Errorf("SCRAM produce: %w", ctx.Err())
			}
		}
	}
	if out["scramProduce"], err = scram("carol-pw"); err != nil {
		return err
	}
	if out["scramWrongPassword"], err = scram("not-carols"); err != nil {
		return err
	}

	var parts []kafka.TopicPartition
	for i := int32(0); i < 3; i++ {
		parts = append(parts, kafka.TopicPartition{Topic: &topic, Partition: i})
	}
	el, err := adm.ElectLeaders(ctx, kafka.NewElectLeadersRequest(kafka.ElectionTypePreferred, parts))
	if err != nil {
		return fmt.Errorf("ElectLeaders: %w", err)
	}
	elj := map[string]any{}
	for _, tp := range el.TopicPartitions {
		e := kerr(tp.Error)
		if e == nil {
			elj[tpKey(tp)] = "NONE"
		} else {
			elj[tpKey(tp)] = e
		}
	}
	out["electLeaders"] = elj
	return nil
}

func nodesJSON(ns []kafka.Node) []map[string]any {
	var o []map[string]any
	for _, n := range ns {
		j := map[string]any{"id": n.ID, "host": n.Host, "port": n.Port}
		if n.Rack != nil {
			j["rack"] = *n.Rack
		}
		o = append(o, j)
	}
	return o
}

func nodeIDs(ns []kafka.Node) []int {
	ids := []int{}
	for _, n := range ns {
		ids = append(ids, n.ID)
	}
	return ids
}

func opsJSON(ops []kafka.ACLOperation) []string {
	s := []string{}
	for _, op := range ops {
		s = append(s, op.String())
	}
	sort.Strings(s)
	return s
}

func aclsJSON(bs kafka.ACLBindings) []string {
	s := []string{}
	for _, b := range bs {
		s = append(s, fmt.Sprintf("%s:%s:%s %s %s %s %s", b.Type, b.ResourcePatternType, b.Name, b.Principal, b.Host, b.Operation, b.PermissionType))
	}
	sort.Strings(s)
	return s
}
