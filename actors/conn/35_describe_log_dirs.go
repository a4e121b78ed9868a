package conn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/diskspace"
)

// DescribeLogDirs (key 35): v1-5. Every broker has one log dir, the shared
// volume (--data-dir, or "memory" when partitions are kept in memory),
// holding the partitions this broker leads, cordoned (v5's IsCordoned) when
// cordoned.log.dirs in force names it or "*" (KIP-1066). Errors go in the
// top-level ErrorCode (v3+; no ErrorResponse).
func init() {
	serve(API{Key: kmsg.DescribeLogDirs.Int16(), MinVersion: 1, MaxVersion: 5, Handle: handleDescribeLogDirs})
}

// handleDescribeLogDirs asks each partition led here (of those requested;
// nil Topics asks for all) for its log size. Offset lag is 0 and nothing is
// a future replica: each partition has one copy.
func handleDescribeLogDirs(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	v := r.View
	var tps []routing.TP
	if req.Topics == nil {
		for tp := range v.Local {
			tps = append(tps, tp)
		}
	} else {
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tp := routing.TP{Topic: t.Topic, Partition: p}
				if _, ok := v.Local[tp]; ok {
					tps = append(tps, tp)
				}
			}
		}
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	results := make([]messages.PartitionStatusResult, len(tps))
	codes := make([]int16, len(tps))
	fan := newFanOut(r)
	for i, tp := range tps {
		fan.send(tp.Topic, tp.Partition, &codes[i], func(done func()) any {
			return &messages.PartitionStatus{MeasureSize: true, Reply: func(res messages.PartitionStatusResult) {
				results[i] = res
				done()
			}}
		})
	}
	dir := LogDir(r.Server.DataDir)
	total, usable := int64(-1), int64(-1)
	if r.Server.DataDir != "" {
		total, usable = diskspace.Of(dir)
	}
	cordoned := cordonedBrokers(r.Server)(v.Self)
	return func() kmsg.Response {
		fan.wait()
		d := kmsg.NewDescribeLogDirsResponseDir()
		d.Dir, d.TotalBytes, d.UsableBytes, d.IsCordoned = dir, total, usable, cordoned
		for i, tp := range tps {
			if codes[i] != 0 || !results[i].Leading {
				continue // moved away meanwhile
			}
			if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.Topic {
				rt := kmsg.NewDescribeLogDirsResponseDirTopic()
				rt.Topic = tp.Topic
				d.Topics = append(d.Topics, rt)
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition, rp.Size = tp.Partition, results[i].Size
			rt := &d.Topics[len(d.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Dirs = append(resp.Dirs, d)
		return resp
	}
}
