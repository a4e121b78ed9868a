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
}
