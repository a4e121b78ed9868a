package memlog

import (
	"fmt"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
)

var _ storage.Compactor = (*Log)(nil)

// Compact implements storage.Compactor with the same rules as the disk
// log: the sealed segments (every one but the last) are rewritten without
// superseded records, each keeping its last batch so offsets never go
// unserved; the key map is bounded the same way, so a pass may stop early.
func (l *Log) Compact(req storage.CompactRequest) (storage.CompactResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	var res storage.CompactResult
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return res, storage.ErrClosed
	}
	start := l.start
	var segs []*segment
	var snap [][]entry
	var stats []compaction.Segment
	var held []*chunk
	for _, s := range l.segments[:max(len(l.segments)-1, 0)] {
		es := s.entries
		if len(es) == 0 || es[len(es)-1].next() <= start {
			continue
		}
		st := compaction.Segment{Base: es[0].base(), Next: es[len(es)-1].next(), Size: s.size, MaxTS: -1}
		for i := range es {
			st.MaxTS = max(st.MaxTS, es[i].maxTS())
		}
		segs, snap, stats = append(segs, s), append(snap, es), append(stats, st)
		// The pass reads these batches unlocked: retention may drop the
		// segments meanwhile, but their chunks stay until the pass is done.
		for _, c := range s.chunks {
			c.acquire()
			held = append(held, c)
		}
	}
	l.mu.RUnlock()
	defer func() {
		for _, c := range held {
			c.release()
		}
	}()
	firstDirty := max(l.cleanedTo, start)
	res.CleanedTo = firstDirty
	nowMs := req.Now.UnixMilli()
	res.Plan = compaction.Decide(stats, firstDirty, nowMs, req.Config)
	if !res.Plan.Clean {
		return res, nil
	}
	pass := &compaction.Pass{Map: compaction.NewKeyMap(req.MapBytes), MapEnd: res.Plan.DirtyEnd,
		Horizon: nowMs - req.Config.DeleteRetention, LastOfProducer: map[int64]int64{},
		IndexedAborts: req.IndexedAborts, IndexedTo: req.IndexedTo}
fill:
	for _, es := range snap {
		for i := range es {
			e := &es[i]
			if e.base() >= pass.MapEnd {
				break fill
			}
			b, err := e.bytes(l.ar)
			if err != nil {
				return res, err
			}
			req.Throttle.Wait(int64(e.n))
			res.BytesRead += int64(e.n)
			ok, err := pass.Scan(b, e.h, firstDirty)
			if err != nil {
				return res, err
			}
			if !ok {
				break fill
			}
		}
	}
	if err := pass.EndScan(firstDirty); err != nil {
		return res, fmt.Errorf("memlog: %w", err)
	}
	if pass.MapEnd <= firstDirty {
		return res, nil // a transaction open from firstDirty on
	}
	// Rewritten segments go into chunks of their own, so the chunks of the
	// batches they replace are freed once nothing else holds them.
	app := appender{ar: l.ar}
	defer app.close()
	out := make([]*segment, len(snap))
	for i, es := range snap {
		if es[0].base() >= pass.MapEnd {
			snap, out = snap[:i], out[:i]
			break
		}
		var kept [][]byte
		changed := false
		for j := range es {
			e := &es[j]
			b, err := e.bytes(l.ar)
			if err != nil {
				return res, err
			}
			nb, err := pass.Batch(b, e.h, j == len(es)-1)
			if err != nil {
				return res, err
			}
			changed = changed || len(nb) != len(b) || len(nb) > 0 && &nb[0] != &b[0]
			if nb != nil {
				kept = append(kept, nb)
			}
		}
		if !changed {
			res.BytesWritten += segs[i].size
			continue
		}
		ns := &segment{}
		for _, nb := range kept {
			h, err := batch.ParseHeader(nb)
			if err == nil {
				var e entry
				if e, err = store(&app, nb, h); err == nil {
					ns.add(e)
					continue
				}
			}
			ns.drop()
			for _, o := range out[:i] {
				if o != nil {
					o.drop()
				}
			}
			return res, err
		}
		out[i] = ns
	}
	l.mu.Lock()
	skipped := false
	for i, s := range segs[:len(out)] {
		ns := out[i]
		if ns == nil {
			continue
		}
		if s.gone || len(s.entries) == 0 || &s.entries[0] != &snap[i][0] {
			ns.drop() // retention changed it meanwhile
			skipped = true
			continue
		}
		res.BytesWritten += ns.size
		res.Segments++
		l.size += ns.size - s.size
		old := s.chunks
		s.entries, s.chunks, s.size = ns.entries, ns.chunks, ns.size
		for _, c := range old {
			c.release()
		}
	}
	l.mu.Unlock()
	res.Cleaned, res.CleanedTo = true, pass.MapEnd
	if !skipped {
		// A segment left as it was may still hold an aborted
		// transaction's records.
		res.AbortsEmptied, res.AbortsRemoved = pass.AbortsEmptied, pass.AbortsRemoved
	}
	l.cleanedTo = pass.MapEnd
	return res, nil
}
