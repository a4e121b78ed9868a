package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// setCurrentLeader tells a fetcher who leads a partition it asked the wrong
// broker for (KIP-951), saving it a metadata round trip.
func setCurrentLeader(v *routing.View, topic string, partition int32, rp *kmsg.FetchResponseTopicPartition) {
	t, ok := v.Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return
	}
	p := t.Partitions[partition]
	rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = p.Leader, p.LeaderEpoch
}
