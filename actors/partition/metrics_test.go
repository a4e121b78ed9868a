package partition

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/memlog"
)

// gathered reads one series (a histogram's sample count and sum) from a
// registry of the shared series.
func gathered(t *testing.T, name string, labels ...string) (value, sum float64) {
	t.Helper()
	zero := func() int { return 0 }
	zero64 := func() int64 { return 0 }
	r := metrics.NewRegistry(metrics.View{PartitionsLed: zero, Topics: zero, ControllerEpoch: zero64, AssignmentVersion: zero64, DiskFsyncs: zero64})
	mfs, err := r.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				if !hasLabel(m, labels[i], labels[i+1]) {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), 0
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), 0
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), m.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0, 0
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// TestShellRecordsMetrics: the partition shell counts itself leading while
// it leads, the records it appends, and the produces each group commit
// releases; a stopped actor is no longer counted.
func TestShellRecordsMetrics(t *testing.T) {
	leading0, _ := gathered(t, "kaas_partitions", "state", "leading")
	records0, _ := gathered(t, "kaas_produced_records_total", "topic", "t")
	commits0, released0 := gathered(t, "kaas_group_commit_batch_size")
	durations0, _ := gathered(t, "kaas_group_commit_duration_seconds")

	release := make(chan struct{})
	close(release)
	ref := spawn(t, slowOpener{log: &slowLog{Log: memlog.New(storage.LogConfig{}), release: release}}, 5*time.Second)
	if r := within(t, produce(ref, -1, "a", "b", "c"), 5*time.Second, "acks=all produce"); r.ErrorCode != 0 {
		t.Fatalf("produce error %d", r.ErrorCode)
	}
	barrier(t, ref)

	if got, _ := gathered(t, "kaas_partitions", "state", "leading"); got != leading0+1 {
		t.Errorf("kaas_partitions{state=leading} = %v while leading, want %v", got, leading0+1)
	}
	if got, _ := gathered(t, "kaas_produced_records_total", "topic", "t"); got != records0+3 {
		t.Errorf("kaas_produced_records_total{topic=t} = %v, want %v", got, records0+3)
	}
	commits, released := gathered(t, "kaas_group_commit_batch_size")
	if commits <= commits0 || released < released0+1 {
		t.Errorf("group commits %v→%v releasing %v→%v produces; want a commit releasing the produce", commits0, commits, released0, released)
	}
	if got, _ := gathered(t, "kaas_group_commit_duration_seconds"); got <= durations0 {
		t.Errorf("no group commit duration observed")
	}

	if err := ref.PoisonWait(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got, _ := gathered(t, "kaas_partitions", "state", "leading"); got != leading0 {
		t.Errorf("kaas_partitions{state=leading} = %v after the stop, want %v", got, leading0)
	}
}
