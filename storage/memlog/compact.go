package memlog

import (
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
	for _, s := range l.segments[:max(len(l.segments)-1, 0)] {
		es := s.entries
		if len(es) == 0 || es[len(es)-1].next <= start {
			continue
		}
		st := compaction.Segment{Base: es[0].base, Next: es[len(es)-1].next, Size: s.size, MaxTS: -1}
		for _, e := range es {
			st.MaxTS = max(st.MaxTS, e.maxTS)
		}
		segs, snap, stats = append(segs, s), append(snap, es), append(stats, st)
	}
	l.mu.RUnlock()
	firstDirty := max(l.cleanedTo, start)
	res.CleanedTo = firstDirty
	nowMs := req.Now.UnixMilli()
	res.Plan = compaction.Decide(stats, firstDirty, nowMs, req.Config)
	if !res.Plan.Clean {
		return res, nil
	}
	pass := &compaction.Pass{Map: compaction.NewKeyMap(req.MapBytes), MapEnd: res.Plan.DirtyEnd,
		Horizon: nowMs - req.Config.DeleteRetention, LastOfProducer: map[int64]int64{}}
fill:
	for _, es := range snap {
		for _, e := range es {
			if e.base >= pass.MapEnd {
				break fill
			}
			h, err := batch.ParseHeader(e.b)
			if err != nil {
				return res, err
			}
			req.Throttle.Wait(int64(len(e.b)))
			res.BytesRead += int64(len(e.b))
			ok, err := pass.Scan(e.b, h, firstDirty)
			if err != nil {
				return res, err
			}
			if !ok {
				break fill
			}
		}
	}
	if pass.MapEnd <= firstDirty {
		return res, nil
	}
	out := make([][]entry, len(snap))
	for i, es := range snap {
		if es[0].base >= pass.MapEnd {
			snap, out = snap[:i], out[:i]
			break
		}
		for j, e := range es {
			h, err := batch.ParseHeader(e.b)
			if err != nil {
				return res, err
			}
			nb, err := pass.Batch(e.b, h, j == len(es)-1)
			if err != nil {
				return res, err
			}
			if nb != nil {
				out[i] = append(out[i], entry{base: e.base, next: e.next, maxTS: e.maxTS, b: nb})
			}
		}
	}
	l.mu.Lock()
	for i, s := range segs[:len(out)] {
		if len(s.entries) == 0 || &s.entries[0] != &snap[i][0] {
			continue // retention changed it meanwhile
		}
		var size int64
		for _, e := range out[i] {
			size += int64(len(e.b))
		}
		res.BytesWritten += size
		if size != s.size {
			res.Segments++
		}
		l.size += size - s.size
		s.entries, s.size = out[i], size
	}
	l.mu.Unlock()
	res.Cleaned, res.CleanedTo = true, pass.MapEnd
	l.cleanedTo = pass.MapEnd
	return res, nil
}
