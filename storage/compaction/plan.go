package compaction

// Segment is what the scheduling decision needs of one sealed segment.
type Segment struct {
	Base, Next int64 // offsets: first, and after the last
	Size       int64 // bytes
	MaxTS      int64 // largest batch max timestamp (Unix ms; -1: none)
}

// Config is a topic's compaction settings, in milliseconds.
type Config struct {
	MinDirtyRatio   float64 // min.cleanable.dirty.ratio
	MinLagMs        int64   // min.compaction.lag.ms
	MaxLagMs        int64   // max.compaction.lag.ms (<= 0: none)
	DeleteRetention int64   // delete.retention.ms
}

// Plan is the decision to clean a log now.
type Plan struct {
	Clean bool
	// DirtyEnd is the end of the cleanable dirty range: the base of the
	// first sealed segment holding a record younger than min.compaction.lag.ms,
	// else the end of the last sealed segment.
	DirtyEnd   int64
	DirtyBytes int64
	CleanBytes int64
	// DirtyRatio is dirty / (clean + dirty) bytes of the sealed segments.
	DirtyRatio float64
	// Overdue: cleaning because a dirty segment exceeded max.compaction.lag.ms.
	Overdue bool
}

// Decide plans a cleaning pass over the sealed segments segs (oldest first)
// of a log cleaned up to firstDirty, at nowMs: dirty bytes are those of the
// segments ending after firstDirty, within min.compaction.lag.ms; the log is
// cleaned when their ratio reaches min.cleanable.dirty.ratio, or sooner when
// one of them is older than max.compaction.lag.ms.
func Decide(segs []Segment, firstDirty, nowMs int64, c Config) Plan {
	var p Plan
	if len(segs) == 0 {
		return p
	}
	p.DirtyEnd = segs[len(segs)-1].Next
	for _, s := range segs {
		if s.Next <= firstDirty {
			p.CleanBytes += s.Size
			continue
		}
		if c.MinLagMs > 0 && s.MaxTS > nowMs-c.MinLagMs {
			p.DirtyEnd = s.Base
			break
		}
		p.DirtyBytes += s.Size
		if c.MaxLagMs > 0 && s.MaxTS >= 0 && s.MaxTS < nowMs-c.MaxLagMs {
			p.Overdue = true
		}
	}
	if total := p.CleanBytes + p.DirtyBytes; total > 0 {
		p.DirtyRatio = float64(p.DirtyBytes) / float64(total)
	}
	p.Clean = p.DirtyEnd > firstDirty && p.DirtyBytes > 0 && (p.DirtyRatio >= c.MinDirtyRatio || p.Overdue)
	return p
}
