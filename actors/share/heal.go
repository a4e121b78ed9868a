package share

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The keeper's requests are answered even when the keeper cannot handle
// them (actorsys.Undeliverable): the one it panicked on, and any sent
// while it is stopped. A keeper restarted after a panic starts empty and
// loads each share-partition's state from the volume again, so the
// answers send clients back to the start: a ShareFetch or
// ShareAcknowledge gets SHARE_SESSION_NOT_FOUND (its session is gone;
// clients open a new one, and acknowledgements not answered are
// delivered again), a read round acquires nothing, an admin change fails.

// errKeeperGone is an admin change the keeper could not make.
var errKeeperGone = errors.New("share-partition keeper restarting")

func noWait() map[pkey]error { return nil }

// Undelivered implements actorsys.Undeliverable.
func (m *begin) Undelivered() {
	m.reply(beginResult{code: kerr.ShareSessionNotFound.Code, durable: noWait})
}

// Undelivered implements actorsys.Undeliverable.
func (m *acquire) Undelivered() {
	m.reply(acquireResult{ranges: map[TP][]Range{}, durable: noWait})
}

// Undelivered implements actorsys.Undeliverable.
func (m *where) Undelivered() { m.reply(nil) }

// Undelivered implements actorsys.Undeliverable.
func (m *starts) Undelivered() { m.reply(nil) }

// Undelivered implements actorsys.Undeliverable.
func (m *recheck) Undelivered() { m.reply(nil) }

// Undelivered implements actorsys.Undeliverable.
func (m *adminSet) Undelivered() { m.reply(func() error { return errKeeperGone }) }
