package partition

import (
	"time"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
)

// Event is an input of the partition core (Core.Step): a request, or the
// result of work an earlier Effect asked for. The shell fills in what it
// read from the log (Durable, LogEnd) when it turns a message into an event.
type Event interface{ isEvent() }

// Effect is work the core asks its shell to do: storage I/O, timers and
// replies. The shell executes a Step's effects in order, before the next
// event; results come back as events.
type Effect interface{ isEffect() }

// Events.
type (
	// Take makes this broker the partition's leader at Msg.LeaderEpoch.
	Take struct{ Msg *messages.TakeLeadership }
	// Relinquish gives the partition up. Fenced: the broker was fenced
	// when the release arrived (it writes nothing more beside the log).
	Relinquish struct {
		Delete, Fenced bool
		Done           func(error)
	}
	// Opened is the result of Open. Durable and LogEnd are the opened
	// log's (zero on error). DurableOnAppend: the log is durable as soon
	// as written (memory), with no group commit to run and no claim to
	// check.
	Opened struct {
		Gen             uint64
		Epoch           int32 // the leader epoch the open stamped
		Log             storage.Log
		Producers       *Producers
		Err             error
		Durable         int64
		LogEnd          int64
		DurableOnAppend bool
	}
	// RetryOpen is the timer after a failed open.
	RetryOpen struct{ Gen uint64 }
	// Synced is the result of Sync; LogEnd is the log's end when the
	// result is handled.
	Synced struct {
		Gen, Seq uint64
		UpTo     int64
		Err      error
		LogEnd   int64
	}
	// WatchdogFired is the timer of the group commit Seq.
	WatchdogFired struct{ Gen, Seq uint64 }
	// Closed is the result of Close.
	Closed struct {
		Gen  uint64
		UpTo int64
		Err  error
		Done func(error)
		Took time.Duration
	}
	// MaintenanceTick is the retention timer.
	MaintenanceTick struct{ Gen uint64 }
	// Request is a client request (*messages.Produce, Fetch, ListOffsets,
	// OffsetForLeaderEpoch, DeleteRecords or WatchHighWatermark).
	Request struct{ Msg any }
	// Produced is a produce the shell admitted and validated: appended
	// (Appended) or found to be a duplicate. End is the offset after its
	// batch: an acks=all produce is answered Result once the high
	// watermark reaches it. LogEnd and Durable are the log's after it.
	Produced struct {
		AcksAll, Appended bool
		// Marker: the batch is a transaction marker (the last stable
		// offset may move).
		Marker          bool
		End             int64
		Result          messages.ProduceResult
		Reply           func(messages.ProduceResult)
		LogEnd, Durable int64
	}
	// AppendFailed: the log refused an append; writes are refused until
	// RetryWrites.
	AppendFailed struct{}
	// RetryWrites is the timer after a failed append.
	RetryWrites struct{ Gen uint64 }
	// Stop is the actor stopping without a release (system shutdown).
	Stop struct{}
)

// Effects.
type (
	// Open opens and recovers the log for Take (on the handoff pool) and
	// answers Opened{Gen}.
	Open struct {
		Gen  uint64
		Take *messages.TakeLeadership
	}
	// AbortOpen tells the open in flight it was relinquished: it must not
	// stamp its epoch on the files.
	AbortOpen struct{}
	// Discard closes a log a stale open produced.
	Discard struct{ Log storage.Log }
	// Close writes the producer snapshot (unless Del or Fenced), releases
	// (or, Del, closes and removes) Log and answers Closed{Gen}; UpTo is
	// HW if the log was superseded at Epoch.
	Close struct {
		Gen         uint64
		Log         storage.Log
		Producers   *Producers
		Epoch       int32
		HW          int64
		Del, Fenced bool
		Done        func(error)
	}
	// CloseNow syncs and closes Log inline (the actor is stopping).
	CloseNow struct{ Log storage.Log }
	// Remove deletes the partition's files and reports to Done.
	Remove struct{ Done func(error) }
	// AssignEpoch stamps Epoch on the log from its end.
	AssignEpoch struct{ Epoch int32 }
	// ApplyConfig is a topic configuration to use.
	ApplyConfig struct{ Config map[string]string }
	// Sync starts a group commit (an fsync) answered by Synced{Gen, Seq}.
	Sync struct {
		Gen, Seq uint64
		Epoch    int32 // Synced fails with errSuperseded if a newer claim exists
		Log      storage.Log
	}
	// ArmWatchdog starts the group commit's watchdog: WatchdogFired{Gen,
	// Seq} after After, unless DisarmWatchdog comes first.
	ArmWatchdog struct {
		After    time.Duration
		Gen, Seq uint64
	}
	// DisarmWatchdog stops the watchdog armed last.
	DisarmWatchdog struct{}
	// After delivers Event to the core after D.
	After struct {
		D     time.Duration
		Event Event
	}
	// Serve has the shell answer Msg (a Request) from the core's state now.
	Serve struct{ Msg any }
	// Reply answers a produce.
	Reply struct {
		To     func(messages.ProduceResult)
		Result messages.ProduceResult
	}
	// Notify wakes a high-watermark watcher.
	Notify struct{ Watch messages.WatchHighWatermark }
	// Report calls a Take's Opened or a Relinquish's Done.
	Report struct {
		To  func(error)
		Err error
	}
	// Maintain enforces retention and expires idle producers.
	Maintain struct{}
)

func (Take) isEvent()            {}
func (Relinquish) isEvent()      {}
func (Opened) isEvent()          {}
func (RetryOpen) isEvent()       {}
func (Synced) isEvent()          {}
func (WatchdogFired) isEvent()   {}
func (Closed) isEvent()          {}
func (MaintenanceTick) isEvent() {}
func (Request) isEvent()         {}
func (Produced) isEvent()        {}
func (AppendFailed) isEvent()    {}
func (RetryWrites) isEvent()     {}
func (Stop) isEvent()            {}

func (Open) isEffect()           {}
func (AbortOpen) isEffect()      {}
func (Discard) isEffect()        {}
func (Close) isEffect()          {}
func (CloseNow) isEffect()       {}
func (Remove) isEffect()         {}
func (AssignEpoch) isEffect()    {}
func (ApplyConfig) isEffect()    {}
func (Sync) isEffect()           {}
func (ArmWatchdog) isEffect()    {}
func (DisarmWatchdog) isEffect() {}
func (After) isEffect()          {}
func (Serve) isEffect()          {}
func (Reply) isEffect()          {}
func (Notify) isEffect()         {}
func (Report) isEffect()         {}
func (Maintain) isEffect()       {}
