package main

import (
	"strconv"
	"strings"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/topicconfig"

	"github.com/kaas-project/kaas/actors/share"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// registerShare starts this broker's share-partition keeper and serves
// ShareFetch and ShareAcknowledge; the share-group heartbeat and describe
// and the share-group admin keys 91 and 92 are the group coordinator's.
// With --data-dir, share-partition state is kept in <data-dir>/__share on
// the shared volume.
func registerShare(b *broker) {
	opts := share.Options{
		Views: b.views,
		Log:   b.logger("actor", "share"),
		Partition: share.Config{
			LockDuration:  b.cfg.ShareRecordLockDuration,
			DeliveryLimit: int16(b.cfg.ShareDeliveryCountLimit),
			MaxInFlight:   int64(b.cfg.GroupSharePartitionMaxRecordLocks),
			ResetLatest:   b.cfg.ShareAutoOffsetReset != "earliest",
		},
		GroupConfigs: b.srv.GroupConfigs,
		MaxSessions:  b.cfg.GroupShareMaxShareSessions,
		Peers:        b.peers,
		DeadLetters: &share.DeadLetterWriter{
			Peers:    b.peers,
			Views:    b.views,
			Clock:    clock.Real(),
			Log:      b.logger("actor", "share-dead-letters"),
			Settings: func() share.DeadLetterSettings { return deadLetterSettings(b) },
		},
	}
	if b.cfg.DataDir != "" {
		st, err := sharestate.New(b.cfg.DataDir)
		if err != nil {
			// Share groups still work from memory; their state does
			// not survive a restart or a move.
			b.log.Error().Err(err).Msg("share-partition state store unavailable; share state kept in memory")
		} else {
			// Partitions move between processes only in cluster
			// mode: there a share-partition's snapshot is claimed by
			// the leader that loads it.
			st.Claims = b.fence != nil
			opts.Store = st
		}
	}
	k, err := share.Start(b.system, "share", opts)
	if err != nil {
		b.log.Error().Err(err).Msg("start share-partition keeper")
		return
	}
	k.Register(b.srv)
	b.share = k
	if s := b.srv.GroupConfigs; s != nil {
		s.OnChange(k.GroupConfigsChanged)
	}
	// Stopped (past its restarts) it serves no share group: the broker
	// exits and its pod is restarted, as for the group coordinator.
	b.watchEssential("share-partition keeper", k.Ref())
	if b.groups != nil {
		// AlterShareGroupOffsets and DeleteShareGroupOffsets: the group
		// coordinator checks the group, the keeper writes the state.
		b.groups.SetShareStates(k)
	}
}

// deadLetterSettings are the share groups' dead-letter settings in force on
// this broker: the dynamic broker configs over the flags.
func deadLetterSettings(b *broker) share.DeadLetterSettings {
	s := share.DeadLetterSettings{TopicPrefix: b.cfg.DeadLetterTopicPrefix, AutoCreate: b.cfg.DeadLetterAutoCreate,
		MaxMessageBytes: 1048588}
	if n, err := strconv.Atoi(topicconfig.Keys["max.message.bytes"].Default); err == nil {
		s.MaxMessageBytes = n
	}
	if b.dynCfgs == nil {
		return s
	}
	if n, err := strconv.Atoi(b.dynCfgs.TopicDefaults()["max.message.bytes"]); err == nil {
		s.MaxMessageBytes = n
	}
	inForce := b.dynCfgs.Set().For(int32(b.cfg.BrokerID))
	if v, ok := inForce[brokerconfig.DeadLetterTopicPrefix]; ok {
		s.TopicPrefix = v
	}
	if v, ok := inForce[brokerconfig.DeadLetterAutoCreate]; ok {
		s.AutoCreate = strings.EqualFold(v, "true")
	}
	return s
}

// groupConfigStore keeps the GROUP config resources (in <data-dir>/__groups
// with --data-dir, in memory otherwise); the group flags are the defaults of
// the configs they correspond to, the bound flags their ranges.
func groupConfigStore(cfg *serveConfig) *groupconfig.Store {
	defaults := map[string]string{}
	for _, d := range groupDefaults(cfg) {
		defaults[d.key] = d.value
	}
	s := groupconfig.NewMemory(defaults)
	if cfg.DataDir != "" {
		s = groupconfig.NewFile(cfg.DataDir, defaults)
	}
	s.Bounds = groupConfigBounds(cfg.GroupBounds)
	return s
}
