package main

import (
	"github.com/kaas-project/kaas/actors/share"
)

// registerShare starts this broker's share-partition keeper and serves
// ShareFetch and ShareAcknowledge; the share-group heartbeat and describe
// are the group coordinator's.
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
	k, err := share.Start(b.system, "share", opts)
	if err != nil {
		b.log.Error().Err(err).Msg("start share-partition keeper")
		return
	}
	k.Register(b.srv)
}
