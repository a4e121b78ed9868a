package groupstore

import (
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

// BenchmarkLoad is one coordinator's load of a group with 100 committed
// offsets: plain (local-dev mode, and cluster mode before claims), and
// claimed (cluster mode: the claim written, the loaded log rewritten).
func BenchmarkLoad(b *testing.B) {
	for _, claims := range []bool{false, true} {
		name := "plain"
		if claims {
			name = "claimed"
		}
		b.Run(name, func(b *testing.B) {
			s, err := NewFile(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			s.Claims = claims
			l, _, err := s.OpenAt("g", assignment.Position{Epoch: 1, Version: 1})
			if err != nil {
				b.Fatal(err)
			}
			var recs []Record
			for p := range int32(100) {
				recs = append(recs, rec("t", p, int64(p)))
			}
			if err := l.Append(recs); err != nil {
				b.Fatal(err)
			}
			_ = l.Close()
			version := int64(1)
			for b.Loop() {
				version++
				l, st, err := s.OpenAt("g", assignment.Position{Epoch: 1, Version: version})
				if err != nil || len(st.Offsets) != 100 {
					b.Fatalf("load: %d offsets, %v", len(st.Offsets), err)
				}
				_ = l.Close()
			}
		})
	}
}
