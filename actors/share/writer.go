package share

import (
	"sync"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/storage/sharestate"
)

// writer persists share-partition snapshots off the keeper's mailbox: the
// keeper puts the newest snapshot of each changed share-partition, and one
// goroutine writes them, a later snapshot of the same share-partition
// replacing one not yet written.
type writer struct {
	store   *sharestate.Store
	log     zerolog.Logger
	mu      sync.Mutex
	pending map[pkey]*pendingSnap
	// drops are the deleted topics to remove from the volume after the
	// pending snapshots (sharestate.Store.DropTopics).
	drops []func(topic string, id [16]byte) bool
	kick  chan struct{}
	done  chan struct{}
}

type pendingSnap struct {
	snap sharestate.Snapshot
	// remove: delete the snapshot instead (DeleteShareGroupOffsets).
	remove bool
	// mark, when not 0, is an admin change's mark, written after the
	// snapshot (sharestate.Store.SaveMark).
	mark    uint64
	written []chan error
}

func startWriter(store *sharestate.Store, log zerolog.Logger) *writer {
	w := &writer{store: store, log: log, pending: map[pkey]*pendingSnap{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// put queues snap and returns a channel that gets the outcome once it (or
// a later snapshot of the same share-partition) is written, or failed to be.
func (w *writer) put(key pkey, snap sharestate.Snapshot) <-chan error {
	return w.queue(key, pendingSnap{snap: snap})
}

// putAdmin queues an admin change of a share-partition: its new snapshot
// (nil: none) and mark, after whatever the keeper queued for it before.
func (w *writer) putAdmin(key pkey, snap *sharestate.Snapshot, mark uint64) <-chan error {
	if snap == nil {
		return w.queue(key, pendingSnap{remove: true, mark: mark})
	}
	return w.queue(key, pendingSnap{snap: *snap, mark: mark})
}

func (w *writer) queue(key pkey, op pendingSnap) <-chan error {
	ch := make(chan error, 1)
	w.mu.Lock()
	p := w.pending[key]
	if p == nil {
		p = &pendingSnap{}
		w.pending[key] = p
	}
	p.snap, p.remove = op.snap, op.remove
	if op.mark != 0 {
		p.mark = op.mark
	}
	p.written = append(p.written, ch)
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
	w.pending, w.drops = map[pkey]*pendingSnap{}, nil
	w.mu.Unlock()
	defer w.drop(drops)
	for key, p := range batch {
		var err error
		if p.remove {
			err = w.store.Delete(key.group, key.tp.Topic, key.tp.Partition)
		} else {
			err = w.store.Save(key.group, key.tp.Topic, key.tp.Partition, p.snap)
		}
		if err == nil && p.mark != 0 {
			err = w.store.SaveMark(key.group, key.tp.Topic, key.tp.Partition, p.mark)
		}
		for _, ch := range p.written {
			ch <- err
			close(ch)
		}
		if err != nil {
			// The share-partition goes on from memory; its next leader
			// may redeliver what this snapshot would have recorded.
			w.log.Error().Err(err).Str("group", key.group).Str("topic", key.tp.Topic).Int32("partition", key.tp.Partition).Msg("persisting share-partition state failed")
		}
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
