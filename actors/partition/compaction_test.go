package partition

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/memlog"
)

// TestProducerStateSurvivesCompaction: an idempotent producer's batches
// are compacted away except its last one (kept, empty if need be); the
// producer state rebuilt from the compacted log (a new leader's open)
// still accepts the producer's next sequence and recognises a retry of its
// last batch as a duplicate, on both log engines.
func TestProducerStateSurvivesCompaction(t *testing.T) {
	bothEngines(t, "00000000-0000-4000-8000-000000000009", func(l storage.Log) {
		now := time.Now()
		var last []byte
		const batches = 40
		for i := 0; i < batches; i++ {
			// Every batch overwrites the same key: only the last survives
			// by its records, and the producer's last batch is the one a
			// pass of the sealed segments keeps empty.
			last = batch.Build(batch.Spec{BaseOffset: l.NextOffset(), ProducerID: 7, ProducerEpoch: 0, BaseSequence: int32(i),
				Timestamp: now.UnixMilli(), Keys: [][]byte{[]byte("k")}, Values: [][]byte{[]byte(fmt.Sprint(i))}})
			h, _ := batch.Validate(last)
			if err := l.Append(last, h); err != nil {
				t.Fatal(err)
			}
		}
		// A batch of another producer rolls the log so the first one's
		// last batch is in a sealed segment.
		for i := 0; i < 10; i++ {
			b := batch.Build(batch.Spec{BaseOffset: l.NextOffset(), ProducerID: -1, BaseSequence: -1, Timestamp: now.UnixMilli(),
				Keys: [][]byte{[]byte(fmt.Sprint("other", i))}, Values: [][]byte{make([]byte, 100)}})
			h, _ := batch.Validate(b)
			if err := l.Append(b, h); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		res, err := l.(storage.Compactor).Compact(storage.CompactRequest{Now: now, Config: compaction.Config{DeleteRetention: 1000}, MapBytes: 1 << 20})
		if err != nil || !res.Cleaned || res.Segments == 0 {
			t.Fatalf("%T: compact %+v %v", l, res, err)
		}
		prods, _, _, err := recoverProducers(l, true)
		if err != nil {
			t.Fatal(err)
		}
		next := batch.Build(batch.Spec{ProducerID: 7, BaseSequence: batches, Timestamp: now.UnixMilli(), Values: [][]byte{[]byte("x")}})
		nh, _ := batch.Validate(next)
		if r := prods.Check(nh); r.ErrorCode != 0 || r.Duplicate != nil {
			t.Fatalf("%T: next sequence after compaction: %+v", l, r)
		}
		lh, _ := batch.Validate(last)
		if r := prods.Check(lh); r.Duplicate == nil {
			t.Fatalf("%T: retry of the last batch not seen as a duplicate: %+v", l, r)
		}
	})
}

// TestTransactionStateSurvivesCompaction: the cleaner removes the records
// of an aborted transaction and keeps its marker, and compacts committed
// transactions: a record superseded by a later committed one or by a later
// plain record goes, and so does the old commit marker of a transaction
// none of whose batches is left. The transaction state rebuilt from the
// cleaned log (a new leader's open) still lists the aborted transaction,
// still holds the last stable offset at the transaction left open, and
// takes the committed producer's next batch, on both log engines.
func TestTransactionStateSurvivesCompaction(t *testing.T) {
	bothEngines(t, "00000000-0000-4000-8000-00000000000a", func(l storage.Log) {
		now := time.Now()
		old := now.UnixMilli() - 10_000
		seq := map[int64]int32{}
		add := func(b []byte) int64 { return appendAtEnd(t, l, b) }
		data := func(pid int64, kvs ...string) int64 {
			s := batch.Spec{ProducerID: pid, BaseSequence: seq[pid], Timestamp: old}
			for i := 0; i < len(kvs); i += 2 {
				s.Keys, s.Values = append(s.Keys, []byte(kvs[i])), append(s.Values, []byte(kvs[i+1]))
			}
			seq[pid] += int32(len(s.Values))
			b := batch.Build(s)
			binary.BigEndian.PutUint16(b[21:], uint16(batch.AttrTransactional))
			binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
			return add(b)
		}
		plain := func(k, v string) {
			add(batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: now.UnixMilli(),
				Keys: [][]byte{[]byte(k)}, Values: [][]byte{[]byte(v)}}))
		}
		// The first transaction and its marker lie inside the first
		// segment (a segment's last batch always stays).
		data(21, "c", "superseded", "f", "superseded")
		firstCommit := add(batch.Marker(21, 0, true, 0, old))
		data(21, "c", "committed")
		abortedFirst := data(20, "a", "aborted", "b", "aborted")
		data(20, "e", "aborted")
		abortMarker := add(batch.Marker(20, 0, false, 0, old))
		lastCommit := add(batch.Marker(21, 0, true, 0, old))
		plain("f", "plain")
		openFirst := data(20, "d", "open")
		for i := 0; i < 12; i++ {
			plain(fmt.Sprint("filler", i), string(make([]byte, 80)))
		}
		if _, err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		res, err := l.(storage.Compactor).Compact(storage.CompactRequest{Now: now, Config: compaction.Config{DeleteRetention: 1000}, MapBytes: 1 << 20})
		if err != nil || !res.Cleaned || res.Segments == 0 {
			t.Fatalf("%T: compact %+v %v", l, res, err)
		}
		values := map[string]int{}
		markers := map[int64]bool{}
		abortedLeft := false // an (emptied) batch of the aborted transaction
		firstCommitLeft := false
		err = l.ScanHeaders(0, func(h batch.Header) error {
			abortedLeft = abortedLeft || (h.ProducerID == 20 && h.IsTransactional() && !h.IsControl() && h.BaseOffset < abortMarker)
			firstCommitLeft = firstCommitLeft || (h.ProducerID == 21 && !h.IsControl() && h.BaseOffset < firstCommit)
			if h.IsControl() {
				markers[h.BaseOffset] = true
				return nil
			}
			recs, err := l.Read(h.BaseOffset, h.Size(), h.NextOffset())
			if err != nil {
				return err
			}
			b, err := recs.AppendTo(nil)
			recs.Close()
			if err != nil {
				return err
			}
			rs, err := compaction.Records(b[:h.Size()], h)
			for _, r := range rs {
				values[string(r.Value)]++
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if values["aborted"] != 0 || values["superseded"] != 0 || values["committed"] != 1 || values["plain"] != 1 || values["open"] != 1 {
			t.Fatalf("%T: after cleaning: values %v", l, values)
		}
		// The first commit marker goes with its transaction's batches.
		if !markers[abortMarker] || !markers[lastCommit] || markers[firstCommit] || firstCommitLeft {
			t.Fatalf("%T: markers left %v (abort %d, commits %d %d), a batch of the first commit left: %v", l, markers, abortMarker, firstCommit, lastCommit, firstCommitLeft)
		}
		prods, _, _, err := recoverProducers(l, true)
		if err != nil {
			t.Fatal(err)
		}
		// The index lists the aborted transaction while a batch of it is
		// left (a reader must skip it); never anything else.
		got := prods.Aborted(0, l.NextOffset())
		if len(got) > 1 || abortedLeft && len(got) == 0 ||
			len(got) == 1 && (got[0].ProducerID != 20 || got[0].LastOffset != abortMarker || got[0].FirstOffset < abortedFirst) {
			t.Fatalf("%T: aborted index after cleaning %+v (a batch left: %v), want producer 20's transaction ending at %d", l, got, abortedLeft, abortMarker)
		}
		if lso := prods.LastStable(l.NextOffset()); lso != openFirst {
			t.Fatalf("%T: last stable offset %d, want %d (the open transaction)", l, lso, openFirst)
		}
		next := batch.Build(batch.Spec{ProducerID: 21, BaseSequence: seq[21], Timestamp: now.UnixMilli(), Keys: [][]byte{[]byte("g")}, Values: [][]byte{[]byte("x")}})
		nh, _ := batch.Validate(next)
		if r := prods.Check(nh); r.ErrorCode != 0 || r.Duplicate != nil {
			t.Fatalf("%T: the committed producer's next batch after compaction: %+v", l, r)
		}
	})
}

// TestAbortedIndexFollowsCompaction: on both engines, the pass that
// removes an aborted transaction's records keeps its marker while the
// partition's index names it, and once the pass is recorded no fetch is
// told of the transaction; a pass within delete.retention.ms of that keeps
// the marker, a later one removes it and the transaction leaves the index.
// A producer snapshot written before the cleaning still names it: recovery
// on a compacted log drops it, its marker being gone (on a log it is not
// told is compacted, it would keep it, as it has no reason to look).
func TestAbortedIndexFollowsCompaction(t *testing.T) {
	bothEngines(t, "00000000-0000-4000-8000-00000000000b", func(l storage.Log) {
		now := time.Now()
		old := now.UnixMilli() - 10_000
		add := func(b []byte) int64 { return appendAtEnd(t, l, b) }
		seq := int32(0)
		txnData := func(k string) {
			b := batch.Build(batch.Spec{ProducerID: 20, BaseSequence: seq, Timestamp: old, Keys: [][]byte{[]byte(k)}, Values: [][]byte{[]byte("v")}})
			seq++
			binary.BigEndian.PutUint16(b[21:], uint16(batch.AttrTransactional))
			binary.BigEndian.PutUint32(b[17:], batch.Checksum(b))
			add(b)
		}
		fill := 0
		seal := func() {
			t.Helper()
			for i := 0; i < 8; i++ {
				add(batch.Build(batch.Spec{ProducerID: -1, BaseSequence: -1, Timestamp: old,
					Keys: [][]byte{[]byte(fmt.Sprint("filler", fill))}, Values: [][]byte{make([]byte, 80)}}))
				fill++
			}
			if _, err := l.Sync(); err != nil {
				t.Fatal(err)
			}
		}
		txnData("a")
		abortMarker := add(batch.Marker(20, 0, false, 0, old))
		txnData("b")
		add(batch.Marker(20, 0, true, 0, old))
		seal()
		prods, _, _, err := recoverProducers(l, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := prods.Aborted(0, l.NextOffset()); len(got) != 1 || got[0].LastOffset != abortMarker {
			t.Fatalf("%T: aborted index %+v, want the transaction ending at %d", l, got, abortMarker)
		}
		if err := writeProducerSnapshot(l, prods); err != nil {
			t.Fatal(err)
		}
		const retention = 1000
		pass := func(at time.Time) storage.CompactResult {
			t.Helper()
			res, err := l.(storage.Compactor).Compact(storage.CompactRequest{Now: at, Config: compaction.Config{DeleteRetention: retention}, MapBytes: 1 << 20,
				IndexedAborts: prods.IndexedAborts(at.UnixMilli(), retention), IndexedTo: l.NextOffset()})
			if err != nil || !res.Cleaned {
				t.Fatalf("%T: compact %+v %v", l, res, err)
			}
			prods.AbortsCompacted(res.AbortsEmptied, res.AbortsRemoved, at.UnixMilli())
			return res
		}
		markerLeft := func() bool {
			left := false
			_ = l.ScanHeaders(0, func(h batch.Header) error {
				left = left || h.BaseOffset == abortMarker && h.IsControl()
				return nil
			})
			return left
		}
		// Every pass walks the abort marker (reported emptied) until one
		// removes it.
		steps := []struct {
			at      time.Time
			removed bool
		}{
			{now, false}, // the records go, the index names the marker
			{now.Add(retention / 2 * time.Millisecond), false}, // within delete.retention.ms of that
			{now.Add(2 * retention * time.Millisecond), true},  // past it
		}
		for i, s := range steps {
			if i > 0 {
				seal()
			}
			res := pass(s.at)
			if !slices.Contains(res.AbortsEmptied, abortMarker) || slices.Contains(res.AbortsRemoved, abortMarker) != s.removed ||
				markerLeft() == s.removed {
				t.Fatalf("%T: pass %d: emptied %v, removed %v, marker left %v", l, i, res.AbortsEmptied, res.AbortsRemoved, markerLeft())
			}
			if got := prods.Aborted(0, l.NextOffset()); len(got) != 0 {
				t.Fatalf("%T: pass %d: a fetch is told of %+v, whose records are gone", l, i, got)
			}
			if indexed := prods.IndexedAborts(s.at.UnixMilli(), retention)[abortMarker]; indexed == s.removed {
				t.Fatalf("%T: pass %d: marker indexed %v", l, i, indexed)
			}
		}
		for _, compacted := range []bool{true, false} {
			p, _, had, err := recoverProducers(l, compacted)
			if err != nil || !had {
				t.Fatalf("%T: recover: %v (snapshot %v)", l, err, had)
			}
			if got := p.Aborted(0, l.NextOffset()); len(got) != map[bool]int{true: 0, false: 1}[compacted] {
				t.Fatalf("%T: recovered from the older snapshot (compacted %v): a fetch is told of %+v", l, compacted, got)
			}
		}
	})
}

// bothEngines runs f on a fresh log of each engine, in memory then on
// disk, with 300-byte segments, and closes it after.
func bothEngines(t *testing.T, topicID string, f func(l storage.Log)) {
	t.Helper()
	do, err := disklog.NewOpener(t.TempDir(), zerolog.New(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = do.Close() })
	for _, o := range []storage.Opener{memlog.NewOpener(), do} {
		l, err := o.Open(storage.PartitionID{Topic: "t", TopicID: topicID}, storage.LogConfig{SegmentBytes: 300})
		if err != nil {
			t.Fatal(err)
		}
		f(l)
		_ = l.Close()
	}
}

// appendAtEnd appends batch b at l's end, its base offset set there, and
// returns that offset.
func appendAtEnd(t *testing.T, l storage.Log, b []byte) int64 {
	t.Helper()
	off := l.NextOffset()
	batch.SetBaseOffset(b, off)
	h, err := batch.Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(b, h); err != nil {
		t.Fatal(err)
	}
	return off
}
