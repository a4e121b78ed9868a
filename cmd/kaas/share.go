package main

import (
	"github.com/kaas-project/kaas/actors/share"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// registerShare starts this broker's share-partition keeper and serves
// ShareFetch and ShareAcknowledge; the share-group heartbeat and describe
// are the group coordinator's. With --data-dir, share-partition state is
// kept in <data-dir>/__share on the shared volume.
func registerShare(b *broker) {
	opts := share.Options{
		Views: b.views,
		Log:   b.log.With().Str("actor", "share").Logger(),
		Partition: share.Config{
			LockDuration:  b.cfg.ShareRecordLockDuration,
			DeliveryLimit: int16(b.cfg.ShareDeliveryCountLimit),
			ResetLatest:   b.cfg.ShareAutoOffsetReset != "earliest",
		},
	}
	if b.cfg.DataDir != "" {
		st, err := sharestate.New(b.cfg.DataDir)
		if err != nil {
			// Share groups still work from memory; their state does
			// not survive a restart or a move.
			b.log.Error().Err(err).Msg("share-partition state store unavailable; share state kept in memory")
		} else {
			opts.Store = st
		}
	}
	k, err := share.Start(b.system, "share", opts)
	if err != nil {
		b.log.Error().Err(err).Msg("start share-partition keeper")
		return
	}
	k.Register(b.srv)
}
