package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

// BenchmarkOffsetCommit measures OffsetCommit on each benchmark target
// (kfake, kaas in memory, kaas on disk) in the same run. One op is one
// commit of a group's offsets for N partitions (kadm's CommitOffsets, as
// admin tools and kcat commit: no member, the group empty), answered
// before the next is sent. On kaas the coordinator saves each commit to
// the group's log on the shared volume before it answers (fsynced on
// disk) and then copies it into __consumer_offsets (a Produce to the
// slot's partition, fsynced on disk, not waited for), so both costs are
// in the figure.
//
//	go test ./cmd/kaas -run '^$' -bench '^BenchmarkOffsetCommit$' -benchtime 2000x
func BenchmarkOffsetCommit(b *testing.B) {
	const topic = "bench-commits"
	for _, partitions := range []int32{1, 100} {
		for _, target := range benchTargets {
			b.Run(fmt.Sprintf("%d-partitions/%s", partitions, target), func(b *testing.B) {
				addr := startBenchTarget(b, target, topic, partitions)
				adm := kadm.NewClient(newClient(b, addr))
				ctx := context.Background()
				commit := func(at int64) {
					offs := kadm.Offsets{}
					for p := range partitions {
						offs.Add(kadm.Offset{Topic: topic, Partition: p, At: at, LeaderEpoch: -1})
					}
					r, err := adm.CommitOffsets(ctx, "bench-group", offs)
					if err != nil {
						b.Fatal(err)
					}
					if err := r.Error(); err != nil {
						b.Fatal(err)
					}
				}
				commit(0) // warm up: the coordinator, the group's files
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					commit(int64(i + 1))
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			})
		}
	}
}
