package sharestate

import (
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

// BenchmarkSaveAt is a leader's save of a share-partition's snapshot with
// 100 records in flight, as the keeper's writer makes it after each change:
// plain (local-dev mode) and claimed (cluster mode: the claim's lock taken,
// the claim and the admin mark read before the write), and the fence alone
// (the lock, the claim's and the mark's reads, without the write: the cost
// claims add to a save, which the fsyncs' spread hides in the other two).
// An admin changed the share-partition before it was claimed, so its mark
// file is there to read.
func BenchmarkSaveAt(b *testing.B) {
	const benchMark = 7
	b.Run("fence", func(b *testing.B) {
		s, err := New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		s.Claims = true
		at := assignment.Position{Epoch: 1, Version: 1}
		if err := s.Set("g", "t", 0, &Snapshot{TopicID: [16]byte{1}}, benchMark); err != nil {
			b.Fatal(err)
		}
		unlock, err := s.Claim("g", "t", 0, at)
		if err != nil {
			b.Fatal(err)
		}
		unlock()
		dir, base := s.files("g", "t", 0)
		for b.Loop() {
			unlock, err := s.lock(dir, base, "t")
			if err != nil {
				b.Fatal(err)
			}
			if err := s.fence("g", "t", 0, at, benchMark); err != nil {
				b.Fatal(err)
			}
			unlock()
		}
	})
	for _, claims := range []bool{false, true} {
		name := "plain"
		if claims {
			name = "claimed"
		}
		b.Run(name, func(b *testing.B) {
			s, err := New(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			s.Claims = claims
			at := assignment.Position{Epoch: 1, Version: 1}
			if err := s.Set("g", "t", 0, &Snapshot{TopicID: [16]byte{1}}, benchMark); err != nil {
				b.Fatal(err)
			}
			unlock, err := s.Claim("g", "t", 0, at)
			if err != nil {
				b.Fatal(err)
			}
			unlock()
			snap := Snapshot{TopicID: [16]byte{1}, Start: 1000, States: make([]uint8, 100), Counts: make([]int16, 100)}
			for b.Loop() {
				snap.Start++
				if err := s.SaveAt("g", "t", 0, at, benchMark, snap); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
