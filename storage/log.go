// Package storage defines the seams between partition actors and the bytes on
// disk (or in memory): a Log per partition, and an Opener that creates them.
// Engines live in sub-packages: memlog (local-dev, in memory) and disklog
// (segment files on the shared volume).
package storage

import (
	"errors"
	"io"
	"time"

	"github.com/kaas-project/kaas/storage/batch"
)

// ErrOffsetOutOfRange is returned by Read for an offset outside
// [StartOffset, NextOffset].
var ErrOffsetOutOfRange = errors.New("offset out of range")

// ErrClosed is returned by any call on a closed log.
var ErrClosed = errors.New("log closed")

// LogConfig is the part of a topic's configuration that a log engine obeys.
// Zero values mean "engine default" except where noted.
type LogConfig struct {
	SegmentBytes int64         // segment.bytes
	SegmentMs    time.Duration // segment.ms
	// SegmentJitter is segment.jitter.ms: each segment rolls by time up to
	// this much (at most SegmentMs) before SegmentMs, at random, so that
	// partitions created together do not all roll at once.
	SegmentJitter time.Duration
	// FileDeleteDelay is file.delete.delay.ms: how long a segment file the
	// log deletes stays renamed aside, still readable through descriptors
	// open elsewhere (another broker's read over NFS), before it is
	// unlinked. Negative: at once (Kafka's 0). Zero is the engine's default,
	// as for the other fields, so that a LogConfig built by hand (tests,
	// tools), which carries no topic config, keeps the engine's own delay;
	// topicconfig.LogConfig always sets it.
	FileDeleteDelay time.Duration
	// RetentionMs is retention.ms and RetentionBytes retention.bytes, by
	// the same rule: zero is no limit (Kafka's -1), negative keeps nothing
	// (Kafka's 0: every segment goes, the active one too, as Expired and
	// Oversize tell).
	RetentionMs    time.Duration
	RetentionBytes int64
	IndexInterval  int32 // index.interval.bytes
	// Claim, when set, makes Open record ClaimEpoch as the partition's
	// leader before it reads anything (a shared-volume fencing token; see
	// Log.Superseded). Open fails if a higher epoch has claimed it.
	Claim      bool
	ClaimEpoch int32
}

// Expired tells whether retention.ms has passed, at now, a segment whose
// newest record has timestamp newest (Unix ms): Kafka deletes a segment
// once now - newest > retention.ms.
func (c LogConfig) Expired(newest int64, now time.Time) bool {
	if c.RetentionMs == 0 {
		return false
	}
	return now.UnixMilli()-newest > max(c.RetentionMs.Milliseconds(), 0)
}

// Oversize tells whether retention.bytes deletes the oldest segment, of
// size bytes, of a log of total bytes: as Kafka, while what remains
// without it still holds retention.bytes. Kafka's 0 deletes every segment.
func (c LogConfig) Oversize(total, size int64) bool {
	if c.RetentionBytes == 0 {
		return false
	}
	return total-size >= max(c.RetentionBytes, 0)
}

// EpochEntry is one row of the leader-epoch cache: the first offset written
// under a leader epoch.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Records is what Read returns: whole record batches, held in memory or as a
// range of a segment file. It must be closed once written or copied.
type Records interface {
	// Len is the number of bytes.
	Len() int
	// AppendTo appends the bytes to dst (a copying path for small responses).
	AppendTo(dst []byte) ([]byte, error)
	// WriterTo writes the bytes to a connection; a file-backed
	// implementation uses sendfile when w is a *net.TCPConn.
	io.WriterTo
	// Close releases any file reference held by the records.
	Close() error
}

// Log is one partition's record log. It is owned by one partition actor:
// every method may be called only from that owner, except Read, Sync and
// Durable, which must also be safe from other goroutines concurrently with
// Append (the owner hands slow disk work to goroutines).
type Log interface {
	// Append appends one validated batch whose base offset the caller has
	// set to NextOffset(). It returns once the bytes are written (page cache
	// for a disk log), not necessarily durable.
	Append(b []byte, h batch.Header) error
	// NextOffset is the log end offset: the offset the next batch gets.
	NextOffset() int64
	// StartOffset is the log start offset.
	StartOffset() int64
	// Sync makes every batch appended before the call durable and returns
	// the offset up to which the log is now durable (exclusive).
	Sync() (int64, error)
	// Durable is the offset up to which the log is known durable
	// (exclusive) without syncing. After Open it may be below NextOffset:
	// a tail the previous leader wrote but did not sync (Release, or a
	// crash) is kept and becomes durable with the first Sync.
	Durable() int64
	// Read returns whole batches starting with the batch that contains
	// offset, at most maxBytes (but at least one batch when one exists below
	// limit), never a batch whose base offset is >= limit.
	// offset == NextOffset (or >= limit) gives empty Records.
	Read(offset int64, maxBytes int, limit int64) (Records, error)
	// FindTimestamp returns the first batch, below limit and ending past
	// both from and the log start, whose max timestamp is >= ts, as raw
	// bytes; ok is false if there is none.
	FindTimestamp(ts, from, limit int64) (b []byte, ok bool, err error)
	// MaxTimestamp returns the largest batch max-timestamp below limit and
	// the base offset of the batch carrying it (-1, -1 when empty).
	MaxTimestamp(limit int64) (ts int64, offset int64, err error)
	// SetStartOffset advances the log start offset (DeleteRecords); whole
	// segments below it may be dropped.
	SetStartOffset(off int64) error
	// EnforceRetention applies retention.ms / retention.bytes and segment.ms
	// rolling as of now; the owner calls it periodically.
	EnforceRetention(now time.Time) error
	// SetConfig changes the log's configuration (AlterConfigs).
	SetConfig(cfg LogConfig)
	// AssignEpoch records that batches from startOffset on are written under
	// leader epoch epoch (persisted by a disk log). Epochs never go down.
	AssignEpoch(epoch int32, startOffset int64) error
	// Size is the log's size in bytes: the sum of its segments' sizes
	// (DescribeLogDirs).
	Size() int64
	// Epochs returns the leader-epoch cache, oldest first.
	Epochs() []EpochEntry
	// ScanHeaders calls fn for the header of every batch from the one
	// containing offset from on, in order (recovery of producer state).
	ScanHeaders(from int64, fn func(h batch.Header) error) error
	// WriteSnapshot durably stores a small named blob beside the log (for
	// example producer state); ReadSnapshot returns nil, nil when absent.
	WriteSnapshot(name string, data []byte) error
	// Superseded reports whether a leader with an epoch above epoch has
	// claimed the partition since (Open with LogConfig.Claim). A leader
	// checks it after each Sync, before acknowledging: if it did not see the
	// claim, the claimant's Open (which reads the log after claiming) sees
	// every batch that Sync made durable, so an acknowledged batch is never
	// lost to a leader change, however long this process stalled.
	Superseded(epoch int32) bool
	ReadSnapshot(name string) ([]byte, error)
	// Close flushes and closes every file handle. The log is unusable after.
	Close() error
	// Release closes the log for a leadership handoff: like Close, but the
	// tail appended since the last Sync is left for the next opener's
	// first Sync instead of being made durable now, and a Sync in flight
	// is not waited for. Durable() afterwards says what was made durable.
	Release() error
}

// PartitionID names one partition's log. TopicID is the topic's incarnation
// (a UUID), so a deleted-and-recreated topic never reuses old data.
type PartitionID struct {
	Topic     string
	TopicID   string
	Partition int32
}

// Opener opens (creating if needed, recovering if present) partition logs.
type Opener interface {
	Open(id PartitionID, cfg LogConfig) (Log, error)
	// Remove deletes a partition's data (DeleteTopics). The log must be closed.
	Remove(id PartitionID) error
	// Persistent reports whether data survives a process restart.
	Persistent() bool
}

// BytesRecords is an in-memory Records.
type BytesRecords []byte

// Len implements Records.
func (r BytesRecords) Len() int { return len(r) }

// AppendTo implements Records.
func (r BytesRecords) AppendTo(dst []byte) ([]byte, error) { return append(dst, r...), nil }

// WriteTo implements io.WriterTo.
func (r BytesRecords) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r)
	return int64(n), err
}

// Close implements Records.
func (r BytesRecords) Close() error { return nil }
