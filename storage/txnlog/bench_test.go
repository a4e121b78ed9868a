package txnlog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// BenchmarkSave is one transition's save: an append and its fsync, then
// (claimed, cluster mode) the claim read before the write and after the
// fsync. The baseline is the same record appended and fsynced to a plain
// file. "parallel" saves from GOMAXPROCS goroutines, each its own id (its
// own file), as a coordinator persists different ids at once.
func BenchmarkSave(b *testing.B) {
	st := State{ID: "x", ProducerID: 1 << 40, Epoch: 3, TimeoutMs: 60000, Status: Ongoing,
		Partitions: []TP{{Topic: "orders", Partition: 1}, {Topic: "orders", Partition: 4}}, Groups: []string{"etl"}}
	payload, err := json.Marshal(st)
	if err != nil {
		b.Fatal(err)
	}
	frame := groupstore.AppendFrame(nil, payload)
	raw := func(b *testing.B, dir string, i int64) {
		f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("raw-%d", i)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(frame); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		_ = f.Close()
	}
	store := func(b *testing.B, claims bool) *File {
		s, err := NewFile(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		s.Claims = claims
		return s
	}
	save := func(b *testing.B, s *File, id string) {
		st := st
		st.ID = id
		if err := s.Save(st); err != nil {
			b.Fatal(err)
		}
	}
	load := func(b *testing.B, s *File, id string) {
		if _, _, err := s.LoadAt(id, assignment.Position{Epoch: 1, Version: 1}); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"raw", "plain", "claimed"} {
		b.Run("serial/"+mode, func(b *testing.B) {
			if mode == "raw" {
				dir := b.TempDir()
				for b.Loop() {
					raw(b, dir, 0)
				}
				return
			}
			s := store(b, mode == "claimed")
			load(b, s, "x")
			for b.Loop() {
				save(b, s, "x")
			}
		})
		b.Run("parallel/"+mode, func(b *testing.B) {
			var next atomic.Int64
			if mode == "raw" {
				dir := b.TempDir()
				b.RunParallel(func(pb *testing.PB) {
					i := next.Add(1)
					for pb.Next() {
						raw(b, dir, i)
					}
				})
				return
			}
			s := store(b, mode == "claimed")
			b.RunParallel(func(pb *testing.PB) {
				id := fmt.Sprintf("id-%d", next.Add(1))
				load(b, s, id)
				for pb.Next() {
					save(b, s, id)
				}
			})
		})
	}
}
