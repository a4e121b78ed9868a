package controller

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/disklog"
)

const (
	liveID = "11111111-1111-4111-8111-111111111111"
	goneID = "22222222-2222-4222-8222-222222222222"
)

func TestStrayPartitions(t *testing.T) {
	p := func(topic, id string, n int32) storage.PartitionID {
		return storage.PartitionID{Topic: topic, TopicID: id, Partition: n}
	}
	for _, tc := range []struct {
		name string
		ids  []storage.PartitionID
		live map[string]bool
		want []storage.PartitionID
	}{
		{"none", nil, map[string]bool{liveID: true}, nil},
		{"all live", []storage.PartitionID{p("t", liveID, 1), p("t", liveID, 0)}, map[string]bool{liveID: true}, nil},
		{"deleted topic, sorted", []storage.PartitionID{p("gone", goneID, 1), p("t", liveID, 0), p("gone", goneID, 0)},
			map[string]bool{liveID: true}, []storage.PartitionID{p("gone", goneID, 0), p("gone", goneID, 1)}},
		{"re-created name, old id", []storage.PartitionID{p("t", goneID, 0), p("t", liveID, 0)},
			map[string]bool{liveID: true}, []storage.PartitionID{p("t", goneID, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StrayPartitions(tc.ids, tc.live); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestControllerRemovesStrayPartitions: with real partition directories on
// the data directory, the controller removes those of a topic it does not
// know once they have been stray for the grace, keeps those of its topics
// and everything that is not a partition directory, and removes nothing
// when it cannot confirm its Lease.
func TestControllerRemovesStrayPartitions(t *testing.T) {
	for _, lease := range []bool{true, false} {
		name := "lease confirmed"
		if !lease {
			name = "lease not confirmed"
		}
		t.Run(name, func(t *testing.T) {
			dir := dataDir(t)
			o, err := disklog.NewOpener(dir, zerolog.Nop(), disklog.SpareDelay(-1))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = o.Close() })
			ids := []storage.PartitionID{{Topic: "t", TopicID: liveID}, {Topic: "gone", TopicID: goneID}, {Topic: "gone", TopicID: goneID, Partition: 1}}
			for _, id := range ids {
				l, err := o.Open(id, storage.LogConfig{})
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(dir, "__groups"), 0o755); err != nil {
				t.Fatal(err)
			}
			sys := actorsys.NewSystem()
			t.Cleanup(sys.Shutdown)
			fake := clock.NewFake(time.Unix(1_700_000_000, 0))
			var refused atomic.Int32
			ref, err := sys.Spawn("controller", New(Config{
				Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
				Epoch: 1, DataDir: dir, DeadAfter: time.Second, Tick: 20 * time.Millisecond, Hub: NewHub(), Log: zerolog.Nop(), Clock: fake,
				VerifyLease: func(context.Context) error {
					// The first write goes through either way (the sweep runs
					// only after one); every check after it fails without the
					// Lease.
					if _, err := os.Stat(assignment.Path(dir)); err != nil || lease {
						return nil
					}
					refused.Add(1)
					return errors.New("lease held by another")
				},
				StrayGrace: 200 * time.Millisecond, ListPartitions: o.Partitions, RemovePartition: o.Remove,
			}, nil))
			if err != nil {
				t.Fatal(err)
			}
			ref.Send(&TopicsChanged{Topics: map[string]balancer.TopicSpec{"t": {ID: liveID, Partitions: 1, Config: map[string]string{}}}})
			exists := func(id storage.PartitionID) bool {
				_, err := os.Stat(o.PartitionDir(id))
				return err == nil
			}
			tick := func() { fake.Advance(20 * time.Millisecond) }
			if lease {
				eventually(t, "the deleted topic's partition directories removed", 10*time.Second, tick, func() bool {
					return !exists(ids[1]) && !exists(ids[2])
				})
			} else {
				// Every removal is attempted (the grace has passed) and
				// refused at its Lease check.
				eventually(t, "three removals refused for want of the Lease", 10*time.Second, tick, func() bool {
					return refused.Load() >= 3
				})
				if !exists(ids[1]) || !exists(ids[2]) {
					t.Fatal("stray directories removed without a confirmed Lease")
				}
			}
			if !exists(ids[0]) {
				t.Fatal("the live topic's partition directory was removed")
			}
			if _, err := os.Stat(filepath.Join(dir, "__groups")); err != nil {
				t.Fatalf("a directory that is no partition's was touched: %v", err)
			}
		})
	}
}
