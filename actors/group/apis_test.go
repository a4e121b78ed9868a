package group

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/internal/kmsgtest"
	"github.com/kaas-project/kaas/messages"
)

// groupVersions are the group APIs and the versions served.
var groupVersions = map[int16][2]int16{
	kmsg.OffsetCommit.Int16():            {2, 10},
	kmsg.OffsetFetch.Int16():             {1, 10},
	kmsg.FindCoordinator.Int16():         {0, 6},
	kmsg.JoinGroup.Int16():               {0, 9},
	kmsg.Heartbeat.Int16():               {0, 4},
	kmsg.LeaveGroup.Int16():              {0, 5},
	kmsg.SyncGroup.Int16():               {0, 5},
	kmsg.DescribeGroups.Int16():          {0, 6},
	kmsg.ListGroups.Int16():              {0, 5},
	kmsg.DeleteGroups.Int16():            {0, 3},
	kmsg.OffsetDelete.Int16():            {0, 0},
	kmsg.ConsumerGroupHeartbeat.Int16():  {0, 1},
	kmsg.ConsumerGroupDescribe.Int16():   {0, 1},
	kmsg.TxnOffsetCommit.Int16():         {0, 6},
	kmsg.ShareGroupHeartbeat.Int16():     {0, 1},
	kmsg.ShareGroupDescribe.Int16():      {0, 1},
	kmsg.AlterShareGroupOffsets.Int16():  {0, 0},
	kmsg.DeleteShareGroupOffsets.Int16(): {0, 0},
	kmsg.StreamsGroupHeartbeat.Int16():   {0, 0},
	kmsg.StreamsGroupDescribe.Int16():    {0, 0},
}

// TestGroupAPITable pins the versions of the group APIs. None sets an
// ErrorResponse: an unsupported version or a handler panic is answered with
// the top-level ErrorCode (conn's default).
func TestGroupAPITable(t *testing.T) {
	apis := (&Coordinator{}).APIs()
	if len(apis) != len(groupVersions) {
		t.Fatalf("%d group APIs, want %d", len(apis), len(groupVersions))
	}
	seen := map[int16]bool{}
	for _, a := range apis {
		want, ok := groupVersions[a.Key]
		if !ok || seen[a.Key] || a.MinVersion != want[0] || a.MaxVersion != want[1] || a.Handle == nil ||
			a.ErrorResponse != nil || a.AdvertiseV0 {
			t.Errorf("%s: served %d-%d, want %d-%d once, with a handler and conn's error response",
				kmsg.NameForKey(a.Key), a.MinVersion, a.MaxVersion, want[0], want[1])
		}
		seen[a.Key] = true
	}
}

// groupOp is an op a group actor serves, at version v, and how many error
// slots its error reply has.
type groupOp struct {
	key   int16
	op    func(v int16) any
	slots int
}

func groupOps() []groupOp {
	commit := func(v int16) any {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID = v, "g", "m"
		for _, topic := range []string{"a", "b"} {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic, rt.TopicID = topic, topicID(topic)
			for p := range int32(2) {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset = p, 7
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		return req
	}
	return []groupOp{
		{kmsg.OffsetCommit.Int16(), commit, 4},
		{kmsg.OffsetFetch.Int16(), func(v int16) any {
			return &messages.GroupFetchOffsets{Version: v, MemberEpoch: -1}
		}, 1},
		{kmsg.JoinGroup.Int16(), func(v int16) any {
			req := joinReq("m", "x")
			req.Version = v
			return req
		}, 1},
		{kmsg.Heartbeat.Int16(), func(v int16) any {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.Generation = v, "g", "m", 3
			return req
		}, 1},
		{kmsg.LeaveGroup.Int16(), func(v int16) any {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Version, req.Group, req.MemberID = v, "g", "m"
			m := kmsg.NewLeaveGroupRequestMember()
			m.MemberID = "m"
			req.Members = append(req.Members, m)
			return req
		}, 1},
		{kmsg.SyncGroup.Int16(), func(v int16) any {
			req := syncReq("m", 3, map[string]string{"m": "a"})
			req.Version = v
			return req
		}, 1},
		{kmsg.DescribeGroups.Int16(), func(v int16) any { return &messages.GroupDescribe{Version: v} }, 1},
		{kmsg.DeleteGroups.Int16(), func(int16) any { return &messages.GroupDelete{} }, 1},
		{kmsg.OffsetDelete.Int16(), func(v int16) any {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Version, req.Group = v, "g"
			rt := kmsg.NewOffsetDeleteRequestTopic()
			rt.Topic = "a"
			rp := kmsg.NewOffsetDeleteRequestTopicPartition()
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		}, 1},
		{kmsg.ConsumerGroupHeartbeat.Int16(), func(v int16) any {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.MemberEpoch = v, "g", "m", 2
			return req
		}, 1},
		{kmsg.ConsumerGroupDescribe.Int16(), func(int16) any { return &messages.GroupDescribeConsumer{} }, 1},
		{kmsg.ShareGroupHeartbeat.Int16(), func(v int16) any {
			req := kmsg.NewPtrShareGroupHeartbeatRequest()
			req.Version, req.GroupID, req.MemberID, req.MemberEpoch = v, "g", "m", 2
			return req
		}, 1},
		{kmsg.ShareGroupDescribe.Int16(), func(int16) any { return &messages.GroupDescribeShare{} }, 1},
		{kmsg.StreamsGroupHeartbeat.Int16(), func(v int16) any {
			req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			req.Version, req.Group, req.MemberID, req.MemberEpoch = v, "g", "m", 2
			return req
		}, 1},
		{kmsg.StreamsGroupDescribe.Int16(), func(int16) any { return &messages.GroupDescribeStreams{} }, 1},
		{kmsg.TxnOffsetCommit.Int16(), func(v int16) any {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version, req.Group, req.MemberID = v, "g", "m"
			for _, topic := range []string{"a", "b"} {
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic = topic
				for p := range int32(2) {
					rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
					rp.Partition, rp.Offset = p, 7
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			return req
		}, 4},
	}
}

// TestGroupErrorReplies: the answer to an op no group actor serves carries
// the code in each of its error slots, at every version served, and names
// what the client needs to match it (group, member, topics, partitions).
func TestGroupErrorReplies(t *testing.T) {
	code := kerr.NotCoordinator.Code
	for _, o := range groupOps() {
		name := kmsg.NameForKey(o.key)
		r := groupVersions[o.key]
		for v := r[0]; v <= r[1]; v++ {
			got := errorReply("g", o.op(v), code)
			if sr, ok := got.(StreamsReply); ok {
				if sr.Create != nil {
					t.Errorf("%s v%d: an error reply creates topics", name, v)
				}
				got = sr.Response
			}
			if got == nil {
				t.Fatalf("%s v%d: no error reply", name, v)
			}
			codes := kmsgtest.ErrorCodes(got)
			n := 0
			for _, c := range codes {
				if c == code {
					n++
				} else if c != 0 {
					t.Errorf("%s v%d: an error slot holds %d", name, v, c)
				}
			}
			if n != o.slots {
				t.Errorf("%s v%d: %d slots hold the code, want %d", name, v, n, o.slots)
			}
			switch x := got.(type) {
			case *kmsg.OffsetCommitResponse:
				if x.Version != v || len(x.Topics) != 2 || x.Topics[1].Topic != "b" || x.Topics[1].TopicID != topicID("b") ||
					x.Topics[1].Partitions[1].Partition != 1 {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case *kmsg.TxnOffsetCommitResponse:
				if x.Version != v || len(x.Topics) != 2 || x.Topics[1].Topic != "b" || x.Topics[1].Partitions[1].Partition != 1 {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case *kmsg.JoinGroupResponse:
				if x.MemberID != "m" || x.Generation != -1 {
					t.Errorf("%s v%d: member %q generation %d", name, v, x.MemberID, x.Generation)
				}
			case *kmsg.ConsumerGroupHeartbeatResponse:
				if x.ErrorMessage != nil {
					t.Errorf("%s v%d: message %q", name, v, *x.ErrorMessage)
				}
			case *kmsg.ShareGroupHeartbeatResponse:
				if x.ErrorMessage != nil || x.MemberID != nil {
					t.Errorf("%s v%d: message %v member %v", name, v, x.ErrorMessage, x.MemberID)
				}
			case kmsg.OffsetFetchResponseGroup:
				if x.Group != "g" || x.Topics != nil {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case kmsg.DescribeGroupsResponseGroup:
				if x.Group != "g" || x.Members != nil {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case kmsg.DeleteGroupsResponseGroup:
				if x.Group != "g" {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case kmsg.ShareGroupDescribeResponseGroup:
				if x.GroupID != "g" || x.Members != nil {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case kmsg.ConsumerGroupDescribeResponseGroup:
				if x.Group != "g" || x.Members != nil {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case *kmsg.StreamsGroupHeartbeatResponse:
				if x.ErrorMessage != nil || x.MemberID != "" {
					t.Errorf("%s v%d: message %v member %q", name, v, x.ErrorMessage, x.MemberID)
				}
			case kmsg.StreamsGroupDescribeResponseGroup:
				if x.Group != "g" || x.Members != nil {
					t.Errorf("%s v%d: %+v", name, v, x)
				}
			case *kmsg.HeartbeatResponse, *kmsg.LeaveGroupResponse, *kmsg.SyncGroupResponse, *kmsg.OffsetDeleteResponse:
			default:
				t.Errorf("%s v%d: answered with a %T", name, v, got)
			}
		}
	}
	if errorReply("g", "not an op", code) != nil {
		t.Error("an unknown op has an error reply")
	}
}

// TestEachGroupAPIHasItsFile: every group API key has its NN_name.go file,
// and actors/conn/README.md's key table lists it.
func TestEachGroupAPIHasItsFile(t *testing.T) {
	readme, err := os.ReadFile("../conn/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for key := range groupAPIs {
		files, _ := filepath.Glob(fmt.Sprintf("%02d_*.go", key))
		files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
		if len(files) != 1 {
			t.Errorf("%s (key %d): files %v, want one %02d_name.go", kmsg.NameForKey(key), key, files, key)
			continue
		}
		if !strings.Contains(string(readme), "`actors/group/"+files[0]+"`") {
			t.Errorf("actors/conn/README.md does not list actors/group/%s", files[0])
		}
	}
}
