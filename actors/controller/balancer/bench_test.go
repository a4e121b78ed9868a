package balancer

import (
	"fmt"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

// benchTopicSizes is the mix of topic sizes the benchmarks use (mean 32).
var benchTopicSizes = []int{1, 3, 6, 12, 24, 32, 50, 64, 96}

// benchCluster returns a stable cluster with about parts partitions over
// brokers alive brokers.
func benchCluster(tb testing.TB, parts, brokers int) *cluster {
	c := newCluster(brokers)
	for i, n := 0, 0; n < parts; i++ {
		size := min(benchTopicSizes[i%len(benchTopicSizes)], parts-n)
		c.addTopic(fmt.Sprintf("topic-%05d", i), size)
		n += size
	}
	if _, _, err := c.step(); err != nil {
		tb.Fatal(err)
	}
	return c
}

func BenchmarkCompute(b *testing.B) {
	for _, parts := range []int{1_000, 10_000, 100_000} {
		for _, brokers := range []int{3, 30, 100} {
			c := benchCluster(b, parts, brokers)
			steady := c.input()
			dies := c.input()
			dies.Brokers[len(dies.Brokers)-1].State = assignment.Dead
			joins := c.input()
			joins.Brokers = append(joins.Brokers, BrokerInfo{Name: bname(brokers), Host: "h", Port: 9092, State: assignment.Alive})
			first := c.input()
			first.Previous = nil
			for _, sc := range []struct {
				name string
				in   Input
			}{{"steady", steady}, {"one-dies", dies}, {"one-joins", joins}, {"first", first}} {
				b.Run(fmt.Sprintf("%s/p=%d/b=%d", sc.name, parts, brokers), func(b *testing.B) {
					b.ReportAllocs()
					var moves Moves
					for b.Loop() {
						var err error
						if _, moves, err = Compute(sc.in); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(len(moves)), "moves")
				})
			}
		}
	}
}
