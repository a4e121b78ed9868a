package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The lag collector exports every committed offset, the high watermark,
// log start offset and size of every partition led here, and the lag (high
// watermark minus committed offset) only where both are known; an unset
// commit (-1) exports nothing.
func TestLagCollector(t *testing.T) {
	c := lagCollector{
		committed: func() []CommittedOffset {
			return []CommittedOffset{
				{Group: "g1", Topic: "orders", Partition: 0, Offset: 7},
				{Group: "g1", Topic: "orders", Partition: 1, Offset: 30},   // led elsewhere
				{Group: "g2", Topic: "orders", Partition: 0, Offset: 10},   // caught up
				{Group: "g2", Topic: "payments", Partition: 0, Offset: -1}, // no position
			}
		},
		partitions: func() map[TopicPartition]PartitionStats {
			return map[TopicPartition]PartitionStats{{Topic: "orders", Partition: 0}: {HighWatermark: 10, LogStartOffset: 4, SizeBytes: 2048}}
		},
	}
	want := `
# HELP kaas_consumer_group_committed_offset Committed offset of a consumer group on a partition, exported by the broker coordinating the group.
# TYPE kaas_consumer_group_committed_offset gauge
kaas_consumer_group_committed_offset{group="g1",partition="0",topic="orders"} 7
kaas_consumer_group_committed_offset{group="g1",partition="1",topic="orders"} 30
kaas_consumer_group_committed_offset{group="g2",partition="0",topic="orders"} 10
# HELP kaas_consumer_group_lag ` + lagDescHelp + `
# TYPE kaas_consumer_group_lag gauge
kaas_consumer_group_lag{group="g1",partition="0",topic="orders"} 3
kaas_consumer_group_lag{group="g2",partition="0",topic="orders"} 0
# HELP kaas_partition_high_watermark High watermark (one past the last record consumers can read) of a partition this broker leads.
# TYPE kaas_partition_high_watermark gauge
kaas_partition_high_watermark{partition="0",topic="orders"} 10
# HELP kaas_partition_log_size_bytes Bytes of the log (every segment) of a partition this broker leads.
# TYPE kaas_partition_log_size_bytes gauge
kaas_partition_log_size_bytes{partition="0",topic="orders"} 2048
# HELP kaas_partition_log_start_offset First offset kept in the log of a partition this broker leads (retention and DeleteRecords raise it).
# TYPE kaas_partition_log_start_offset gauge
kaas_partition_log_start_offset{partition="0",topic="orders"} 4
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// A registry without the coordinator's or the partitions' views
	// exports none of them.
	if n := testutil.CollectAndCount(lagCollector{}); n != 0 {
		t.Fatalf("empty collector exported %d series", n)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", err, problems)
	}
}
