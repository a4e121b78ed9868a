package main

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/acl"
	"github.com/kaas-project/kaas/actors/group"
	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// groupOptions are the group coordinator's settings; zero fields take
// Kafka's defaults (group.initial.rebalance.delay.ms 3 s,
// offsets.retention.minutes 7 days, group.min.session.timeout.ms 6 s, ...).
// Tests shorten them.
var groupOptions group.Options

// groupStoreDir is where committed offsets persist: --data-dir, or nowhere
// (in memory) without it.
var groupStoreDir = func(cfg *serveConfig) string { return cfg.DataDir }

// registerGroups starts the group coordinator (a manager actor that spawns
// one actor per consumer group) and registers the consumer-group APIs. The
// coordinator follows the supervisor: when the supervisor stops, every group
// is relinquished and its log closed.
func registerGroups(b *broker) {
	opts := groupOptions
	// Flags given explicitly override the defaults (tests shorten the
	// defaults through groupOptions).
	set := b.cfg.explicit
	if set["group-initial-rebalance-delay"] {
		opts.Group.InitialRebalanceDelay = b.cfg.GroupInitialRebalanceDelay
		if opts.Group.InitialRebalanceDelay == 0 {
			opts.Group.InitialRebalanceDelay = -1 // no delay
		}
	}
	if set["group-min-session-timeout"] {
		opts.Group.MinSessionTimeout = b.cfg.GroupMinSessionTimeout
	}
	if set["group-max-session-timeout"] {
		opts.Group.MaxSessionTimeout = b.cfg.GroupMaxSessionTimeout
	}
	if set["group-consumer-heartbeat-interval"] {
		opts.Group.ConsumerHeartbeatInterval = b.cfg.GroupConsumerHeartbeatInterval
	}
	if set["group-consumer-session-timeout"] {
		opts.Group.ConsumerSessionTimeout = b.cfg.GroupConsumerSessionTimeout
	}
	if set["group-share-heartbeat-interval"] {
		opts.Group.Share.HeartbeatInterval = b.cfg.GroupShareHeartbeatInterval
	}
	if set["group-share-session-timeout"] {
		opts.Group.Share.SessionTimeout = b.cfg.GroupShareSessionTimeout
	}
	// Validated with the flags (at least 1; Kafka's defaults are
	// 2147483647, in effect unlimited).
	opts.Group.ClassicMaxSize = b.cfg.GroupMaxSize
	opts.Group.ConsumerMaxSize = b.cfg.GroupConsumerMaxSize
	opts.Group.Share.MaxSize = b.cfg.GroupShareMaxSize
	opts.Group.Streams.MaxSize = b.cfg.GroupStreamsMaxSize
	opts.Group.Streams.HeartbeatInterval = b.cfg.GroupStreamsHeartbeatInterval
	opts.Group.Streams.SessionTimeout = b.cfg.GroupStreamsSessionTimeout
	opts.Group.Streams.NumStandbyReplicas = b.cfg.GroupStreamsNumStandbyReplicas
	opts.Group.Streams.InitialRebalanceDelay = b.cfg.GroupStreamsInitialDelay
	if opts.Group.Streams.InitialRebalanceDelay == 0 {
		opts.Group.Streams.InitialRebalanceDelay = -1 // no delay
	}
	// Validated with the flags.
	opts.Group.MigrationPolicy, _ = group.ParseMigrationPolicy(b.cfg.GroupMigrationPolicy)
	opts.Group.Assignors, _ = group.ParseAssignors(b.cfg.GroupConsumerAssignors)
	opts.Group.MaxMetadataSize = b.cfg.OffsetMetadataMaxBytes
	if set["offsets-retention-minutes"] {
		opts.Group.OffsetsRetention = time.Duration(b.cfg.OffsetsRetentionMinutes) * time.Minute
	}
	opts.Views = b.views
	opts.Configs = b.srv.GroupConfigs
	if a := b.srv.Authorizer; a != nil {
		opts.Group.DescribeTopic = func(principal, host, topic string) bool {
			return a.Authorize(acl.Action{Principal: principal, Host: host, Operation: kmsg.ACLOperationDescribe,
				ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: topic})
		}
	}
	opts.Log = b.logger("actor", "groups")
	opts.Watch = b.sup.PID()
	if b.fence != nil {
		opts.Fence = b.fence
		sup := b.sup
		opts.OnGroupsChanged = func(names []string) { sup.Send(&supervisor.GroupsLed{Names: names}) }
	}
	if dir := groupStoreDir(b.cfg); dir != "" {
		st, err := groupstore.NewFile(dir)
		if err != nil {
			// Never fall back to memory silently: committed offsets
			// would not survive a restart. Groups answer
			// COORDINATOR_LOAD_IN_PROGRESS until the store works.
			b.log.Error().Err(err).Msg("consumer-group offset store unavailable")
			opts.Store = brokenStore{err: err}
		} else {
			// Coordinators move between processes only in cluster
			// mode: there a group's files are claimed by the
			// coordinator that loads them.
			st.Claims = b.fence != nil
			opts.Store = st
		}
	} else {
		opts.Store = groupstore.NewMemory()
	}
	c, err := group.Start(b.system, "groups", opts)
	if err != nil {
		b.log.Error().Err(err).Msg("start group coordinator")
		return
	}
	c.Register(b.srv)
	b.groups = c
	// Groups react to every new view at once (a held slot is released
	// without waiting for the manager's poll).
	ref := c.Ref()
	b.views.OnPublish(func() { ref.Send(&messages.GroupsViewChanged{}) })
	// A group's GROUP configs altered through this broker apply at once
	// (through another broker: at the group's next config poll).
	if b.srv.GroupConfigs != nil {
		b.srv.GroupConfigs.OnChange(func(group string) { ref.Send(&messages.GroupConfigsChanged{Group: group}) })
	}
}

// groupsLed is the number of consumer groups this broker coordinates.
func groupsLed(b *broker) int {
	if b.groups != nil {
		return b.groups.GroupsLed()
	}
	return 0
}

// brokenStore fails every load with the error that made the store
// unavailable.
type brokenStore struct{ err error }

func (s brokenStore) Persistent() bool { return true }

func (s brokenStore) Groups() ([]string, error) { return nil, s.err }

func (s brokenStore) Open(group string) (groupstore.Log, groupstore.State, error) {
	return nil, groupstore.State{}, fmt.Errorf("open group %q: %w", group, s.err)
}
