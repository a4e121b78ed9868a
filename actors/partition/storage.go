package partition

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// The storage work the shell runs for the core's Open, Close and Sync
// effects, off the actor's goroutine; each returns the event that answers it.

// openLog opens and recovers the log for op, claims it and stamps its epoch.
func openLog(id storage.PartitionID, cfg *Config, log zerolog.Logger, op Open, abort *atomic.Bool) Opened {
	epoch := op.Take.LeaderEpoch
	logCfg := topicconfig.LogConfig(op.Take.Config)
	logCfg.Claim, logCfg.ClaimEpoch = true, epoch
	start := cfg.Clock.Now()
	l, err := cfg.Opener.Open(id, logCfg)
	var prods *Producers
	var scanFrom int64 // where the rebuild of the producer table read the log from
	var hadSnapshot bool
	if err == nil {
		prods, scanFrom, hadSnapshot, err = recoverProducers(l, topicconfig.Compacted(op.Take.Config))
		if err == nil {
			err = waitToStamp(cfg.Clock, cfg.Fence, abort)
		}
		if err == nil && l.Superseded(epoch) {
			err = errSuperseded // a newer leader opened it meanwhile
		}
		if err == nil {
			err = l.AssignEpoch(epoch, l.NextOffset())
		}
		if err == nil && !hadSnapshot && cfg.Opener.Persistent() {
			// Create the snapshot file now (a new partition's first
			// open), so that the release of a drain overwrites it in
			// place instead of creating a thousand files on its path.
			if werr := writeProducerSnapshot(l, prods); werr != nil {
				log.Warn().Err(werr).Msg("write producer snapshot")
			}
		}
		if err != nil {
			_ = l.Close()
		}
	}
	if err != nil {
		return Opened{Gen: op.Gen, Epoch: epoch, Err: fmt.Errorf("open partition %s-%d: %w", id.Topic, id.Partition, err)}
	}
	// Debug: a move logs one line per partition; the supervisor logs each
	// assignment applied with its counts at Info.
	log.Debug().Int32("leader_epoch", epoch).Int64("log_start", l.StartOffset()).Int64("log_end", l.NextOffset()).
		Int64("producers_scanned_from", scanFrom).Dur("took", cfg.Clock.Since(start)).Msg("partition opened")
	return Opened{Gen: op.Gen, Epoch: epoch, Log: l, Producers: prods, Durable: l.Durable(), LogEnd: l.NextOffset(),
		DurableOnAppend: !cfg.Opener.Persistent()}
}

// closeLog writes the producer snapshot and releases (or deletes) the log.
func closeLog(id storage.PartitionID, cfg *Config, c Close) Closed {
	// The snapshot costs no fsync of its own, and Release leaves the tail
	// group commit has not synced yet to the next leader's first Sync
	// instead of waiting for one here: a 1,000-partition drain's closes
	// then wait for no fsync at all. A deleted log is closed.
	start := cfg.Clock.Now()
	l := c.Log
	var err error
	if !c.Del && !c.Fenced && c.Producers != nil {
		err = writeProducerSnapshot(l, c.Producers)
	}
	release := l.Release
	if c.Del {
		release = l.Close
	}
	if cerr := release(); err == nil {
		err = cerr
	}
	upTo := l.Durable()
	if l.Superseded(c.Epoch) {
		upTo = c.HW // acknowledge nothing the claimant may not have
	}
	if c.Del {
		if rerr := cfg.Opener.Remove(id); err == nil {
			err = rerr
		}
	}
	return Closed{Gen: c.Gen, UpTo: upTo, Err: err, Done: c.Done, Took: cfg.Clock.Since(start)}
}

// syncLog runs one group commit.
func syncLog(s Sync) Synced {
	upTo, err := s.Log.Sync()
	if err == nil && s.Log.Superseded(s.Epoch) {
		err = errSuperseded
	}
	return Synced{Gen: s.Gen, Seq: s.Seq, UpTo: upTo, Err: err}
}

// errOpenAbandoned: the partition was relinquished while it was opening.
var errOpenAbandoned = errors.New("relinquished while opening")

// fencePoll is how often an open waiting to stamp its epoch checks the fence.
const fencePoll = 20 * time.Millisecond

// waitToStamp runs before an open stamps its leader epoch on the files (a
// write the next leader must never race): not once the open was abandoned,
// and not while the broker is fenced (it may have been declared dead and
// the partition given away); a fenced broker waits for its next heartbeat
// exchange or for the relinquish.
func waitToStamp(clk clock.Clock, fence interface{ Fenced() bool }, abort *atomic.Bool) error {
	for {
		if abort.Load() {
			return errOpenAbandoned
		}
		if fence == nil || !fence.Fenced() {
			return nil
		}
		slept := make(chan struct{})
		clk.AfterFunc(fencePoll, func() { close(slept) })
		<-slept
	}
}

// producerSnapshotName names the idempotent-producer table's snapshot beside the log.
const producerSnapshotName = "producers"

// writeProducerSnapshot writes prods as of the log end. An encoding error
// writes nothing (the next open rebuilds the table from the log).
func writeProducerSnapshot(l storage.Log, prods *Producers) error {
	snap, err := prods.Snapshot(l.NextOffset())
	if err != nil {
		return nil
	}
	return l.WriteSnapshot(producerSnapshotName, snap)
}

// takeProducerSnapshot encodes the producer table at a maintenance tick
// when the log grew since the last snapshot, as Kafka takes one at each
// segment roll: an open after a crash, or after a shutdown without a
// release, then rebuilds the table from the batches after it rather than
// from the whole log. It is written once the log is durable that far
// (writeDueSnapshot): a snapshot naming a batch a crash lost would be set
// aside at the next open, and the whole log read again.
func (a *Actor) takeProducerSnapshot() {
	l, prods := a.core.Log(), a.core.Producers()
	if !a.persisted || l == nil || prods == nil {
		return
	}
	next := l.NextOffset()
	if next == a.snapshotted || (a.snapshot != nil && next == a.snapshotAt) {
		return
	}
	snap, err := prods.Snapshot(next)
	if err != nil {
		return
	}
	a.snapshot, a.snapshotAt = snap, next
	a.writeDueSnapshot()
}

// writeDueSnapshot writes the snapshot takeProducerSnapshot took once the
// log is durable to its offset (after a group commit, or at once when the
// log was).
func (a *Actor) writeDueSnapshot() {
	l := a.core.Log()
	if a.snapshot == nil || l == nil || l.Durable() < a.snapshotAt {
		return
	}
	if err := l.WriteSnapshot(producerSnapshotName, a.snapshot); err != nil {
		a.log.Warn().Err(err).Msg("write producer snapshot")
	} else {
		a.snapshotted = a.snapshotAt
	}
	a.snapshot = nil
}

// recoverProducers rebuilds idempotent-producer state: the snapshot (if any)
// plus every batch header after it, from offset from. The log is the
// authority: on a compacted log, the aborted transactions the snapshot
// names whose markers a pass has removed since are dropped.
func recoverProducers(l storage.Log, compacted bool) (prods *Producers, from int64, hadSnapshot bool, err error) {
	prods = NewProducers()
	from = l.StartOffset()
	if snap, err := l.ReadSnapshot(producerSnapshotName); err == nil && snap != nil {
		hadSnapshot = true
		if p, off, err := LoadSnapshot(snap); err == nil && off <= l.NextOffset() && off >= from && snapshotFits(l, off, p) {
			prods, from = p, off
		}
	}
	if compacted {
		if err := prods.DropAborts(func(a AbortedTxn) (bool, error) { return markerAt(l, a) }); err != nil {
			return nil, 0, false, fmt.Errorf("rebuild transaction state: %w", err)
		}
	}
	// Transactional batches are replayed in log order once the scan is
	// done: a marker's type is in its record, read from the log.
	var txnal []batch.Header
	err = l.ScanHeaders(from, func(h batch.Header) error {
		if h.NextOffset() > from {
			prods.Record(h)
			if h.IsTransactional() {
				txnal = append(txnal, h)
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, false, fmt.Errorf("rebuild producer state: %w", err)
	}
	for _, h := range txnal {
		if !h.IsControl() {
			prods.RecordTxn(h)
			continue
		}
		typ, err := readControlType(l, h)
		if err != nil {
			return nil, 0, false, fmt.Errorf("rebuild transaction state: marker at %d: %w", h.BaseOffset, err)
		}
		if typ == batch.ControlCommit || typ == batch.ControlAbort {
			prods.RecordMarker(h, typ == batch.ControlCommit, h.MaxTimestamp)
		}
	}
	prods.TrimTxns(l.StartOffset())
	return prods, from, hadSnapshot, nil
}

// errFound stops a header scan at the batch it looked for.
var errFound = errors.New("found")

// markerAt reports whether the log still holds aborted transaction a's
// marker (a marker below the log start counts: TrimTxns drops it).
func markerAt(l storage.Log, a AbortedTxn) (bool, error) {
	if a.LastOffset < l.StartOffset() {
		return true, nil
	}
	found := false
	err := l.ScanHeaders(a.LastOffset, func(h batch.Header) error {
		found = h.BaseOffset == a.LastOffset && h.IsControl() && h.ProducerID == a.ProducerID
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return false, fmt.Errorf("marker at %d: %w", a.LastOffset, err)
	}
	return found, nil
}

// readControlType reads the control batch h names and returns its type.
func readControlType(l storage.Log, h batch.Header) (int16, error) {
	recs, err := l.Read(h.BaseOffset, h.Size(), h.NextOffset())
	if err != nil {
		return 0, err
	}
	defer recs.Close()
	b, err := recs.AppendTo(nil)
	if err != nil {
		return 0, err
	}
	return batch.ControlType(b)
}

// snapshotFits reports whether the log holds, just below off, the batch a
// snapshot's table says ends there. A snapshot that names none (an older
// broker's, or one naming another offset) is not checked.
func snapshotFits(l storage.Log, off int64, p *Producers) bool {
	end, ok := p.endsAt(off)
	if !ok {
		return !p.hasLast
	}
	if off <= l.StartOffset() {
		return false
	}
	fits := false
	_ = l.ScanHeaders(end.Base, func(h batch.Header) error {
		fits = end.Matches(h)
		return errStopScan
	})
	return fits
}

var errStopScan = errors.New("stop scan")
