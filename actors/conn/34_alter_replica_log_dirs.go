package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// AlterReplicaLogDirs (key 34): v1-2. A broker has one log dir (the one
// DescribeLogDirs reports), so a replica this broker holds is already in
// any dir it can be moved to: naming that dir succeeds and moves nothing;
// another dir is LOG_DIR_NOT_FOUND, as Kafka answers a dir it is not
// configured with. A partition this broker does not lead is
// NOT_LEADER_OR_FOLLOWER, an unknown one UNKNOWN_TOPIC_OR_PARTITION.
func init() {
	serve(API{Key: kmsg.AlterReplicaLogDirs.Int16(), MinVersion: 1, MaxVersion: 2, Handle: handleAlterReplicaLogDirs, ErrorResponse: alterReplicaLogDirsError})
}

func handleAlterReplicaLogDirs(r *Request) Pending {
	req := r.Body.(*kmsg.AlterReplicaLogDirsRequest)
	v := r.View
	dir := LogDir(r.Server.DataDir)
	return Ready(answerReplicaLogDirs(req, func(d, topic string, p int32) int16 {
		tp := routing.TP{Topic: topic, Partition: p}
		t, exists := v.AnyTopic(topic)
		switch {
		case d != dir:
			return kerr.LogDirNotFound.Code
		case !exists || p < 0 || int(p) >= len(t.Partitions):
			return kerr.UnknownTopicOrPartition.Code
		}
		if _, ok := v.Local[tp]; !ok {
			return kerr.NotLeaderForPartition.Code
		}
		return 0
	}))
}

// answerReplicaLogDirs answers every partition of req with code(dir,
// topic, partition), one entry per topic as Kafka groups them.
func answerReplicaLogDirs(req *kmsg.AlterReplicaLogDirsRequest, code func(dir, topic string, p int32) int16) *kmsg.AlterReplicaLogDirsResponse {
	resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
	at := map[string]int{}
	for _, d := range req.Dirs {
		for _, t := range d.Topics {
			i, ok := at[t.Topic]
			if !ok {
				i = len(resp.Topics)
				at[t.Topic] = i
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(d.Dir, t.Topic, p)
				resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
			}
		}
	}
	return resp
}

// alterReplicaLogDirsError answers every partition with code.
func alterReplicaLogDirsError(body kmsg.Request, code int16) kmsg.Response {
	return answerReplicaLogDirs(body.(*kmsg.AlterReplicaLogDirsRequest), func(string, string, int32) int16 { return code })
}
