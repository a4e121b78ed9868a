package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The consumer groups' offsets and lag, and the partitions' offsets and
// sizes, computed at scrape time from what the broker's group coordinator
// and partition leaders know.

// CommittedOffset is one group's committed offset of one partition.
type CommittedOffset struct {
	Group     string
	Topic     string
	Partition int32
	Offset    int64
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PartitionStats is what a partition led here reports at a scrape.
type PartitionStats struct {
	HighWatermark  int64
	LogStartOffset int64
	SizeBytes      int64
}

const lagDescHelp = "Records a consumer group has not committed yet on a partition: the partition's high watermark minus the group's committed offset. Exported by the broker coordinating the group, for the partitions it also leads."

var (
	committedOffsetDesc = prometheus.NewDesc(namespace+"_consumer_group_committed_offset",
		"Committed offset of a consumer group on a partition, exported by the broker coordinating the group.",
		[]string{"group", "topic", "partition"}, nil)
	lagDesc = prometheus.NewDesc(namespace+"_consumer_group_lag", lagDescHelp,
		[]string{"group", "topic", "partition"}, nil)
	highWatermarkDesc = prometheus.NewDesc(namespace+"_partition_high_watermark",
		"High watermark (one past the last record consumers can read) of a partition this broker leads.",
		[]string{"topic", "partition"}, nil)
	logStartOffsetDesc = prometheus.NewDesc(namespace+"_partition_log_start_offset",
		"First offset kept in the log of a partition this broker leads (retention and DeleteRecords raise it).",
		[]string{"topic", "partition"}, nil)
	logSizeDesc = prometheus.NewDesc(namespace+"_partition_log_size_bytes",
		"Bytes of the log (every segment) of a partition this broker leads.",
		[]string{"topic", "partition"}, nil)
)

// lagCollector exports v's committed offsets, the offsets and sizes of the
// partitions led here and the lag between the two where both are known.
type lagCollector struct {
	committed  func() []CommittedOffset
	partitions func() map[TopicPartition]PartitionStats
}

func (lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- committedOffsetDesc
	ch <- lagDesc
	ch <- highWatermarkDesc
	ch <- logStartOffsetDesc
	ch <- logSizeDesc
}

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	var parts map[TopicPartition]PartitionStats
	if c.partitions != nil {
		parts = c.partitions()
	}
	for tp, st := range parts {
		p := strconv.Itoa(int(tp.Partition))
		ch <- prometheus.MustNewConstMetric(highWatermarkDesc, prometheus.GaugeValue, float64(st.HighWatermark), tp.Topic, p)
		ch <- prometheus.MustNewConstMetric(logStartOffsetDesc, prometheus.GaugeValue, float64(st.LogStartOffset), tp.Topic, p)
		ch <- prometheus.MustNewConstMetric(logSizeDesc, prometheus.GaugeValue, float64(st.SizeBytes), tp.Topic, p)
	}
	if c.committed == nil {
		return
	}
	for _, o := range c.committed() {
		if o.Offset < 0 {
			continue // no position committed (-1)
		}
		p := strconv.Itoa(int(o.Partition))
		ch <- prometheus.MustNewConstMetric(committedOffsetDesc, prometheus.GaugeValue, float64(o.Offset), o.Group, o.Topic, p)
		if st, ok := parts[TopicPartition{Topic: o.Topic, Partition: o.Partition}]; ok {
			ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(st.HighWatermark-o.Offset), o.Group, o.Topic, p)
		}
	}
}
