package partition

import (
	"testing"
	"time"

	"github.com/kaas-project/kaas/actors/metrics/metricstest"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/memlog"
)

func gathered(t *testing.T, name string, labels ...string) (value, sum float64) {
	t.Helper()
	return metricstest.Value(t, name, labels...)
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
