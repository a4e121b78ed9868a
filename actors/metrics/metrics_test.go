package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestRegistryGathersEverySeries(t *testing.T) {
	r := NewRegistry(View{
		PartitionsLed: func() int { return 3 }, Topics: func() int { return 2 },
		ControllerEpoch: func() int64 { return 7 }, AssignmentVersion: func() int64 { return 11 },
		DiskFsyncs: func() int64 { return 5 }, Brokers: func() (int, int) { return 2, 1 },
		Volume: func() (int64, int64) { return 1 << 30, 1 << 28 },
	})
	api := ForAPI(0)
	api.Request(0)
	api.Request(kerr.NotLeaderForPartition.Code)
	api.PartitionError(kerr.NotLeaderForPartition.Code)
	api.PartitionError(0)
	api.Duration(0.002)
	ForTopic("unit").Produced(100, 4)
	ForTopic("unit").Fetched(60)
	GroupCommitDuration(0.001)
	GroupCommitReleased(3)
	PartitionPhase("leading").Inc()
	GroupState("Stable").Inc()
	Rebalance()

	if ForAPI(0) != api || ForTopic("unit") != ForTopic("unit") {
		t.Fatal("children are not cached")
	}
	for name, want := range map[string]float64{
		`kaas_requests_total{api="Produce",error="NONE"}`:                             1,
		`kaas_requests_total{api="Produce",error="NOT_LEADER_FOR_PARTITION"}`:         1,
		`kaas_partition_errors_total{api="Produce",error="NOT_LEADER_FOR_PARTITION"}`: 1,
		`kaas_produced_records_total{topic="unit"}`:                                   4,
		`kaas_produced_bytes_total{topic="unit"}`:                                     100,
		`kaas_fetched_bytes_total{topic="unit"}`:                                      60,
	} {
		metric, labels, _ := strings.Cut(name, "{")
		var got float64
		switch metric {
		case "kaas_requests_total":
			got = testutil.ToFloat64(requests.WithLabelValues(label(labels, "api"), label(labels, "error")))
		case "kaas_partition_errors_total":
			got = testutil.ToFloat64(partitionErrors.WithLabelValues(label(labels, "api"), label(labels, "error")))
		case "kaas_produced_records_total":
			got = testutil.ToFloat64(producedRecords.WithLabelValues(label(labels, "topic")))
		case "kaas_produced_bytes_total":
			got = testutil.ToFloat64(producedBytes.WithLabelValues(label(labels, "topic")))
		case "kaas_fetched_bytes_total":
			got = testutil.ToFloat64(fetchedBytes.WithLabelValues(label(labels, "topic")))
		}
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n := testutil.CollectAndCount(partitionErrors); n != 1 {
		t.Errorf("partition errors has %d series; a zero code must not make one", n)
	}

	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, mf := range mfs {
		have[mf.GetName()] = true
	}
	for _, name := range []string{"kaas_partitions_led", "kaas_topics", "kaas_controller_epoch", "kaas_assignment_version",
		"kaas_disk_fsyncs_total", "kaas_requests_total", "kaas_request_duration_seconds", "kaas_partition_errors_total",
		"kaas_produced_bytes_total", "kaas_produced_records_total", "kaas_fetched_bytes_total",
		"kaas_group_commit_duration_seconds", "kaas_group_commit_batch_size", "kaas_partitions", "kaas_consumer_groups",
		"kaas_consumer_group_rebalances_total", "go_goroutines", "process_cpu_seconds_total"} {
		if !have[name] {
			t.Errorf("registry does not gather %s", name)
		}
	}
	want := `
# HELP kaas_controller_epoch Controller epoch of the assignment this broker applies.
# TYPE kaas_controller_epoch gauge
kaas_controller_epoch 7
# HELP kaas_disk_fsyncs_total Device flushes (fdatasync or syncfs) issued by the disk log in this process.
# TYPE kaas_disk_fsyncs_total counter
kaas_disk_fsyncs_total 5
`
	want += `
# HELP kaas_brokers Registered brokers of the assignment this broker applies, by state: alive, or fenced (draining or dead).
# TYPE kaas_brokers gauge
kaas_brokers{state="alive"} 2
kaas_brokers{state="fenced"} 1
# HELP kaas_volume_available_bytes Bytes of the file system holding the data directory (the shared volume) that the broker can still write.
# TYPE kaas_volume_available_bytes gauge
kaas_volume_available_bytes 2.68435456e+08
# HELP kaas_volume_capacity_bytes Total bytes of the file system holding the data directory (the shared volume).
# TYPE kaas_volume_capacity_bytes gauge
kaas_volume_capacity_bytes 1.073741824e+09
`
	if err := testutil.GatherAndCompare(r, strings.NewReader(want), "kaas_controller_epoch", "kaas_disk_fsyncs_total", "kaas_brokers",
		"kaas_volume_capacity_bytes", "kaas_volume_available_bytes"); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.GatherAndLint(r); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", err, problems)
	}
	// A second broker in the same process gets its own registry.
	_ = NewRegistry(View{PartitionsLed: func() int { return 0 }, Topics: func() int { return 0 },
		ControllerEpoch: func() int64 { return 0 }, AssignmentVersion: func() int64 { return 0 }, DiskFsyncs: func() int64 { return 0 }})
}

// label reads key="value" out of a label list.
func label(labels, key string) string {
	_, rest, _ := strings.Cut(labels, key+`="`)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

func TestErrorName(t *testing.T) {
	for code, want := range map[int16]string{0: "NONE", kerr.UnknownTopicOrPartition.Code: "UNKNOWN_TOPIC_OR_PARTITION", 32000: "CODE_32000"} {
		if got := ErrorName(code); got != want {
			t.Errorf("ErrorName(%d) = %q, want %q", code, got, want)
		}
	}
}

// TestHotPathDoesNotAllocate: counting a request, a produce and a fetch on
// resolved series allocates nothing.
func TestHotPathDoesNotAllocate(t *testing.T) {
	ForAPI(1)
	topic := ForTopic("alloc")
	if n := testing.AllocsPerRun(100, func() {
		api := ForAPI(1)
		api.Request(0)
		api.PartitionError(0)
		api.Duration(0.001)
		topic.Produced(100, 3)
		topic.Fetched(100)
		GroupCommitDuration(0.001)
		GroupCommitReleased(2)
	}); n != 0 {
		t.Errorf("%v allocations per request", n)
	}
}
