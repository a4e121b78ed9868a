package controller

import (
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
)

// Event is an input of the controller core (Core.Step): a broker's ping, the
// topic set, the tick, or the result of work an earlier Effect asked for.
// The shell sends results to its own mailbox, so they are stepped in the
// order they arrive, like any message.
type Event interface{ isEvent() }

// Effect is work the core asks its shell to do: file I/O, Lease checks,
// pushes to brokers and messages to itself or its parent. The shell executes
// a Step's effects in order; results come back as events.
type Effect interface{ isEffect() }

// Events (BrokerPing and TopicsChanged, the actor's messages, are events
// too).
type (
	// Start is the actor's start: the inherited file (Core's prev) is in
	// force from now.
	Start struct{}
	// Tick is the periodic alive-set check (Config.Tick).
	Tick struct{}
	// RecomputeNow runs the recompute a SendRecompute queued, after every
	// ping that was in the mailbox before it.
	RecomputeNow struct{ Why string }
	// Written: the write of A ended (Err nil) once its rename was visible,
	// or failed before it. LeaseLost: the Lease check refused it because
	// another holder or epoch has the Lease.
	Written struct {
		A         *assignment.Assignment
		Err       error
		LeaseLost bool
	}
	// DirSyncFailed: the file of Version was renamed into place (and acted
	// on) but its directory's fsync failed, so the rename may not survive a
	// crash.
	DirSyncFailed struct {
		Version int64
		Err     error
	}
	// HeaderRead is the epoch and version ReadHeader found on the volume.
	HeaderRead struct {
		Epoch, Version int64
		Err            error
	}
	// PartitionsListed is the data directory's listing ListPartitions asked
	// for.
	PartitionsListed struct {
		IDs []storage.PartitionID
		Err error
	}
	// StraysRemoved is the end of RemoveStrays: the directories removed, or
	// the Lease check's error (nothing removed).
	StraysRemoved struct {
		IDs []storage.PartitionID
		Err error
	}
	// UnregisterBroker removes a dead broker's row from the registered set
	// (Kafka's UnregisterBroker, for a broker gone for good): Reply gets a
	// Kafka error code and message (AnswerUnregister), at once when
	// refused, else once a file without the row is written.
	UnregisterBroker struct {
		ID    int32
		Reply func(code int16, msg string)
	}
	// DescribeQuorum asks for every registered broker's progress through
	// the assignment files (AnswerQuorum).
	DescribeQuorum struct {
		Reply func(*heartbeatpb.DescribeQuorumResponse)
	}
	// ReplicasChanged is the StatefulSet's spec.replicas (Known false: no
	// StatefulSet, or it cannot be read). A dead broker whose ordinal is
	// not below it was removed by a scale-down and is unregistered.
	ReplicasChanged struct {
		Replicas int32
		Known    bool
	}
)

func (*BrokerPing) isEvent()       {}
func (*TopicsChanged) isEvent()    {}
func (Start) isEvent()             {}
func (Tick) isEvent()              {}
func (RecomputeNow) isEvent()      {}
func (Written) isEvent()           {}
func (DirSyncFailed) isEvent()     {}
func (HeaderRead) isEvent()        {}
func (PartitionsListed) isEvent()  {}
func (StraysRemoved) isEvent()     {}
func (*UnregisterBroker) isEvent() {}
func (ReplicasChanged) isEvent()   {}
func (*DescribeQuorum) isEvent()   {}

// Effects.
type (
	// SendRecompute queues RecomputeNow behind the mailbox's pings.
	SendRecompute struct{ Why string }
	// WriteFile writes A (Lease check beside it, rename after both) and
	// reports Written once the rename is visible or the write failed, then
	// DirSyncFailed if the directory's fsync fails after the rename.
	WriteFile struct{ A *assignment.Assignment }
	// ReadHeader reads the assignment file's header (HeaderRead).
	ReadHeader struct{}
	// ListPartitions lists the data directory's partitions
	// (PartitionsListed).
	ListPartitions struct{}
	// RemoveStrays confirms the Lease, then removes IDs' directories
	// (StraysRemoved).
	RemoveStrays struct{ IDs []storage.PartitionID }
	// SetWritten tells the hub the newest file, named in every PONG.
	SetWritten struct{ Epoch, Version int64 }
	// PushChanged pushes ASSIGNMENT_CHANGED to every broker's stream.
	PushChanged struct{ Epoch, Version int64 }
	// ReportLeaseLost tells the parent that the Lease moved on (LeaseLost):
	// it stops the controller.
	ReportLeaseLost struct{}
	// AnswerQuorum calls a DescribeQuorum's Reply.
	AnswerQuorum struct {
		Reply func(*heartbeatpb.DescribeQuorumResponse)
		Q     *heartbeatpb.DescribeQuorumResponse
	}
	// AnswerUnregister calls an UnregisterBroker's Reply.
	AnswerUnregister struct {
		Reply func(code int16, msg string)
		Code  int16
		Msg   string
	}
)

func (SendRecompute) isEffect()    {}
func (WriteFile) isEffect()        {}
func (ReadHeader) isEffect()       {}
func (ListPartitions) isEffect()   {}
func (RemoveStrays) isEffect()     {}
func (SetWritten) isEffect()       {}
func (PushChanged) isEffect()      {}
func (ReportLeaseLost) isEffect()  {}
func (AnswerUnregister) isEffect() {}
func (AnswerQuorum) isEffect()     {}
