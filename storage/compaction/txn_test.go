package compaction

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kaas-project/kaas/storage/batch"
)

// txnData builds a transactional data batch of producer pid.
func txnData(base, pid, ts int64, recs ...kv) []byte {
	b, _ := mk(base, pid, ts, recs...)
	setAttr(b, batch.AttrTransactional)
	return b
}

// marker builds a commit or abort marker of producer pid at off.
func marker(off, pid, ts int64, commit bool) []byte {
	b := batch.Marker(pid, 0, commit, 0, ts)
	batch.SetBaseOffset(b, off)
	return b
}

// plain builds a batch of records at base (producer pid, -1: none).
func plain(base, pid, ts int64, recs ...kv) []byte {
	b, _ := mk(base, pid, ts, recs...)
	return b
}

// TestPassTransactions: records of aborted transactions are removed and
// their markers kept; a commit marker goes once no data of its transaction
// is left and it is older than delete.retention.ms, unless it is its
// producer's last batch or a segment's; committed and undecided
// transactional data stay whole.
func TestPassTransactions(t *testing.T) {
	const now, old = 1_000_000, 1_000_000 - 5000
	const pid = 4
	// Each step is what becomes of one batch: "gone", "same", "empty" or
	// its records.
	cases := []struct {
		name string
		log  [][]byte
		want []string
	}{
		{"aborted data removed, its marker kept while the data was there",
			[][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, pid, now, rec("c", "1"))},
			[]string{"gone", "same", "same", "same"}},
		{"abort marker without data left kept (the aborted index still names it)",
			[][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, pid, now, rec("c", "1"))},
			[]string{"same", "same", "same"}},
		{"young abort marker kept",
			[][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, now, false), plain(3, pid, now, rec("c", "1"))},
			[]string{"same", "same", "same"}},
		{"commit marker after its data kept with it",
			[][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, true), plain(2, pid, now, rec("c", "1"))},
			[]string{"same", "same", "same"}},
		{"commit marker without data left removed once old",
			[][]byte{marker(1, pid, old, true), plain(2, pid, now, rec("c", "1"))},
			[]string{"gone", "same"}},
		{"commit marker kept as its producer's last batch",
			[][]byte{plain(0, -1, now, rec("a", "1")), marker(1, pid, old, true), plain(2, -1, now, rec("c", "1"))},
			[]string{"same", "same", "same"}},
		{"commit marker kept at a segment's end",
			[][]byte{plain(0, pid, now, rec("a", "1")), marker(1, pid, old, true)},
			[]string{"same", "same"}},
		{"aborted data does not protect a later tombstone",
			[][]byte{txnData(0, pid, now, rec("z", "1")), marker(1, pid, old, false), plain(2, -1, old, tomb("z"), rec("y", "1")), plain(3, pid, now, rec("c", "1"))},
			[]string{"gone", "same", "3:y=1", "same"}},
		{"committed data protects a later tombstone",
			[][]byte{txnData(0, pid, now, rec("z", "1")), marker(1, pid, old, true), plain(2, -1, old, tomb("z"), rec("y", "1")), plain(3, pid, now, rec("c", "1"))},
			[]string{"same", "same", "same", "same"}},
		{"undecided transaction kept whole",
			[][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, now, rec("b", "1"))},
			[]string{"same", "same"}},
		{"marker beyond the pass leaves its transaction undecided",
			[][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, now, rec("b", "1")), marker(12, pid, old, false)},
			[]string{"same", "same", "same"}},
		{"an aborted transaction over several batches",
			[][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, now, rec("b", "1")), txnData(2, pid, now, rec("a", "2"), rec("d", "2")),
				marker(4, pid, old, false), txnData(5, pid, now, rec("a", "3")), marker(6, pid, old, true), plain(7, -1, now, rec("e", "1"))},
			[]string{"gone", "same", "gone", "same", "same", "same", "same"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &Pass{Map: NewKeyMap(1 << 20), MapEnd: 10, Horizon: now - 1000}
			for _, b := range c.log {
				h, _ := batch.Validate(b)
				if h.BaseOffset >= p.MapEnd {
					break
				}
				if ok, err := p.Scan(b, h, 0); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			for i, b := range c.log {
				h, _ := batch.Validate(b)
				out, err := p.Batch(b, h, i == len(c.log)-1)
				if err != nil {
					t.Fatal(err)
				}
				got := "same"
				switch {
				case out == nil:
					got = "gone"
				case len(out) != len(b) || &out[0] != &b[0]:
					got = fmt.Sprint(contents(t, out))
					got = got[1 : len(got)-1]
					if got == "" {
						got = "empty"
					}
				}
				if got != c.want[i] {
					t.Fatalf("batch %d at %d: %s, want %s", i, h.BaseOffset, got, c.want[i])
				}
			}
		})
	}
}

// TestPassPropertyAbortedTxns: random histories of plain records,
// tombstones and transactions that abort, over random segments, cleaned
// in passes with a small key map: the log reads as every key's latest value
// outside the aborted transactions, no aborted record is left, and every
// transactional batch left is followed by its producer's abort marker (a
// read_committed reader and a rebuilt transaction index still see each
// transaction end).
func TestPassPropertyAbortedTxns(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		const now = 1_000_000
		nkeys := 1 + r.IntN(15)
		var log [][]byte
		latest := map[string]string{}
		off := int64(0)
		open := map[int64]bool{} // transactional producers 10, 11
		// Each transaction's batches and its marker: txnOf maps a data
		// batch's base offset to the offset of its transaction's marker.
		txnOf, batchesOf := map[int64]int64{}, map[int64][]int64{}
		endTxn := func(pid int64) {
			for _, b := range batchesOf[pid] {
				txnOf[b] = off
			}
			batchesOf[pid] = nil
			open[pid] = false
		}
		for i, n := 0, 1+r.IntN(40); i < n; i++ {
			ts := int64(now - r.IntN(3000))
			if r.IntN(3) == 0 {
				pid := int64(10 + r.IntN(2))
				if open[pid] && r.IntN(2) == 0 {
					endTxn(pid)
					log = append(log, marker(off, pid, ts, false))
					off++
					continue
				}
				var recs []kv
				for j, m := 0, 1+r.IntN(3); j < m; j++ {
					recs = append(recs, rec(fmt.Sprintf("k%d", r.IntN(nkeys)), fmt.Sprintf("aborted%d", off+int64(j))))
				}
				log = append(log, txnData(off, pid, ts, recs...))
				batchesOf[pid] = append(batchesOf[pid], off)
				off += int64(len(recs))
				open[pid] = true
				continue
			}
			var recs []kv
			for j, m := 0, 1+r.IntN(4); j < m; j++ {
				k := fmt.Sprintf("k%d", r.IntN(nkeys))
				if r.IntN(5) == 0 {
					recs = append(recs, tomb(k))
					latest[k] = ""
				} else {
					v := fmt.Sprintf("v%d", off+int64(j))
					recs = append(recs, rec(k, v))
					latest[k] = v
				}
			}
			log = append(log, plain(off, int64(r.IntN(2))-1, ts, recs...))
			off += int64(len(recs))
		}
		// Every transaction ends aborted.
		for pid := int64(10); pid <= 11; pid++ {
			if open[pid] {
				endTxn(pid)
				log = append(log, marker(off, pid, now-3000, false))
				off++
			}
		}
		end := off
		segEnd := map[int]bool{len(log) - 1: true}
		for i := range log {
			if r.IntN(4) == 0 {
				segEnd[i] = true
			}
		}
		firstDirty := int64(0)
		mapBytes := int64(1+r.IntN(8)) * 5 * EntryBytes
		// Passes until the log is clean, then one more over all of it (it
		// sees the markers whose data the earlier passes removed).
		for final := false; ; {
			p := &Pass{Map: NewKeyMap(mapBytes), MapEnd: end, Horizon: now - 1000}
			for _, b := range log {
				h, _ := batch.ParseHeader(b)
				if h.BaseOffset >= p.MapEnd {
					break
				}
				ok, err := p.Scan(b, h, firstDirty)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					break
				}
			}
			var out [][]byte
			ends := map[int]bool{}
			for i, b := range log {
				h, _ := batch.ParseHeader(b)
				nb, err := p.Batch(b, h, segEnd[i])
				if err != nil {
					t.Fatal(err)
				}
				if nb == nil {
					continue
				}
				if segEnd[i] {
					ends[len(out)] = true
				}
				out = append(out, nb)
			}
			log, segEnd, firstDirty = out, ends, p.MapEnd
			if final {
				break
			}
			if firstDirty >= end {
				final, firstDirty = true, 0
			}
		}
		got := map[string]string{}
		markers := map[int64]bool{}
		var txnBatches []int64
		last := int64(-1)
		for _, b := range log {
			h, err := batch.Validate(b)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if h.IsControl() {
				markers[h.BaseOffset] = true
				continue
			}
			if h.IsTransactional() {
				if h.NumRecords != 0 {
					t.Fatalf("seed %d: aborted batch at %d keeps %d records", seed, h.BaseOffset, h.NumRecords)
				}
				txnBatches = append(txnBatches, h.BaseOffset)
				continue
			}
			rs, _ := Records(b, h)
			for _, rr := range rs {
				if rr.Offset <= last {
					t.Fatalf("seed %d: offset %d after %d", seed, rr.Offset, last)
				}
				last = rr.Offset
				if _, dup := got[string(rr.Key)]; dup {
					t.Fatalf("seed %d: key %s appears twice after cleaning", seed, rr.Key)
				}
				got[string(rr.Key)] = string(rr.Value)
			}
		}
		for _, b := range txnBatches {
			if !markers[txnOf[b]] {
				t.Fatalf("seed %d: transactional batch at %d left without its marker at %d", seed, b, txnOf[b])
			}
		}
		for k, v := range latest {
			g, ok := got[k]
			if v != "" && (!ok || g != v) {
				t.Fatalf("seed %d: key %s reads %q (present %v), latest is %q", seed, k, g, ok, v)
			}
			if v == "" && ok && g != "" {
				t.Fatalf("seed %d: tombstoned key %s reads %q", seed, k, g)
			}
		}
	}
}
