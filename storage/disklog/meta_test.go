package disklog

import (
	"fmt"
	"hash/crc32"
	"math"
	"testing"

	"github.com/kaas-project/kaas/storage"
)

// TestSmallFileEncodings: segment names, claims, numbers and the epoch
// checkpoint are byte for byte the text their formats define (the fmt
// verbs below), which every kaas reads, and each decodes back.
func TestSmallFileEncodings(t *testing.T) {
	crcLine := func(body string) string {
		return body + fmt.Sprintf("crc %08x\n", crc32.Checksum([]byte(body), castagnoli))
	}
	for _, n := range []int64{0, 1, 9, 10, 255, 1 << 31, math.MaxInt64, -1, -123456} {
		if got, want := string(encodeNumber(n)), crcLine(fmt.Sprintf("0\n%d\n", n)); got != want {
			t.Errorf("encodeNumber(%d) = %q, want %q", n, got, want)
		}
		if got, st := parseNumber(encodeNumber(n)); st != numberValid || got != n {
			t.Errorf("parseNumber(encodeNumber(%d)) = %d, %v", n, got, st)
		}
	}
	for _, e := range []int32{0, 1, 7, 1 << 20, math.MaxInt32, -1, math.MinInt32} {
		if got, want := string(encodeClaim(e)), crcLine(fmt.Sprintf("0\n%011d\n", e)); got != want {
			t.Errorf("encodeClaim(%d) = %q, want %q", e, got, want)
		}
		for _, base := range []int64{0, 1, 12345, math.MaxInt64} {
			got, want := segName(e, base), fmt.Sprintf("%08x-%020d", uint32(e), base)
			if got != want {
				t.Errorf("segName(%d, %d) = %q, want %q", e, base, got, want)
			}
			if pe, pb, ok := parseSegName(got); !ok || pe != e || pb != base {
				t.Errorf("parseSegName(%q) = %d, %d, %v", got, pe, pb, ok)
			}
		}
	}
	for _, tc := range []struct {
		eps    []storage.EpochEntry
		sealed int64
	}{{nil, 0}, {[]storage.EpochEntry{{Epoch: 1, StartOffset: 0}}, 0}, {[]storage.EpochEntry{{Epoch: 1, StartOffset: 0}, {Epoch: 7, StartOffset: 1 << 40}}, 99}} {
		want := fmt.Sprintf("0\n%d\n", len(tc.eps))
		for _, e := range tc.eps {
			want += fmt.Sprintf("%d %d\n", e.Epoch, e.StartOffset)
		}
		if tc.sealed > 0 {
			want += fmt.Sprintf("sealed %d\n", tc.sealed)
		}
		want = crcLine(want)
		if got := string(encodeEpochs(tc.eps, tc.sealed)); got != want {
			t.Errorf("encodeEpochs(%v, %d) = %q, want %q", tc.eps, tc.sealed, got, want)
		}
		eps, sealed, err := decodeEpochs([]byte(want))
		if err != nil || sealed != tc.sealed || len(eps) != len(tc.eps) {
			t.Errorf("decodeEpochs(%q) = %v, %d, %v", want, eps, sealed, err)
		}
	}
}
