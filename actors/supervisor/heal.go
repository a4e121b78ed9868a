package supervisor

import (
	"fmt"
	"time"

	"github.com/kaas-project/kaas/actors/heal"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/assignment"
)

// The supervisor core's part of the supervision tree: partition actors and
// the controller that die while this broker still needs them are spawned
// again, with the backoff of heal.Partitions and heal.Controllers.

// Events.
type (
	// PartitionDied: partition actor Gen stopped without being retired
	// (a panic, a Stop); its Stopping handler closed its log. Reason is
	// "panic" or "stopped".
	PartitionDied struct {
		TP     routing.TP
		Gen    uint64
		Reason string
	}
	// RespawnDue: the backoff of a partition that died as Gen is over.
	RespawnDue struct {
		TP  routing.TP
		Gen uint64
	}
	// ControllerDied: controller incarnation Seq stopped while this broker
	// still holds the Lease.
	ControllerDied struct {
		Seq    uint64
		Reason string
	}
	// ControllerRestartDue: the backoff of controller Seq is over.
	ControllerRestartDue struct{ Seq uint64 }
	// ControllerReloaded: the shell read the file on the volume (Prev) for
	// the restart of controller Seq.
	ControllerReloaded struct {
		Seq  uint64
		Prev *assignment.Assignment
	}
)

func (PartitionDied) isEvent()        {}
func (RespawnDue) isEvent()           {}
func (ControllerDied) isEvent()       {}
func (ControllerRestartDue) isEvent() {}
func (ControllerReloaded) isEvent()   {}

// Effects.
type (
	// Restarted reports a death handled (logged and counted by the shell):
	// Kind "partition" or "controller", Key the partition or the epoch,
	// Delay the backoff before the new incarnation, Recent the restarts
	// within the policy's window before this one.
	Restarted struct {
		Kind, Key, Reason string
		Delay             time.Duration
		Recent            int
	}
	// ReloadController asks the shell to read the assignment file off the
	// actor's goroutine and answer ControllerReloaded.
	ReloadController struct{ Seq uint64 }
	// GiveUp: a child the broker cannot serve without keeps dying; the
	// shell ends the process (its Lease expires and another broker takes
	// over; Kubernetes restarts the pod).
	GiveUp struct{ Kind, Reason string }
)

func (Restarted) isEffect()        {}
func (ReloadController) isEffect() {}
func (GiveUp) isEffect()           {}

// stepHeal handles the supervision events.
func (c *Core) stepHeal(ev Event, now time.Time) []Effect {
	switch e := ev.(type) {
	case PartitionDied:
		return c.partitionDied(e, now)
	case RespawnDue:
		lp, ok := c.parts[e.TP]
		if !ok || !lp.down || lp.gen != e.Gen || c.current == nil {
			return nil
		}
		delete(c.parts, e.TP)
		ref, ok := c.leads(e.TP)
		if !ok || ref.TopicID != lp.topicID {
			return []Effect{RefreshPing{Send: true}}
		}
		return []Effect{c.take(ref, configOf(c.current, ref.Topic)), Publish{}}
	case ControllerDied:
		if c.ctrlSeq == 0 || c.ctrlSeq != e.Seq {
			return nil // stopped on purpose (deposed, a new election)
		}
		d := c.ctrlHeal.Died("controller", now)
		key := fmt.Sprintf("epoch %d", c.ctrlEpoch)
		if !d.Restart {
			c.ctrlSeq = 0
			return []Effect{Restarted{Kind: "controller", Key: key, Reason: "gave_up", Recent: d.Recent},
				GiveUp{Kind: "controller", Reason: fmt.Sprintf("controller died %d times within %s", d.Recent+1, c.ctrlHeal.Window())}}
		}
		return []Effect{Restarted{Kind: "controller", Key: key, Reason: e.Reason, Delay: d.Delay, Recent: d.Recent},
			After{D: d.Delay, Event: ControllerRestartDue{Seq: e.Seq}}}
	case ControllerRestartDue:
		if c.ctrlSeq == e.Seq {
			return []Effect{ReloadController{Seq: e.Seq}}
		}
	case ControllerReloaded:
		if c.ctrlSeq == e.Seq {
			c.lastCtrl++
			c.ctrlSeq = c.lastCtrl
			return []Effect{StartController{Epoch: c.ctrlEpoch, Seq: c.ctrlSeq, Prev: e.Prev, PrevReleased: c.ctrlPrevReleased}, Publish{}}
		}
	}
	return nil
}

// partitionDied respawns a partition this broker still leads, after the
// backoff; one that was releasing counts as released (its Stopping handler
// closed the log).
func (c *Core) partitionDied(e PartitionDied, now time.Time) []Effect {
	lp, ok := c.parts[e.TP]
	if !ok || lp.gen != e.Gen || lp.down {
		return nil
	}
	if lp.releasing {
		return c.released(Released{TP: e.TP, Gen: e.Gen})
	}
	key := fmt.Sprintf("%s/%d", e.TP.Topic, e.TP.Partition)
	d := c.partHeal.Died(key, now)
	// Down: listed in the heartbeat as opening (the controller counts it
	// as still moving), routed nowhere until the new incarnation runs.
	lp.down, lp.opening = true, true
	lp.retake = nil
	return []Effect{Restarted{Kind: "partition", Key: key, Reason: e.Reason, Delay: d.Delay, Recent: d.Recent},
		After{D: d.Delay, Event: RespawnDue{TP: e.TP, Gen: e.Gen}}, Publish{}, RefreshPing{}}
}

// healTrackers are the core's restart histories.
type healTrackers struct {
	partHeal *heal.Tracker
	ctrlHeal *ctrlTracker
}

// ctrlTracker is the controller's tracker with its policy's window.
type ctrlTracker struct {
	*heal.Tracker
	window time.Duration
}

func (t *ctrlTracker) Window() time.Duration { return t.window }

func newHealTrackers(cfg CoreConfig) healTrackers {
	pp, cp := heal.Partitions, heal.Controllers
	if cfg.PartitionRestarts != nil {
		pp = *cfg.PartitionRestarts
	}
	if cfg.ControllerRestarts != nil {
		cp = *cfg.ControllerRestarts
	}
	return healTrackers{partHeal: heal.NewTracker(pp), ctrlHeal: &ctrlTracker{Tracker: heal.NewTracker(cp), window: cp.Window}}
}
