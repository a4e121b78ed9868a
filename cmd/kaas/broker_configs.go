package main

import (
	"context"
	"io"
	"maps"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/connlimit"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// brokerConfigs are the static broker configs DescribeConfigs reports:
// each Kafka broker config a flag stands for, with the flag's value, Kafka's
// type for it and the flag's help as its documentation (the flag is the one
// home of what it means).
func brokerConfigs(cfg *serveConfig) map[string]conn.BrokerConfig {
	flags := newServeFlags(&serveConfig{}, io.Discard)
	c := func(flag string, typ topicconfig.Type, value string) conn.BrokerConfig {
		return conn.BrokerConfig{Value: value, Type: typ, Doc: "kaas --" + flag + ": " + flags.Lookup(flag).Usage}
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	out := map[string]conn.BrokerConfig{
		"broker.id":                                 c("broker-id", topicconfig.TypeInt, strconv.Itoa(cfg.BrokerID)),
		"broker.rack":                               c("rack", topicconfig.TypeString, cfg.Rack),
		"advertised.listeners":                      c("advertised-listeners", topicconfig.TypeString, cfg.advertisedListenersString()),
		"socket.request.max.bytes":                  c("max-request-size", topicconfig.TypeInt, strconv.Itoa(cfg.MaxRequestSize)),
		"auto.create.topics.enable":                 c("auto-create-topics", topicconfig.TypeBoolean, strconv.FormatBool(cfg.AutoCreateTopics)),
		"delete.topic.enable":                       c("delete-topic-enable", topicconfig.TypeBoolean, strconv.FormatBool(cfg.DeleteTopicEnable)),
		"connections.max.idle.ms":                   c("connections-max-idle", topicconfig.TypeLong, ms(cfg.ConnectionsMaxIdle)),
		"transaction.max.timeout.ms":                c("transaction-max-timeout", topicconfig.TypeInt, ms(cfg.TransactionMaxTimeout)),
		brokerconfig.ProducerIDExpiration:           c("producer-id-expiration", topicconfig.TypeInt, ms(cfg.ProducerIDExpiration)),
		"transactional.id.expiration.ms":            c("transactional-id-expiration", topicconfig.TypeInt, ms(cfg.TransactionalIDExpiration)),
		"offsets.retention.minutes":                 c("offsets-retention-minutes", topicconfig.TypeInt, strconv.Itoa(cfg.OffsetsRetentionMinutes)),
		"offset.metadata.max.bytes":                 c("offset-metadata-max-bytes", topicconfig.TypeInt, strconv.Itoa(cfg.OffsetMetadataMaxBytes)),
		"num.partitions":                            c("default-partitions", topicconfig.TypeInt, strconv.Itoa(cfg.DefaultPartitions)),
		"ssl.client.auth":                           c("ssl-client-auth", topicconfig.TypeString, cfg.SSLClientAuth),
		"connections.max.reauth.ms":                 c("connections-max-reauth", topicconfig.TypeLong, ms(cfg.MaxReauth)),
		"connection.failed.authentication.delay.ms": c("connection-failed-authentication-delay", topicconfig.TypeInt, ms(cfg.FailedAuthDelay)),
		"sasl.enabled.mechanisms":                   c("sasl-enabled-mechanisms", topicconfig.TypeList, cfg.SASLMechanisms),
		"ssl.enabled.protocols":                     c("ssl-enabled-protocols", topicconfig.TypeList, cfg.SSLProtocols),
		"ssl.cipher.suites":                         c("ssl-cipher-suites", topicconfig.TypeList, cfg.SSLCipherSuites),
		"log.dirs":                                  c("data-dir", topicconfig.TypeString, cfg.DataDir),
		// One copy per partition on the shared volume: what CreateTopics
		// with replication factor -1 gets, for tools that read it first.
		"default.replication.factor": {Value: "1", Type: topicconfig.TypeShort,
			Doc: "one copy per partition on the shared volume: the replication factor of CreateTopics with -1"},

		"log.cleaner.backoff.ms":              c("cleaner-interval", topicconfig.TypeLong, ms(cfg.CleanerInterval)),
		"log.retention.check.interval.ms":     c("retention-check-interval", topicconfig.TypeLong, ms(cfg.RetentionCheckInterval)),
		"log.cleaner.io.max.bytes.per.second": c("cleaner-io-rate", topicconfig.TypeDouble, strconv.FormatInt(cfg.CleanerIORate, 10)),
		"log.cleaner.dedupe.buffer.size":      c("cleaner-dedupe-buffer-size", topicconfig.TypeLong, strconv.FormatInt(cfg.CleanerBufferSize, 10)),

		"max.incremental.fetch.session.cache.slots": c("fetch-session-cache-slots", topicconfig.TypeInt, strconv.Itoa(cfg.FetchSessionSlots)),
		"fetch.max.bytes": c("fetch-max-bytes", topicconfig.TypeInt, strconv.Itoa(cfg.FetchMaxBytes)),

		brokerconfig.MaxConnections:               c("max-connections", topicconfig.TypeInt, strconv.Itoa(cfg.MaxConnections)),
		brokerconfig.MaxConnectionsPerIP:          c("max-connections-per-ip", topicconfig.TypeInt, strconv.Itoa(cfg.MaxConnectionsPerIP)),
		brokerconfig.MaxConnectionsPerIPOverrides: c("max-connections-per-ip-overrides", topicconfig.TypeString, cfg.MaxConnectionsPerIPOverrides),
		brokerconfig.MaxConnectionCreationRate:    c("max-connection-creation-rate", topicconfig.TypeInt, strconv.Itoa(cfg.MaxConnectionCreationRate)),

		"group.initial.rebalance.delay.ms":                 c("group-initial-rebalance-delay", topicconfig.TypeInt, ms(cfg.GroupInitialRebalanceDelay)),
		"group.min.session.timeout.ms":                     c("group-min-session-timeout", topicconfig.TypeInt, ms(cfg.GroupMinSessionTimeout)),
		"group.max.session.timeout.ms":                     c("group-max-session-timeout", topicconfig.TypeInt, ms(cfg.GroupMaxSessionTimeout)),
		"group.consumer.heartbeat.interval.ms":             c("group-consumer-heartbeat-interval", topicconfig.TypeInt, ms(cfg.GroupConsumerHeartbeatInterval)),
		"group.consumer.session.timeout.ms":                c("group-consumer-session-timeout", topicconfig.TypeInt, ms(cfg.GroupConsumerSessionTimeout)),
		"group.consumer.migration.policy":                  c("group-consumer-migration-policy", topicconfig.TypeString, cfg.GroupMigrationPolicy),
		"group.consumer.assignors":                         c("group-consumer-assignors", topicconfig.TypeList, cfg.GroupConsumerAssignors),
		"group.max.size":                                   c("group-max-size", topicconfig.TypeInt, strconv.Itoa(cfg.GroupMaxSize)),
		"group.consumer.max.size":                          c("group-consumer-max-size", topicconfig.TypeInt, strconv.Itoa(cfg.GroupConsumerMaxSize)),
		"group.share.max.size":                             c("group-share-max-size", topicconfig.TypeInt, strconv.Itoa(cfg.GroupShareMaxSize)),
		"group.share.max.share.sessions":                   c("group-share-max-share-sessions", topicconfig.TypeInt, strconv.Itoa(cfg.GroupShareMaxShareSessions)),
		"errors.deadletterqueue.topic.name.prefix":         c("errors-deadletterqueue-topic-name-prefix", topicconfig.TypeString, cfg.DeadLetterTopicPrefix),
		"errors.deadletterqueue.auto.create.topics.enable": c("errors-deadletterqueue-auto-create-topics", topicconfig.TypeBoolean, strconv.FormatBool(cfg.DeadLetterAutoCreate)),
		"group.streams.max.size":                           c("group-streams-max-size", topicconfig.TypeInt, strconv.Itoa(cfg.GroupStreamsMaxSize)),
		"group.streams.heartbeat.interval.ms":              c("group-streams-heartbeat-interval", topicconfig.TypeInt, ms(cfg.GroupStreamsHeartbeatInterval)),
		"group.streams.session.timeout.ms":                 c("group-streams-session-timeout", topicconfig.TypeInt, ms(cfg.GroupStreamsSessionTimeout)),
		"group.streams.num.standby.replicas":               c("group-streams-num-standby-replicas", topicconfig.TypeInt, strconv.Itoa(cfg.GroupStreamsNumStandbyReplicas)),
		"group.streams.initial.rebalance.delay.ms":         c("group-streams-initial-rebalance-delay", topicconfig.TypeInt, ms(cfg.GroupStreamsInitialDelay)),
		"group.share.heartbeat.interval.ms":                c("group-share-heartbeat-interval", topicconfig.TypeInt, ms(cfg.GroupShareHeartbeatInterval)),
		"group.share.session.timeout.ms":                   c("group-share-session-timeout", topicconfig.TypeInt, ms(cfg.GroupShareSessionTimeout)),
		"group.share.record.lock.duration.ms":              c("share-record-lock-duration", topicconfig.TypeInt, ms(cfg.ShareRecordLockDuration)),
		"group.share.delivery.count.limit":                 c("share-delivery-count-limit", topicconfig.TypeInt, strconv.Itoa(cfg.ShareDeliveryCountLimit)),
		"group.share.partition.max.record.locks":           c("group-share-partition-max-record-locks", topicconfig.TypeInt, strconv.Itoa(cfg.GroupSharePartitionMaxRecordLocks)),
	}
	for _, b := range cfg.GroupBounds {
		out[b.config()] = c(b.flagName(), topicconfig.TypeInt, strconv.FormatInt(b.value, 10))
	}
	for name, v := range cfg.topicDefaults {
		k, _ := brokerconfig.Lookup(name)
		out[name] = conn.BrokerConfig{Value: v, Type: k.Type, Doc: k.Doc}
	}
	return out
}

// dynamicConfigs follows the cluster's dynamic broker configs (the store on
// the shared volume, changed by AlterConfigs and IncrementalAlterConfigs
// on any broker): it keeps the set in force and applies what changed to
// this broker: the topic defaults to every partition it leads (through the
// supervisor), the cleaner's I/O rate to its throttle.
type dynamicConfigs struct {
	store *brokerconfig.Store
	self  int32
	log   zerolog.Logger

	mu       sync.Mutex // serializes refresh
	set      atomic.Pointer[brokerconfig.Set]
	topicDef atomic.Pointer[map[string]string]
	// applied to this broker: what the last refresh saw
	lastTopic map[string]string
	lastRate  int64
	cordoned  atomic.Bool
	lastConns map[string]string
	// producerExpiration (ns) is producer.id.expiration.ms in force;
	// cleanerInterval (ns) and cleanerMapBytes log.cleaner.backoff.ms and
	// log.cleaner.dedupe.buffer.size.
	producerExpiration atomic.Int64
	cleanerInterval    atomic.Int64
	cleanerMapBytes    atomic.Int64
	// static are the broker's flags: what a dynamic config removed falls
	// back to.
	static *serveConfig
	// onConnectionLimits is told the configs in force when a connection
	// limit among them changes (set before run; nil until the server is).
	onConnectionLimits func(inForce map[string]string)
	// onTopicDefaults is told when the topic defaults change (the
	// supervisor's BrokerDefaultsChanged); set before run.
	onTopicDefaults func()
	cleaner         *compaction.Throttle
}

// newDynamicConfigs opens the store (the data dir's cluster directory, or
// memory) and loads what it holds, so that the first partitions opened
// already obey it.
func newDynamicConfigs(cfg *serveConfig, static map[string]conn.BrokerConfig, log zerolog.Logger) *dynamicConfigs {
	store := brokerconfig.NewMemory()
	if cfg.DataDir != "" {
		store = brokerconfig.NewFile(filepath.Join(cfg.DataDir, clusterDir))
	}
	store.Static = func(name string) bool { _, ok := static[name]; return ok }
	store.LogDir = conn.LogDir(cfg.DataDir)
	d := &dynamicConfigs{store: store, self: int32(cfg.BrokerID), log: log, cleaner: cfg.cleanerThrottle(), lastRate: cfg.CleanerIORate,
		static: cfg}
	d.producerExpiration.Store(int64(cfg.ProducerIDExpiration))
	d.cleanerInterval.Store(int64(cfg.CleanerInterval))
	d.cleanerMapBytes.Store(cfg.CleanerBufferSize)
	d.set.Store(&brokerconfig.Set{})
	empty := map[string]string{}
	d.topicDef.Store(&empty)
	store.OnChange = d.refresh
	d.refresh()
	return d
}

// ProducerExpiration is producer.id.expiration.ms in force on this broker
// (the partitions read it at each maintenance).
func (d *dynamicConfigs) ProducerExpiration() time.Duration {
	return time.Duration(d.producerExpiration.Load())
}

// CleanerInterval is log.cleaner.backoff.ms in force on this broker.
func (d *dynamicConfigs) CleanerInterval() time.Duration {
	return time.Duration(d.cleanerInterval.Load())
}

// CleanerMapBytes is log.cleaner.dedupe.buffer.size in force on this
// broker.
func (d *dynamicConfigs) CleanerMapBytes() int64 { return d.cleanerMapBytes.Load() }

// Set is the dynamic broker config set last read.
func (d *dynamicConfigs) Set() brokerconfig.Set { return *d.set.Load() }

// TopicDefaults are the topic config defaults in force on this broker.
func (d *dynamicConfigs) TopicDefaults() map[string]string { return *d.topicDef.Load() }

// Cordoned reports whether cordoned.log.dirs in force cordons this
// broker's log dir.
func (d *dynamicConfigs) Cordoned() bool { return d.cordoned.Load() }

// CordonedBroker reports whether cordoned.log.dirs in force on broker id
// cordons its log dir (every broker mounts the shared volume at the same
// path, so its log dir is this one's).
func (d *dynamicConfigs) CordonedBroker(id int32) bool {
	return brokerconfig.Cordoned(d.set.Load().For(id), d.store.LogDir)
}

// refresh reads the store and applies what changed.
func (d *dynamicConfigs) refresh() {
	d.mu.Lock()
	defer d.mu.Unlock()
	set, err := d.store.Load()
	if err != nil {
		d.log.Error().Err(err).Msg("dynamic broker configs: keeping the last ones read")
		return
	}
	d.set.Store(&set)
	inForce := set.For(d.self)
	if td := topicDefaultsInForce(d.static.topicDefaults, inForce); !maps.Equal(td, d.lastTopic) {
		d.lastTopic = td
		d.topicDef.Store(&td)
		d.log.Info().Interface("topic_defaults", td).Msg("dynamic broker configs: topic defaults in force")
		if d.onTopicDefaults != nil {
			d.onTopicDefaults()
		}
	}
	if c := brokerconfig.Cordoned(inForce, d.store.LogDir); c != d.cordoned.Swap(c) {
		d.log.Info().Bool("cordoned", c).Str("log_dir", d.store.LogDir).Msg("dynamic broker configs: cordoned.log.dirs")
	}
	if conns := connectionConfigs(inForce); d.onConnectionLimits != nil && !maps.Equal(conns, d.lastConns) {
		d.lastConns = conns
		d.onConnectionLimits(inForce)
	}
	exp, ok := brokerconfig.ProducerExpiration(inForce)
	if !ok {
		exp = d.static.ProducerIDExpiration
	}
	if time.Duration(d.producerExpiration.Swap(int64(exp))) != exp {
		d.log.Info().Dur("producer_id_expiration", exp).Msg("dynamic broker configs: producer.id.expiration.ms")
	}
	backoff, mapBytes := brokerconfig.Cleaner(inForce, d.static.CleanerInterval, d.static.CleanerBufferSize)
	if time.Duration(d.cleanerInterval.Swap(int64(backoff))) != backoff || d.cleanerMapBytes.Swap(mapBytes) != mapBytes {
		d.log.Info().Dur("log_cleaner_backoff", backoff).Int64("log_cleaner_dedupe_buffer_size", mapBytes).Msg("dynamic broker configs: log cleaner")
	}
	rate, ok := brokerconfig.CleanerIORate(inForce)
	if !ok {
		rate = d.static.CleanerIORate
	}
	if rate != d.lastRate {
		d.lastRate = rate
		d.cleaner.SetRate(rate)
		d.log.Info().Int64("bytes_per_second", rate).Msg("dynamic broker configs: cleaner I/O rate")
	}
}

// followConnectionLimits puts the connection limits in force now through
// apply, then again whenever a refresh finds them changed.
func (d *dynamicConfigs) followConnectionLimits(apply func(inForce map[string]string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	inForce := d.set.Load().For(d.self)
	d.lastConns = connectionConfigs(inForce)
	d.onConnectionLimits = apply
	apply(inForce)
}

// run re-reads the store every period until ctx ends: changes made through
// another broker reach this one within a period.
func (d *dynamicConfigs) run(ctx context.Context, clk clock.Clock, period time.Duration) {
	t := clk.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			d.refresh()
		}
	}
}

// connectionConfigs are the connection limits among the configs in force
// (to tell when they changed).
func connectionConfigs(inForce map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range inForce {
		if k == brokerconfig.MaxConnectionsPerIP || k == brokerconfig.MaxConnectionsPerIPOverrides ||
			strings.HasSuffix(k, brokerconfig.MaxConnections) || strings.HasSuffix(k, brokerconfig.MaxConnectionCreationRate) {
			out[k] = v
		}
	}
	return out
}

// connectionLimits follows the connection limits of the configs in force
// (over the flags) into the server; a host name of the overrides that does
// not resolve is left out, with a warning.
func connectionLimits(cfg *serveConfig, listeners []string, srv *conn.Server, log zerolog.Logger) func(map[string]string) {
	static := connlimit.Static{Broker: cfg.MaxConnections, PerIP: cfg.MaxConnectionsPerIP, BrokerRate: cfg.MaxConnectionCreationRate,
		Overrides: cfg.MaxConnectionsPerIPOverrides}
	resolve := func(host string) (netip.Addr, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return netip.Addr{}, err
		}
		return ips[0], nil
	}
	return func(inForce map[string]string) {
		l, skipped, err := connlimit.FromConfigs(inForce, static, listeners, resolve)
		if err != nil {
			log.Error().Err(err).Msg("dynamic broker configs: connection limits not applied; keeping the last ones")
			return
		}
		for _, s := range skipped {
			log.Warn().Str("override", s).Msg("dynamic broker configs: max.connections.per.ip.overrides entry left out")
		}
		srv.SetConnectionLimits(l)
		log.Info().Int("max_connections", l.Broker).Int("max_connections_per_ip", l.PerIP).
			Int("per_ip_overrides", len(l.PerIPOverrides)).Interface("listener_max_connections", l.Listener).
			Int("max_connection_creation_rate", l.BrokerRate).Interface("listener_max_connection_creation_rate", l.ListenerRate).
			Msg("connection limits in force")
	}
}
