package conn

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/internal/kmsgtest"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/wire"
)

// TestCoreAPITable pins the versions this package serves and advertises.
func TestCoreAPITable(t *testing.T) {
	want := map[int16][2]int16{
		kmsg.Produce.Int16():                      {3, 13},
		kmsg.Fetch.Int16():                        {4, 18},
		kmsg.ListOffsets.Int16():                  {0, 11},
		kmsg.Metadata.Int16():                     {0, 13},
		kmsg.ApiVersions.Int16():                  {0, 5},
		kmsg.CreateTopics.Int16():                 {2, 7},
		kmsg.DeleteTopics.Int16():                 {1, 6},
		kmsg.DeleteRecords.Int16():                {0, 2},
		kmsg.InitProducerID.Int16():               {0, 5},
		kmsg.OffsetForLeaderEpoch.Int16():         {2, 4},
		kmsg.DescribeConfigs.Int16():              {1, 4},
		kmsg.AlterConfigs.Int16():                 {0, 2},
		kmsg.CreatePartitions.Int16():             {0, 3},
		kmsg.ElectLeaders.Int16():                 {0, 2},
		kmsg.IncrementalAlterConfigs.Int16():      {0, 1},
		kmsg.DescribeLogDirs.Int16():              {1, 5},
		kmsg.AlterReplicaLogDirs.Int16():          {1, 2},
		kmsg.DescribeCluster.Int16():              {0, 2},
		kmsg.DescribeProducers.Int16():            {0, 0},
		kmsg.UnregisterBroker.Int16():             {0, 0},
		kmsg.DescribeQuorum.Int16():               {0, 2},
		kmsg.SASLHandshake.Int16():                {1, 1},
		kmsg.SASLAuthenticate.Int16():             {0, 2},
		kmsg.WriteTxnMarkers.Int16():              {1, 2},
		kmsg.DescribeACLs.Int16():                 {1, 3},
		kmsg.CreateACLs.Int16():                   {1, 3},
		kmsg.DeleteACLs.Int16():                   {1, 3},
		kmsg.AlterPartitionAssignments.Int16():    {0, 1},
		kmsg.ListPartitionReassignments.Int16():   {0, 0},
		kmsg.DescribeTopicPartitions.Int16():      {0, 0},
		kmsg.UpdateFeatures.Int16():               {0, 2},
		kmsg.DescribeClientQuotas.Int16():         {0, 1},
		kmsg.AlterClientQuotas.Int16():            {0, 1},
		kmsg.DescribeUserSCRAMCredentials.Int16(): {0, 0},
		kmsg.AlterUserSCRAMCredentials.Int16():    {0, 0},
		kmsg.ListConfigResources.Int16():          {0, 1},
		kmsg.CreateDelegationToken.Int16():        {1, 3},
		kmsg.RenewDelegationToken.Int16():         {1, 2},
		kmsg.ExpireDelegationToken.Int16():        {1, 2},
		kmsg.DescribeDelegationToken.Int16():      {1, 3},
	}
	if len(coreAPIs) != len(want) {
		t.Fatalf("%d core APIs, want %d", len(coreAPIs), len(want))
	}
	for key, r := range want {
		a, ok := coreAPIs[key]
		if !ok || a.MinVersion != r[0] || a.MaxVersion != r[1] || a.Handle == nil {
			t.Errorf("%s: served %v (%d-%d), want %d-%d", kmsg.NameForKey(key), ok, a.MinVersion, a.MaxVersion, r[0], r[1])
		}
	}
	system := actorsys.NewSystem()
	defer system.Shutdown()
	srv := NewServer(Config{}, system, &routing.Store{}, actorsys.Ref{})
	for _, k := range apiVersionsResponse(srv).ApiKeys {
		min := want[k.ApiKey][0]
		if k.ApiKey == kmsg.Produce.Int16() || k.ApiKey == kmsg.SASLHandshake.Int16() {
			min = 0 // advertised from v0: Produce as Apache Kafka 4, SaslHandshake for librdkafka
		}
		if k.MinVersion != min || k.MaxVersion != want[k.ApiKey][1] {
			t.Errorf("ApiVersions lists %s %d-%d", kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion)
		}
	}
}

// TestUnsupportedVersionAnswers: only ApiVersions answers a version it does
// not serve (v0 with UNSUPPORTED_VERSION and the table); every other key
// leaves the connection to be closed, as Kafka's socket server does, Produce
// v0-2 (listed from v0 in ApiVersions) and the versions KIP-896 removed in
// Kafka 4 included.
func TestUnsupportedVersionAnswers(t *testing.T) {
	system := actorsys.NewSystem()
	defer system.Shutdown()
	srv := NewServer(Config{}, system, &routing.Store{}, actorsys.Ref{})
	resp := unsupportedVersion(srv, wire.RequestHeader{Key: kmsg.ApiVersions.Int16(), Version: 9})
	av, ok := resp.(*kmsg.ApiVersionsResponse)
	if !ok || av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) != len(srv.APIs()) {
		t.Fatalf("ApiVersions v9: %#v, want UNSUPPORTED_VERSION with the API table", resp)
	}
	for _, hdr := range []wire.RequestHeader{
		{Key: kmsg.Produce.Int16(), Version: 2},
		{Key: kmsg.Fetch.Int16(), Version: 3},
		{Key: kmsg.CreateTopics.Int16(), Version: 1},
		{Key: kmsg.DescribeConfigs.Int16(), Version: 0},
		{Key: kmsg.WriteTxnMarkers.Int16(), Version: 0},
		{Key: kmsg.Metadata.Int16(), Version: 99},
		{Key: kmsg.SASLHandshake.Int16(), Version: 0},
	} {
		if resp := unsupportedVersion(srv, hdr); resp != nil {
			t.Errorf("%s v%d answered %T, want nil (the connection closes)", kmsg.NameForKey(hdr.Key), hdr.Version, resp)
		}
	}
}

// errorRequests are requests naming two topics of two partitions (or
// resources) each, for every core API whose error response is per item.
func errorRequests() []kmsg.Request {
	name := func(s string) *string { return &s }
	produce := kmsg.NewPtrProduceRequest()
	listOffsets := kmsg.NewPtrListOffsetsRequest()
	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	deleteRecords := kmsg.NewPtrDeleteRecordsRequest()
	metadata := kmsg.NewPtrMetadataRequest()
	createTopics := kmsg.NewPtrCreateTopicsRequest()
	deleteTopics := kmsg.NewPtrDeleteTopicsRequest()
	createPartitions := kmsg.NewPtrCreatePartitionsRequest()
	describeConfigs := kmsg.NewPtrDescribeConfigsRequest()
	alterConfigs := kmsg.NewPtrAlterConfigsRequest()
	incremental := kmsg.NewPtrIncrementalAlterConfigsRequest()
	elect := kmsg.NewPtrElectLeadersRequest()
	producers := kmsg.NewPtrDescribeProducersRequest()
	logDirs, logDir := kmsg.NewPtrAlterReplicaLogDirsRequest(), kmsg.NewAlterReplicaLogDirsRequestDir()
	logDir.Dir = "/data"
	for _, topic := range []string{"a", "b"} {
		pt := kmsg.NewProduceRequestTopic()
		lt := kmsg.NewListOffsetsRequestTopic()
		ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
		dt := kmsg.NewDeleteRecordsRequestTopic()
		pt.Topic, lt.Topic, ot.Topic, dt.Topic = topic, topic, topic, topic
		for p := range int32(2) {
			pp := kmsg.NewProduceRequestTopicPartition()
			pp.Partition = p
			pt.Partitions = append(pt.Partitions, pp)
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition = p
			lt.Partitions = append(lt.Partitions, lp)
			op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			op.Partition = p
			ot.Partitions = append(ot.Partitions, op)
			dp := kmsg.NewDeleteRecordsRequestTopicPartition()
			dp.Partition = p
			dt.Partitions = append(dt.Partitions, dp)
		}
		produce.Topics = append(produce.Topics, pt)
		listOffsets.Topics = append(listOffsets.Topics, lt)
		ofle.Topics = append(ofle.Topics, ot)
		deleteRecords.Topics = append(deleteRecords.Topics, dt)
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = name(topic)
		metadata.Topics = append(metadata.Topics, mt)
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic = topic
		createTopics.Topics = append(createTopics.Topics, ct)
		deleteTopics.TopicNames = append(deleteTopics.TopicNames, topic)
		xt := kmsg.NewDeleteTopicsRequestTopic()
		xt.Topic = name(topic)
		deleteTopics.Topics = append(deleteTopics.Topics, xt)
		cp := kmsg.NewCreatePartitionsRequestTopic()
		cp.Topic = topic
		createPartitions.Topics = append(createPartitions.Topics, cp)
		dr := kmsg.NewDescribeConfigsRequestResource()
		dr.ResourceType, dr.ResourceName = resourceTopic, topic
		describeConfigs.Resources = append(describeConfigs.Resources, dr)
		ar := kmsg.NewAlterConfigsRequestResource()
		ar.ResourceType, ar.ResourceName = resourceTopic, topic
		alterConfigs.Resources = append(alterConfigs.Resources, ar)
		ir := kmsg.NewIncrementalAlterConfigsRequestResource()
		ir.ResourceType, ir.ResourceName = resourceTopic, topic
		incremental.Resources = append(incremental.Resources, ir)
		et := kmsg.NewElectLeadersRequestTopic()
		et.Topic, et.Partitions = topic, []int32{0, 1}
		elect.Topics = append(elect.Topics, et)
		dp := kmsg.NewDescribeProducersRequestTopic()
		dp.Topic, dp.Partitions = topic, []int32{0, 1}
		producers.Topics = append(producers.Topics, dp)
		rt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		rt.Topic, rt.Partitions = topic, []int32{0, 1}
		logDir.Topics = append(logDir.Topics, rt)
	}
	logDirs.Dirs = append(logDirs.Dirs, logDir)
	return []kmsg.Request{produce, kmsg.NewPtrFetchRequest(), listOffsets, ofle, deleteRecords, metadata, createTopics,
		deleteTopics, createPartitions, describeConfigs, alterConfigs, incremental,
		kmsg.NewPtrInitProducerIDRequest(), kmsg.NewPtrDescribeClusterRequest(), kmsg.NewPtrDescribeLogDirsRequest(), elect, producers, logDirs}
}

// TestErrorResponses: every item of a request answered in error carries
// the code, and nothing else in the response is an error.
func TestErrorResponses(t *testing.T) {
	code := kerr.UnsupportedVersion.Code
	for _, req := range errorRequests() {
		api, ok := coreAPIs[req.Key()]
		if !ok {
			t.Fatalf("%s is not served", kmsg.NameForKey(req.Key()))
		}
		resp := errorResponse(api, req, code)
		if resp.Key() != req.Key() {
			t.Fatalf("%s answered with a %s", kmsg.NameForKey(req.Key()), kmsg.NameForKey(resp.Key()))
		}
		codes := kmsgtest.ErrorCodes(resp)
		want := 1 // top-level ErrorCode
		switch req.Key() {
		case kmsg.Produce.Int16(), kmsg.ListOffsets.Int16(), kmsg.OffsetForLeaderEpoch.Int16(), kmsg.DeleteRecords.Int16(),
			kmsg.ElectLeaders.Int16(), kmsg.DescribeProducers.Int16(), kmsg.AlterReplicaLogDirs.Int16():
			want = 4 // two topics of two partitions
		case kmsg.Metadata.Int16(), kmsg.CreateTopics.Int16(), kmsg.CreatePartitions.Int16(),
			kmsg.DescribeConfigs.Int16(), kmsg.AlterConfigs.Int16(), kmsg.IncrementalAlterConfigs.Int16():
			want = 2
		case kmsg.DeleteTopics.Int16():
			want = 4 // by name and by id
		}
		got := 0
		for _, c := range codes {
			if c == code {
				got++
			} else if c != 0 {
				t.Errorf("%s: an error slot holds %d", kmsg.NameForKey(req.Key()), c)
			}
		}
		if got != want {
			t.Errorf("%s: %d slots hold the code, want %d", kmsg.NameForKey(req.Key()), got, want)
		}
	}
}

// TestEachAPIHasItsFile: every core API key has its NN_name.go file, and
// README.md lists it.
func TestEachAPIHasItsFile(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for key := range coreAPIs {
		files, _ := filepath.Glob(fmt.Sprintf("%02d_*.go", key))
		files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
		if len(files) != 1 {
			t.Errorf("%s (key %d): files %v, want one %02d_name.go", kmsg.NameForKey(key), key, files, key)
			continue
		}
		if !strings.Contains(string(readme), "`"+files[0]+"`") {
			t.Errorf("README.md does not list %s", files[0])
		}
	}
}
