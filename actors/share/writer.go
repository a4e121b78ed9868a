package share

import (
	"errors"
	"sync"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// writer persists share-partition snapshots off the keeper's mailbox: the
// keeper puts the newest snapshot of each changed share-partition, and one
// goroutine writes them, a later snapshot of the same share-partition
// replacing one not yet written.
type writer struct {
	store *sharestate.Store
	log   zerolog.Logger
	// superseded is told of a leader's write refused because a later
	// claim holds the share-partition, its claim is gone, or its admin
	// mark is not the one the write's state was loaded under (an admin
	// changed it), before the write's waiters hear of it: the keeper drops
	// the share-partition loaded under that claim and mark first, so a
	// request that follows loads it again.
	superseded func(key pkey, at assignment.Position, mark uint64)
	mu         sync.Mutex
	// pending are each share-partition's writes, in the order queued.
	pending map[pkey][]*pendingSnap
	// drops are the deleted topics to remove from the volume after the
	// pending snapshots (sharestate.Store.DropTopics).
	drops []func(topic string, id [16]byte) bool
	kick  chan struct{}
	done  chan struct{}
}

// pendingSnap is one write: a leader's snapshot, or an admin change.
type pendingSnap struct {
	snap sharestate.Snapshot
	// at is the claim of the leader that wrote snap (not admin).
	at assignment.Position
	// admin: an admin change (sharestate.Store.Set), snap with mark,
	// or, with remove, no snapshot (DeleteShareGroupOffsets).
	admin, remove bool
	// mark is the admin change's new mark, or the mark the leader's
	// state was loaded under (sharestate.Store.SaveAt).
	mark    uint64
	written []chan error
}

func startWriter(store *sharestate.Store, log zerolog.Logger, superseded func(pkey, assignment.Position, uint64)) *writer {
	w := newWriter(store, log, superseded)
	go w.run()
	return w
}

// newWriter returns a writer whose writes wait for a flush (run's, once
// started).
func newWriter(store *sharestate.Store, log zerolog.Logger, superseded func(pkey, assignment.Position, uint64)) *writer {
	if superseded == nil {
		superseded = func(pkey, assignment.Position, uint64) {}
	}
	return &writer{store: store, log: log, superseded: superseded, pending: map[pkey][]*pendingSnap{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// put queues snap, written by the leader that claimed the share-partition
// at at and loaded its state under the admin mark mark, and returns a
// channel that gets the outcome once it (or a later snapshot of the same
// claim and mark) is written, or failed to be (sharestate.ErrSuperseded: a
// later claim holds the share-partition, or an admin changed it).
func (w *writer) put(key pkey, at assignment.Position, mark uint64, snap sharestate.Snapshot) <-chan error {
	return w.queue(key, &pendingSnap{snap: snap, at: at, mark: mark})
}

// putAdmin queues an admin change of a share-partition: its new snapshot
// (nil: none) and mark, after whatever the keeper queued for it before.
func (w *writer) putAdmin(key pkey, snap *sharestate.Snapshot, mark uint64) <-chan error {
	if snap == nil {
		return w.queue(key, &pendingSnap{admin: true, remove: true, mark: mark})
	}
	return w.queue(key, &pendingSnap{admin: true, snap: *snap, mark: mark})
}

func (w *writer) queue(key pkey, op *pendingSnap) <-chan error {
	ch := make(chan error, 1)
	w.mu.Lock()
	ops := w.pending[key]
	if n := len(ops); n > 0 && !op.admin && !ops[n-1].admin && ops[n-1].at == op.at && ops[n-1].mark == op.mark {
		// The newer snapshot of the same load replaces the older. A
		// snapshot of the state loaded again under a new mark does not
		// replace one of the old state, which the mark refuses: each
		// answers its own waiters.
		ops[n-1].snap = op.snap
		ops[n-1].written = append(ops[n-1].written, ch)
	} else {
		op.written = []chan error{ch}
		w.pending[key] = append(ops, op)
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return ch
}

// dropTopics queues the removal of the share-partition state gone names
// (sharestate.Store.DropTopics), after the snapshots queued before.
func (w *writer) dropTopics(gone func(topic string, id [16]byte) bool) {
	w.mu.Lock()
	w.drops = append(w.drops, gone)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// stop ends the goroutine once what is pending is written.
func (w *writer) stop() { close(w.done) }

func (w *writer) run() {
	for {
		select {
		case <-w.kick:
			w.flush()
		case <-w.done:
			w.flush()
			return
		}
	}
}

func (w *writer) flush() {
	w.mu.Lock()
	batch, drops := w.pending, w.drops
	w.pending, w.drops = map[pkey][]*pendingSnap{}, nil
	w.mu.Unlock()
	defer w.drop(drops)
	for key, ops := range batch {
		for _, p := range ops {
			w.write(key, p)
		}
	}
}

// write makes one write and answers its waiters.
func (w *writer) write(key pkey, p *pendingSnap) {
	var err error
	switch {
	case p.admin && p.remove:
		err = w.store.Set(key.group, key.tp.Topic, key.tp.Partition, nil, p.mark)
	case p.admin:
		err = w.store.Set(key.group, key.tp.Topic, key.tp.Partition, &p.snap, p.mark)
	default:
		err = w.store.SaveAt(key.group, key.tp.Topic, key.tp.Partition, p.at, p.mark, p.snap)
	}
	log := func() *zerolog.Event {
		return w.log.Error().Err(err).Str("group", key.group).Str("topic", key.tp.Topic).Int32("partition", key.tp.Partition)
	}
	switch {
	case err == nil:
	case !p.admin && errors.Is(err, sharestate.ErrSuperseded):
		// Nothing was written: the leader with the later claim has
		// the share-partition, or an admin changed its state; this
		// one drops what it loaded before its waiters are answered
		// with the error.
		w.superseded(key, p.at, p.mark)
		w.log.Warn().Err(err).Str("group", key.group).Str("topic", key.tp.Topic).Int32("partition", key.tp.Partition).
			Msg("share-partition claimed by a later leader or changed by an admin; the state loaded before is not written here and is dropped")
	case p.admin:
		log().Msg("writing an admin change of share-partition state failed")
	default:
		// The share-partition goes on from memory; its next leader
		// may redeliver what this snapshot would have recorded.
		log().Msg("persisting share-partition state failed")
	}
	for _, ch := range p.written {
		ch <- err
		close(ch)
	}
}

func (w *writer) drop(drops []func(topic string, id [16]byte) bool) {
	for _, gone := range drops {
		n, err := w.store.DropTopics(gone)
		if err != nil {
			w.log.Error().Err(err).Msg("removing share-partition state of deleted topics failed")
		}
		if n > 0 {
			w.log.Info().Int("share_partitions", n).Msg("removed share-partition state of deleted topics")
		}
	}
}
