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

// garbled builds a control batch of producer pid at off whose marker
// cannot be read.
func garbled(off, pid, ts int64) []byte {
	b, _ := mk(off, pid, ts, rec("x", "y"))
	setAttr(b, batch.AttrControl|batch.AttrTransactional)
	if _, err := batch.ControlType(b); err == nil {
		panic("garbled marker reads")
	}
	return b
}

// scanAll runs a pass's first walk over log from firstDirty and closes it.
func scanAll(t *testing.T, p *Pass, log [][]byte, firstDirty int64) error {
	t.Helper()
	for _, b := range log {
		h, _ := batch.Validate(b)
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
	return p.EndScan(firstDirty)
}

// TestPassTransactions: records of aborted transactions are removed and
// their markers kept; records of committed transactions are compacted like
// any others (superseded by a later record of their key, by offset,
// whether in a transaction or not; tombstones removed once old); a commit
// marker goes once no data of its transaction is left and it is older than
// delete.retention.ms, unless it is its producer's last batch or a
// segment's; a pass stops before a transaction it has not seen end.
func TestPassTransactions(t *testing.T) {
	const now, old = 1_000_000, 1_000_000 - 5000
	const pid = 4
	// Each step is what becomes of one batch: "gone", "same", "empty" or
	// its records.
	cases := []struct {
		name       string
		log        [][]byte
		want       []string
		firstDirty int64
		segEnds    []int // batches ending a segment besides the last
		mapEnd     int64 // the pass's end after EndScan (0: 10)
		mapKeys    int64 // the key map's size in entries (0: plenty)
	}{
		{name: "aborted data removed, its marker kept while the data was there",
			log:  [][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, pid, now, rec("c", "1"))},
			want: []string{"gone", "same", "same", "same"}},
		{name: "abort marker without data left kept (the aborted index still names it)",
			log:  [][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, pid, now, rec("c", "1"))},
			want: []string{"same", "same", "same"}},
		{name: "young abort marker kept",
			log:  [][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, now, false), plain(3, pid, now, rec("c", "1"))},
			want: []string{"same", "same", "same"}},
		{name: "commit marker after its data kept with it",
			log:  [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, true), plain(2, pid, now, rec("c", "1"))},
			want: []string{"same", "same", "same"}},
		{name: "commit marker without data left removed once old",
			log:  [][]byte{marker(1, pid, old, true), plain(2, pid, now, rec("c", "1"))},
			want: []string{"gone", "same"}},
		{name: "commit marker kept as its producer's last batch",
			log:  [][]byte{plain(0, -1, now, rec("a", "1")), marker(1, pid, old, true), plain(2, -1, now, rec("c", "1"))},
			want: []string{"same", "same", "same"}},
		{name: "commit marker kept at a segment's end",
			log:  [][]byte{plain(0, pid, now, rec("a", "1")), marker(1, pid, old, true)},
			want: []string{"same", "same"}},
		{name: "aborted data does not protect a later tombstone",
			log:  [][]byte{txnData(0, pid, now, rec("z", "1")), marker(1, pid, old, false), plain(2, -1, old, tomb("z"), rec("y", "1")), plain(4, pid, now, rec("c", "1"))},
			want: []string{"gone", "same", "3:y=1", "same"}},
		{name: "committed data superseded by a later tombstone goes with it, then its marker",
			log:  [][]byte{txnData(0, pid, now, rec("z", "1")), marker(1, pid, old, true), plain(2, -1, old, tomb("z"), rec("y", "1")), plain(4, pid, now, rec("c", "1"))},
			want: []string{"gone", "gone", "3:y=1", "same"}},
		{name: "committed data compacted record by record",
			log:  [][]byte{txnData(0, pid, now, rec("a", "1"), rec("b", "1")), marker(2, pid, old, true), plain(3, -1, now, rec("a", "2")), plain(4, pid, now, rec("c", "1"))},
			want: []string{"1:b=1", "same", "same", "same"}},
		{name: "young commit marker outlives its data",
			log:  [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, now, true), plain(2, -1, now, rec("a", "2")), plain(3, pid, now, rec("c", "1"))},
			want: []string{"gone", "same", "same", "same"}},
		{name: "a later committed transaction supersedes an earlier one",
			log: [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, true), txnData(2, pid, now, rec("a", "2")), marker(3, pid, old, true),
				plain(4, pid, now, rec("c", "1"))},
			want: []string{"gone", "gone", "same", "same", "same"}},
		{name: "a record written while a transaction is open is later than the transaction's",
			log: [][]byte{txnData(0, pid, now, rec("a", "1"), rec("b", "1")), plain(2, -1, now, rec("a", "2")), marker(3, pid, old, true),
				plain(4, -1, now, rec("b", "2")), plain(5, pid, now, rec("c", "1"))},
			want: []string{"gone", "same", "gone", "same", "same"}},
		{name: "a transaction's record later than one written while it was open wins",
			log: [][]byte{plain(0, -1, now, rec("a", "1")), txnData(1, pid, now, rec("a", "2")), plain(2, -1, now, rec("b", "2")), marker(3, pid, old, true),
				plain(4, pid, now, rec("c", "1"))},
			want: []string{"gone", "same", "same", "same", "same"}},
		{name: "an aborted transaction between committed ones supersedes nothing",
			log: [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, true), txnData(2, pid, now, rec("a", "2")), marker(3, pid, old, false),
				txnData(4, pid, now, rec("b", "1")), marker(5, pid, old, true), plain(6, pid, now, rec("c", "1"))},
			want: []string{"same", "same", "gone", "same", "same", "same", "same"}},
		{name: "an idempotent producer's batches between a transaction's",
			log: [][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, 7, now, rec("a", "2")), txnData(2, pid, now, rec("b", "1")),
				plain(3, 7, now, rec("b", "2")), marker(4, pid, old, true), plain(5, pid, now, rec("c", "1")), plain(6, 7, now, rec("d", "1"))},
			want: []string{"gone", "same", "gone", "same", "gone", "same", "same"}},
		{name: "old tombstone in a committed transaction removed with what it deletes",
			log: [][]byte{txnData(0, pid, old, rec("a", "1")), marker(1, pid, old, true), txnData(2, pid, old, tomb("a"), rec("b", "1")), marker(4, pid, old, true),
				plain(5, pid, now, rec("c", "1"))},
			want: []string{"gone", "gone", "3:b=1", "same", "same"}},
		{name: "young tombstone in a committed transaction kept",
			log: [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, true), txnData(2, pid, now, tomb("a")), marker(3, pid, old, true),
				plain(4, pid, now, rec("c", "1"))},
			want: []string{"gone", "gone", "same", "same", "same"}},
		{name: "committed data emptied at a segment's end stays, and so does its marker",
			log:     [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, true), plain(2, -1, now, rec("a", "2")), plain(3, pid, now, rec("c", "1"))},
			segEnds: []int{0},
			want:    []string{"empty", "same", "same", "same"}},
		{name: "a transaction straddling the first dirty offset",
			log: [][]byte{txnData(0, pid, now, rec("a", "1"), rec("b", "1")), txnData(2, pid, now, rec("d", "1")), marker(3, pid, old, true),
				plain(4, -1, now, rec("a", "2"), rec("d", "2")), plain(6, pid, now, rec("c", "1"))},
			firstDirty: 2,
			want:       []string{"1:b=1", "gone", "same", "same", "same"}},
		{name: "a pass stops before a transaction it has not seen end",
			log: [][]byte{plain(0, -1, now, rec("a", "1"), rec("d", "1")), plain(2, -1, now, rec("d", "2")), txnData(3, pid, now, rec("b", "1")),
				plain(4, -1, now, rec("a", "3")), marker(12, pid, old, true)},
			mapEnd: 3,
			// a's record past the pass's end decides nothing: a read_committed
			// reader stops before the open transaction.
			want: []string{"0:a=1", "same", "same", "same", "same"}},
		{name: "a transaction below firstDirty whose marker lies past a full map stays whole",
			log: [][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, old, tomb("z")), plain(2, -1, now, rec("a", "2")),
				plain(3, -1, now, rec("c", "1"), rec("d", "1"), rec("e", "1")), marker(6, pid, old, true), plain(7, pid, now, rec("f", "1"))},
			firstDirty: 2, mapKeys: 2, mapEnd: 3,
			want: []string{"same", "same", "same", "same", "same", "same"}},
		{name: "undecided transaction kept whole",
			log:    [][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, now, rec("b", "1"))},
			mapEnd: -1,
			want:   []string{"same", "same"}},
		{name: "an unreadable marker leaves its data whole, protecting later tombstones",
			log:  [][]byte{txnData(0, pid, now, rec("z", "1")), garbled(1, pid, old), plain(2, -1, old, tomb("z"), rec("y", "1")), plain(4, pid, now, rec("c", "1"))},
			want: []string{"same", "same", "same", "same"}},
		{name: "an aborted transaction over several batches",
			log: [][]byte{txnData(0, pid, now, rec("a", "1")), plain(1, -1, now, rec("b", "1")), txnData(2, pid, now, rec("a", "2"), rec("d", "2")),
				marker(4, pid, old, false), txnData(5, pid, now, rec("a", "3")), marker(6, pid, old, true), plain(7, -1, now, rec("e", "1"))},
			want: []string{"gone", "same", "gone", "same", "same", "same", "same"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &Pass{Map: NewKeyMap(1 << 20), MapEnd: 10, Horizon: now - 1000}
			if c.mapKeys > 0 {
				p.Map = NewKeyMap(c.mapKeys * EntryBytes)
			}
			if err := scanAll(t, p, c.log, c.firstDirty); err != nil {
				t.Fatal(err)
			}
			if want := c.mapEnd; want != 0 && p.MapEnd != max(want, 0) || want == 0 && p.MapEnd != 10 {
				t.Fatalf("pass ends at %d, want %d", p.MapEnd, c.mapEnd)
			}
			decideAll(t, p, c.log, c.segEnds, c.want)
		})
	}
}

// TestPassAbortMarkers: an abort marker goes, as Kafka's cleaner removes
// it, once no batch of its transaction is left before it, it is older
// than delete.retention.ms and the partition's aborted-transaction index
// no longer names it (IndexedAborts, complete below IndexedTo); it stays
// as its producer's last batch or its segment's last. Every abort marker
// the pass walks is reported emptied: its transaction's records are gone.
func TestPassAbortMarkers(t *testing.T) {
	const now, old = 1_000_000, 1_000_000 - 5000
	const pid = 4
	cases := []struct {
		name             string
		log              [][]byte
		indexed          []int64
		indexedTo        int64 // 0: 10
		segEnds          []int
		want             []string
		emptied, removed []int64
	}{
		{name: "old marker without data, out of the index, removed",
			log:  [][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, pid, now, rec("c", "1"))},
			want: []string{"same", "gone", "same"}, emptied: []int64{2}, removed: []int64{2}},
		{name: "marker the index names kept",
			log:     [][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, pid, now, rec("c", "1"))},
			indexed: []int64{2},
			want:    []string{"same", "same", "same"}, emptied: []int64{2}},
		{name: "marker past what the index covers kept",
			log:       [][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, pid, now, rec("c", "1"))},
			indexedTo: 2,
			want:      []string{"same", "same", "same"}, emptied: []int64{2}},
		{name: "young marker kept",
			log:  [][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, now, false), plain(3, pid, now, rec("c", "1"))},
			want: []string{"same", "same", "same"}, emptied: []int64{2}},
		{name: "marker kept as its producer's last batch",
			log:  [][]byte{plain(1, -1, now, rec("b", "1")), marker(2, pid, old, false), plain(3, -1, now, rec("c", "1"))},
			want: []string{"same", "same", "same"}, emptied: []int64{2}},
		{name: "marker kept behind its transaction's batch emptied at a segment's end",
			log:     [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, false), plain(2, pid, now, rec("c", "1"))},
			segEnds: []int{0},
			want:    []string{"empty", "same", "same"}, emptied: []int64{1}},
		{name: "aborted data and an unindexed marker go in one pass",
			log:  [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, false), plain(2, pid, now, rec("c", "1"))},
			want: []string{"gone", "gone", "same"}, emptied: []int64{1}, removed: []int64{1}},
		{name: "only the abort markers are reported",
			log: [][]byte{txnData(0, pid, now, rec("a", "1")), marker(1, pid, old, true), txnData(2, pid, now, rec("b", "1")), marker(3, pid, old, false),
				garbled(4, pid, old), plain(5, pid, now, rec("c", "1"))},
			indexed: []int64{3},
			want:    []string{"same", "same", "gone", "same", "same", "same"}, emptied: []int64{3}},
		{name: "markers past the pass's end untouched",
			log:       [][]byte{plain(1, -1, now, rec("b", "1")), plain(2, pid, now, rec("c", "1")), marker(12, pid, old, false)},
			indexedTo: 20,
			want:      []string{"same", "same", "same"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &Pass{Map: NewKeyMap(1 << 20), MapEnd: 10, Horizon: now - 1000, IndexedTo: c.indexedTo, IndexedAborts: map[int64]bool{}}
			if p.IndexedTo == 0 {
				p.IndexedTo = 10
			}
			for _, off := range c.indexed {
				p.IndexedAborts[off] = true
			}
			if err := scanAll(t, p, c.log, 0); err != nil {
				t.Fatal(err)
			}
			decideAll(t, p, c.log, c.segEnds, c.want)
			if fmt.Sprint(p.AbortsEmptied) != fmt.Sprint(c.emptied) || fmt.Sprint(p.AbortsRemoved) != fmt.Sprint(c.removed) {
				t.Fatalf("emptied %v, removed %v; want %v, %v", p.AbortsEmptied, p.AbortsRemoved, c.emptied, c.removed)
			}
		})
	}
}

// decideAll runs the pass's Batch over log, whose last batch and the
// batches at segEnds end segments, and checks what becomes of each batch:
// "same", "gone", "empty" or its records; a rewritten batch keeps its
// producer fields, transactional attribute and offsets.
func decideAll(t *testing.T, p *Pass, log [][]byte, segEnds []int, want []string) {
	t.Helper()
	segEnd := map[int]bool{len(log) - 1: true}
	for _, i := range segEnds {
		segEnd[i] = true
	}
	for i, b := range log {
		h, _ := batch.Validate(b)
		out, err := p.Batch(b, h, segEnd[i])
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
			oh, _ := batch.ParseHeader(out)
			if oh.Attributes&batch.AttrTransactional != h.Attributes&batch.AttrTransactional || oh.ProducerID != h.ProducerID ||
				oh.BaseSequence != h.BaseSequence || oh.NextOffset() != h.NextOffset() {
				t.Fatalf("batch %d rewritten as %+v from %+v", i, oh, h)
			}
		}
		if got != want[i] {
			t.Fatalf("batch %d at %d: %s, want %s", i, h.BaseOffset, got, want[i])
		}
	}
}

// TestPassPropertyTxns: random histories of plain records, tombstones and
// transactions of two producers that commit or abort (their batches
// compressed now and then, one transaction sometimes left open), over
// random segments, cleaned in passes with a small key map (doubled when a
// pass cannot hold a transaction, as an operator would). Read as a
// read_committed reader does (skipping aborted transactions, stopping at
// the open one), the log gives every key's latest committed or plain
// value by offset; no aborted record is left before the open transaction;
// every transactional batch left is followed by its marker (a rebuilt
// transaction index and last stable offset still see each transaction
// end); and, with no transaction left open, no key appears twice.
func TestPassPropertyTxns(t *testing.T) {
	for seed := uint64(0); seed < 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		const now = 1_000_000
		nkeys := 1 + r.IntN(15)
		type written struct {
			k, v string // v "": tombstone
			off  int64
		}
		var log [][]byte
		var history []written
		off := int64(0)
		open := map[int64]bool{} // transactional producers 10, 11
		// txnOf: a data batch's base offset to its transaction's marker;
		// aborted: data batches of aborted transactions; openData: those of
		// the transaction left open.
		txnOf, batchesOf := map[int64]int64{}, map[int64][]int64{}
		aborted, openData := map[int64]bool{}, map[int64]bool{}
		endTxn := func(pid int64, commit bool, ts int64) {
			for _, b := range batchesOf[pid] {
				txnOf[b], aborted[b] = off, !commit
			}
			batchesOf[pid] = nil
			open[pid] = false
			log = append(log, marker(off, pid, ts, commit))
			off++
		}
		add := func(b []byte) {
			if r.IntN(4) == 0 {
				h, _ := batch.Validate(b)
				b, _ = compressed(t, b, h, int16(1+r.IntN(4)))
			}
			log = append(log, b)
		}
		records := func(prefix string, n int) []kv {
			var recs []kv
			for j := 0; j < n; j++ {
				k := fmt.Sprintf("k%d", r.IntN(nkeys))
				w := written{k: k, off: off + int64(j)}
				if r.IntN(5) == 0 {
					recs = append(recs, tomb(k))
				} else {
					w.v = fmt.Sprintf("%s%d", prefix, w.off)
					recs = append(recs, rec(k, w.v))
				}
				history = append(history, w)
			}
			return recs
		}
		for i, n := 0, 1+r.IntN(40); i < n; i++ {
			ts := int64(now - r.IntN(3000))
			if r.IntN(2) == 0 {
				pid := int64(10 + r.IntN(2))
				if open[pid] && r.IntN(2) == 0 {
					endTxn(pid, r.IntN(3) != 0, ts)
					continue
				}
				recs := records("t", 1+r.IntN(3))
				add(txnData(off, pid, ts, recs...))
				batchesOf[pid] = append(batchesOf[pid], off)
				off += int64(len(recs))
				open[pid] = true
				continue
			}
			recs := records("v", 1+r.IntN(4))
			add(plain(off, int64(r.IntN(2))-1, ts, recs...))
			off += int64(len(recs))
		}
		lso := off + 1 // past the end: no transaction left open
		for pid := int64(10); pid <= 11; pid++ {
			switch {
			case !open[pid]:
			case pid == 10 && r.IntN(3) == 0:
				lso = batchesOf[pid][0]
				for _, b := range batchesOf[pid] {
					openData[b] = true
				}
			default:
				endTxn(pid, r.IntN(2) == 0, now-3000)
			}
		}
		// The model: each key's latest record by offset below the open
		// transaction, outside aborted transactions.
		latest := map[string]written{}
		for _, w := range history {
			base := w.off
			for base > 0 && !isBase(log, base) {
				base--
			}
			if w.off < lso && !aborted[base] && !openData[base] {
				latest[w.k] = w
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
		// The aborted-transaction index, as the partition keeps it: a
		// transaction leaves it one pass after a pass emptied it.
		emptied := map[int64]bool{}
		// Passes until none moves on, then one more over all of it (it
		// sees the markers whose data the earlier passes removed).
		for final := false; ; {
			p := &Pass{Map: NewKeyMap(mapBytes), MapEnd: end, Horizon: now - 1000, IndexedTo: end, IndexedAborts: map[int64]bool{}}
			for _, b := range log {
				if h, _ := batch.ParseHeader(b); h.IsControl() && !emptied[h.BaseOffset] {
					p.IndexedAborts[h.BaseOffset] = true
				}
			}
			if err := scanAll(t, p, log, firstDirty); err != nil {
				mapBytes *= 2
				continue
			}
			progress := p.MapEnd > firstDirty
			if progress {
				log, segEnd = rewrite(t, p, log, segEnd)
				firstDirty = p.MapEnd
				for _, m := range p.AbortsRemoved {
					if p.IndexedAborts[m] {
						t.Fatalf("seed %d: abort marker at %d removed while indexed", seed, m)
					}
				}
				for _, m := range p.AbortsEmptied {
					emptied[m] = true
					for _, b := range log {
						if h, _ := batch.ParseHeader(b); !h.IsControl() && txnOf[h.BaseOffset] == m && h.NumRecords > 0 {
							t.Fatalf("seed %d: abort marker at %d reported emptied, its batch at %d keeps %d records", seed, m, h.BaseOffset, h.NumRecords)
						}
					}
				}
			}
			if final {
				break
			}
			if !progress || firstDirty >= end {
				final, firstDirty = true, 0
			}
		}
		got := map[string]Record{}
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
			if h.IsTransactional() && !openData[h.BaseOffset] {
				txnBatches = append(txnBatches, h.BaseOffset)
			}
			if aborted[h.BaseOffset] {
				if h.NumRecords != 0 && h.BaseOffset < lso {
					t.Fatalf("seed %d: aborted batch at %d keeps %d records", seed, h.BaseOffset, h.NumRecords)
				}
				continue
			}
			rs, err := Records(b, h)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for _, rr := range rs {
				if rr.Offset <= last {
					t.Fatalf("seed %d: offset %d after %d", seed, rr.Offset, last)
				}
				last = rr.Offset
				if rr.Offset >= lso {
					continue
				}
				if _, dup := got[string(rr.Key)]; dup && lso > end {
					t.Fatalf("seed %d: key %s appears twice after cleaning", seed, rr.Key)
				}
				got[string(rr.Key)] = rr
			}
		}
		for _, b := range txnBatches {
			if !markers[txnOf[b]] {
				t.Fatalf("seed %d: transactional batch at %d left without its marker at %d", seed, b, txnOf[b])
			}
		}
		for k, w := range latest {
			g, ok := got[k]
			switch {
			case w.v != "" && (!ok || g.Tombstone || value(t, g) != w.v):
				t.Fatalf("seed %d: key %s reads %+v (present %v), latest is %q at %d", seed, k, g, ok, w.v, w.off)
			case w.v == "" && ok && !g.Tombstone:
				t.Fatalf("seed %d: tombstoned key %s reads %q", seed, k, value(t, g))
			}
		}
		for k := range got {
			if _, ok := latest[k]; !ok {
				t.Fatalf("seed %d: key %s read, never written outside aborted transactions", seed, k)
			}
		}
	}
}

// isBase reports whether a batch of log starts at off.
func isBase(log [][]byte, off int64) bool {
	for _, b := range log {
		if h, _ := batch.ParseHeader(b); h.BaseOffset == off {
			return true
		}
	}
	return false
}

// TestPassScanHoldsTransactionKeys: a transaction's keys count against the
// map's limit while it is open; a pass whose map fills inside a
// transaction ends before it, and one that cannot get past firstDirty
// says so, unless a transaction still open is all that holds it.
func TestPassScanHoldsTransactionKeys(t *testing.T) {
	const now = 1_000_000
	const pid = 4
	cases := []struct {
		name    string
		log     [][]byte
		mapEnd  int64
		failure bool
	}{
		{"held keys fill the map: the pass ends before the transaction",
			[][]byte{plain(0, -1, now, rec("a", "1")), txnData(1, pid, now, rec("b", "1"), rec("c", "1")), plain(3, -1, now, rec("d", "1"), rec("e", "1")),
				marker(5, pid, now, true)},
			1, false},
		{"a transaction from firstDirty larger than the map",
			[][]byte{txnData(0, pid, now, rec("b", "1"), rec("c", "1")), txnData(2, pid, now, rec("d", "1"), rec("e", "1")), marker(4, pid, now, true)},
			0, true},
		{"a transaction still open from firstDirty",
			[][]byte{txnData(0, pid, now, rec("b", "1")), plain(1, -1, now, rec("d", "1"))},
			0, false},
		{"a committed transaction's keys go in the map at its marker",
			[][]byte{txnData(0, pid, now, rec("b", "1"), rec("c", "1")), marker(2, pid, now, true), plain(3, -1, now, rec("d", "1"))},
			10, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &Pass{Map: NewKeyMap(3 * EntryBytes), MapEnd: 10, Horizon: now - 1000}
			err := scanAll(t, p, c.log, 0)
			if (err != nil) != c.failure || p.MapEnd != c.mapEnd {
				t.Fatalf("pass ends at %d (error %v), want %d (error: %v)", p.MapEnd, err, c.mapEnd, c.failure)
			}
		})
	}
}
