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
	kick    chan struct{}
	done    chan struct{}
}

type pendingSnap struct {
	snap    sharestate.Snapshot
	written []chan struct{}
}

func startWriter(store *sharestate.Store, log zerolog.Logger) *writer {
	w := &writer{store: store, log: log, pending: map[pkey]*pendingSnap{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

// put queues snap and returns a channel closed once it (or a later
// snapshot of the same share-partition) is written, or failed to be.
func (w *writer) put(key pkey, snap sharestate.Snapshot) <-chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	p := w.pending[key]
	if p == nil {
		p = &pendingSnap{}
		w.pending[key] = p
	}
	p.snap = snap
	p.written = append(p.written, ch)
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
	return ch
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
	batch := w.pending
	w.pending = map[pkey]*pendingSnap{}
	w.mu.Unlock()
	for key, p := range batch {
		err := w.store.Save(key.group, key.tp.Topic, key.tp.Partition, p.snap)
		for _, ch := range p.written {
			close(ch)
		}
		if err != nil {
			// The share-partition goes on from memory; its next leader
			// may redeliver what this snapshot would have recorded.
			w.log.Error().Err(err).Str("group", key.group).Str("topic", key.tp.Topic).Int32("partition", key.tp.Partition).Msg("persisting share-partition state failed")
		}
	}
}
