// Package messages holds the Go types that actors send each other. Replies
// travel through Reply callbacks rather than protoactor futures (which have
// known data races and cost an allocation-heavy round trip on hot paths): a
// callback must be cheap and must never block (send to a buffered channel or
// to another actor).
package messages

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/storage"
)

// notLeader is the retriable answer of a request whose partition actor is
// gone (released between routing and delivery): the client refreshes its
// metadata and retries at the new leader.
var notLeader = kerr.NotLeaderForPartition.Code

// TakeLeadership tells a partition actor it leads the partition from now on,
// under LeaderEpoch. The actor opens and recovers its log.
type TakeLeadership struct {
	TopicID     string
	LeaderEpoch int32
	Config      map[string]string
	// Opened, when set, is called once the open this Take starts has
	// finished, whether it succeeded or not (the supervisor reports the
	// partition as no longer opening: the controller's move budget).
	Opened func(err error)
}

// RelinquishLeadership tells a partition actor to flush, close its files and
// stop serving. Done is called once every descriptor is closed.
type RelinquishLeadership struct {
	// Delete removes the partition's data after closing (DeleteTopics).
	Delete bool
	Done   func(err error)
}

// BrokerDefaultsChanged tells a supervisor that the broker defaults of
// topic configs (dynamic broker configs) changed: it sends every partition
// it leads its topic's config over the new defaults.
type BrokerDefaultsChanged struct{}

// UpdateConfig replaces a partition's topic config (AlterConfigs).
type UpdateConfig struct {
	Config map[string]string
}

// Produce appends one produced record batch.
type Produce struct {
	Batch []byte
	Acks  int16
	Reply func(ProduceResult)
	// TransactionalID is the request's transactional id ("" for none).
	TransactionalID string
	// Verify asks the transaction coordinator whether a transactional
	// batch's partition is part of its producer's ongoing transaction
	// (KIP-890 verification); nil when no coordinator runs.
	Verify func(VerifyTxn)
	// AddToTxn (Produce v12+, the transaction protocol v2 of KIP-890 part
	// 2) makes the verification an add: the producer sent no
	// AddPartitionsToTxn, so the coordinator adds the partition to its
	// transaction, starting one if none is ongoing.
	AddToTxn bool
	// Abortable (Produce v11+, KIP-1050) lets a refused verification be
	// answered TRANSACTION_ABORTABLE rather than INVALID_TXN_STATE.
	Abortable bool
}

// VerifyTxn asks the transaction coordinator of TransactionalID whether
// Topic/Partition is part of the ongoing transaction of ProducerID at
// Epoch (AddPartitionsToTxn with VerifyOnly), or with Add adds it to that
// transaction (Produce.AddToTxn). Reply is called exactly once, from any
// goroutine, with 0 or the coordinator's error code.
type VerifyTxn struct {
	TransactionalID string
	ProducerID      int64
	Epoch           int16
	Topic           string
	Partition       int32
	Add             bool
	Reply           func(errorCode int16)
}

// ProduceResult answers Produce.
type ProduceResult struct {
	ErrorCode      int16
	ErrorMessage   string
	BaseOffset     int64
	LogAppendTime  int64
	LogStartOffset int64
	// RecordErrors name the records of a refused batch that caused the
	// refusal (Produce v8+ record_errors), so a client fails those with
	// the error and retries or fails the others apart (KIP-467).
	RecordErrors []RecordError
}

// RecordError is one refused record of a batch: its index in the batch.
type RecordError struct {
	BatchIndex int32
	Message    string
}

// Fetch reads records from one partition.
type Fetch struct {
	Offset             int64
	MaxBytes           int32
	CurrentLeaderEpoch int32 // -1 = not checked
	LastFetchedEpoch   int32 // -1 = not checked (Fetch v12+ divergence check)
	// IsolationLevel 1 (read_committed) reads up to the last stable
	// offset and lists the aborted transactions in the result.
	IsolationLevel int8
	Reply          func(FetchResult)
}

// FetchResult answers Fetch. Records must be closed by the receiver.
type FetchResult struct {
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Records          storage.Records
	// DivergingEpoch is set when LastFetchedEpoch shows the fetcher's log
	// diverged from this one (KIP-320).
	DivergingEpoch     int32
	DivergingEndOffset int64
	Diverging          bool
	LeaderEpoch        int32
	// Aborted are the aborted transactions a read_committed fetch
	// overlaps.
	Aborted []AbortedTxn
}

// AbortedTxn is one aborted transaction of a partition: the producer and
// the offset of its first batch there.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// TxnOffsetsEnd tells a group's coordinator that the transaction of
// ProducerID ended: its transactional offset commits (TxnOffsetCommit)
// become the group's committed offsets (Commit) or are dropped.
type TxnOffsetsEnd struct {
	Group         string
	ProducerID    int64
	ProducerEpoch int16
	Commit        bool
	// Bumped as in WriteTxnMarker.
	Bumped bool
	Reply  func(errorCode int16)
}

func (m *TxnOffsetsEnd) Undelivered() { m.Reply(kerr.CoordinatorNotAvailable.Code) }

// groupMarkerPrefix starts the topic name that carries a consumer group in
// a WriteTxnMarkers request between brokers (Kafka writes such markers to
// the group's __consumer_offsets partition; here each group has its own
// log). ':' is not allowed in topic names, so no topic has such a name.
const groupMarkerPrefix = "__consumer_offsets:"

// GroupMarkerTopic is the WriteTxnMarkers topic name of group's marker.
func GroupMarkerTopic(group string) string { return groupMarkerPrefix + group }

// GroupOfMarkerTopic returns the group a WriteTxnMarkers topic name
// carries, if it is a GroupMarkerTopic.
func GroupOfMarkerTopic(topic string) (string, bool) {
	return strings.CutPrefix(topic, groupMarkerPrefix)
}

// WriteTxnMarker asks a partition's leader to append a transaction's commit
// or abort marker and make it durable (the transaction coordinator, after
// EndTxn or a timeout). ErrorCode 0: written (or nothing of the producer's
// transaction was open there, and the epoch is fenced all the same).
type WriteTxnMarker struct {
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// Bumped: the marker's epoch is one past every write of the
	// transaction it ends (the coordinator bumped the epoch when it
	// prepared the end), so a transaction open at that very epoch is a
	// later one, which this marker must not end. WriteTxnMarkers v2
	// carries it as TransactionVersion 2 (KIP-1228).
	Bumped bool
	Reply  func(errorCode int16)
}

// MarkerFenced reports whether a transaction participant (a partition, a
// group's offsets) refuses a marker at epoch (INVALID_PRODUCER_EPOCH) when
// the marker's producer last wrote there at written, with a transaction
// open there or not. Below written the marker is older than the
// producer's writes. A bumped marker at written itself, with a
// transaction open, belongs to an earlier transaction than the open one
// (the next transaction runs at the epoch its predecessor's marker
// carried), and must not end it: a retry or a request delayed between
// brokers (KIP-1228).
func MarkerFenced(epoch, written int16, bumped, open bool) bool {
	return epoch < written || bumped && open && epoch == written
}

// WatchHighWatermark asks a partition actor to call Notify once its high
// watermark moves past Offset (or at once if it already has, or if the
// partition stops being led). Fetch long polling uses it.
type WatchHighWatermark struct {
	Offset int64
	// Committed watches the last stable offset instead (read_committed).
	Committed bool
	Notify    func()
	// Abandoned reports that the watcher no longer needs the call (its
	// fetch was answered); the partition drops such watchers, so a
	// partition nobody writes to does not collect one per long poll.
	// Nil: never abandoned.
	Abandoned func() bool
}

// ListOffsets resolves a timestamp (or -1 latest, -2 earliest, -3 max
// timestamp) to an offset.
type ListOffsets struct {
	Timestamp          int64
	CurrentLeaderEpoch int32
	IsolationLevel     int8
	Reply              func(ListOffsetsResult)
}

// ListOffsetsResult answers ListOffsets.
type ListOffsetsResult struct {
	ErrorCode   int16
	Timestamp   int64
	Offset      int64
	LeaderEpoch int32
}

// OffsetForLeaderEpoch asks for the end offset of a leader epoch.
type OffsetForLeaderEpoch struct {
	CurrentLeaderEpoch int32
	LeaderEpoch        int32
	Reply              func(OffsetForLeaderEpochResult)
}

// OffsetForLeaderEpochResult answers OffsetForLeaderEpoch.
type OffsetForLeaderEpochResult struct {
	ErrorCode   int16
	LeaderEpoch int32
	EndOffset   int64
}

// DeleteRecords moves the log start offset up to Offset (-1 = high watermark).
type DeleteRecords struct {
	Offset int64
	Reply  func(DeleteRecordsResult)
}

// DeleteRecordsResult answers DeleteRecords.
type DeleteRecordsResult struct {
	ErrorCode    int16
	LowWatermark int64
}

// PartitionStatus asks for a snapshot of a partition's offsets (tests,
// /healthz, /metrics) and, with MeasureSize, its log's size
// (DescribeLogDirs, /metrics).
type PartitionStatus struct {
	// MeasureSize also sums the log's segment sizes into Size (a walk of
	// its segments; a sealed segment not read since the log opened is
	// read first).
	MeasureSize bool
	Reply       func(PartitionStatusResult)
}

// PartitionStatusResult answers PartitionStatus.
type PartitionStatusResult struct {
	Leading        bool
	LeaderEpoch    int32
	LogStartOffset int64
	HighWatermark  int64
	LogEndOffset   int64
	// Size is the log's size in bytes when MeasureSize asked for it and
	// the partition is led here (0 otherwise).
	Size int64
}

// DescribeProducers asks a partition's leader for the idempotent producers
// it remembers.
type DescribeProducers struct {
	Reply func(DescribeProducersResult)
}

// DescribeProducersResult answers DescribeProducers.
type DescribeProducersResult struct {
	ErrorCode int16
	Producers []ProducerState
}

// ProducerState is one remembered producer; LastSequence and LastTimestamp
// are -1 when none of its batches is remembered.
type ProducerState struct {
	ProducerID    int64
	ProducerEpoch int16
	LastSequence  int32
	LastTimestamp int64
	// TxnStartOffset is the first offset of its open transaction, or -1.
	TxnStartOffset int64
}

// Undelivered answers requests whose actor had stopped (actorsys.Undeliverable).

func (m *Produce) Undelivered() {
	m.Reply(ProduceResult{ErrorCode: notLeader, BaseOffset: -1, LogAppendTime: -1, LogStartOffset: -1})
}

func (m *Fetch) Undelivered() {
	m.Reply(FetchResult{ErrorCode: notLeader, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: -1})
}

func (m *WatchHighWatermark) Undelivered() { m.Notify() }

func (m *WriteTxnMarker) Undelivered() { m.Reply(notLeader) }

func (m *ListOffsets) Undelivered() {
	m.Reply(ListOffsetsResult{ErrorCode: notLeader, Timestamp: -1, Offset: -1, LeaderEpoch: -1})
}

func (m *OffsetForLeaderEpoch) Undelivered() {
	m.Reply(OffsetForLeaderEpochResult{ErrorCode: notLeader, LeaderEpoch: -1, EndOffset: -1})
}

func (m *DeleteRecords) Undelivered() {
	m.Reply(DeleteRecordsResult{ErrorCode: notLeader, LowWatermark: -1})
}

func (m *PartitionStatus) Undelivered() { m.Reply(PartitionStatusResult{}) }

func (m *DescribeProducers) Undelivered() { m.Reply(DescribeProducersResult{ErrorCode: notLeader}) }

// Undelivered: an actor that is gone holds no files any more.
func (m *RelinquishLeadership) Undelivered() {
	if m.Done != nil {
		m.Done(nil)
	}
}
