package storage

import (
	"time"

	"github.com/kaas-project/kaas/storage/compaction"
)

// Compactor is a Log that compacts itself (cleanup.policy=compact): its
// owner calls Compact from a goroutine of its own, never from its mailbox;
// Compact is safe concurrently with every other method of the log.
type Compactor interface {
	Compact(req CompactRequest) (CompactResult, error)
}

// CompactRequest is one cleaning pass's parameters.
type CompactRequest struct {
	Now    time.Time
	Config compaction.Config
	// MapBytes bounds the pass's key map (Kafka's dedupe buffer); a log with
	// more distinct keys in its dirty range cleans in several passes.
	MapBytes int64
	// Throttle paces the pass's reads and writes (nil: unthrottled).
	Throttle *compaction.Throttle
	// IndexedAborts holds the offsets of the abort markers the partition's
	// aborted-transaction index may still name to a fetch, as of log end
	// offset IndexedTo: the pass keeps them, and every abort marker from
	// IndexedTo on (compaction.Pass.IndexedAborts).
	IndexedAborts map[int64]bool
	IndexedTo     int64
}

// CompactResult says what a pass did.
type CompactResult struct {
	Plan compaction.Plan
	// Cleaned: the pass ran (Plan.Clean) and swapped what it rewrote.
	Cleaned bool
	// CleanedTo is the log's first dirty offset after the pass.
	CleanedTo    int64
	BytesRead    int64
	BytesWritten int64
	// Segments is how many segments the pass replaced.
	Segments int
	// AbortsEmptied: the abort markers (offsets) whose transactions have
	// no record left; AbortsRemoved: the abort markers the pass removed.
	// Both are set only when the pass swapped in everything it rewrote.
	AbortsEmptied, AbortsRemoved []int64
}
