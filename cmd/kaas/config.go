package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/connlimit"
	"github.com/kaas-project/kaas/actors/group"
	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/disklog"
)

// serveConfig is the `kaas` (serve) command line. Every flag has a KAAS_*
// environment twin (--kafka-addr -> KAAS_KAFKA_ADDR); a flag on the command
// line wins over its variable.
type serveConfig struct {
	KafkaAddr      string
	AdvertisedAddr string
	HTTPAddr       string
	DataDir        string
	Fsync          string
	LogLevel       string
	LogFormat      string
	MaxRequestSize int
	// FetchSessionSlots bounds the incremental fetch sessions (KIP-227).
	FetchSessionSlots int
	// connection limits (dynamic broker configs override them)
	MaxConnections               int
	MaxConnectionsPerIP          int
	MaxConnectionsPerIPOverrides string
	MaxConnectionCreationRate    int
	// log cleaner (cleanup.policy=compact)
	CleanerIORate     int64
	CleanerBufferSize int64
	CleanerInterval   time.Duration
	// RetentionCheckInterval is how often each partition leader enforces
	// retention.ms and retention.bytes.
	RetentionCheckInterval time.Duration
	AutoCreateTopics       bool
	ClientTelemetry        bool
	TelemetryMaxBytes      int
	DefaultPartitions      int
	ClusterID              string
	BrokerID               int
	Rack                   string
	DebugChaos             bool

	// client quotas
	QuotaWindowNum  int
	QuotaWindowSize time.Duration

	// authorization (ACLs)
	Authorizer           string
	SuperUsers           string
	AllowEveryoneIfNoACL bool

	// cluster mode (MY_POD_NAME set)
	HeartbeatAddr           string
	AdvertisedHeartbeatAddr string
	Service                 string
	LeaseName               string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	FenceAfter              time.Duration
	DeadAfter               time.Duration
	StrayGrace              time.Duration
	DrainTimeout            time.Duration
	HeartbeatInterval       time.Duration
	ConcurrentMoves         int

	// consumer groups
	GroupInitialRebalanceDelay     time.Duration
	GroupMinSessionTimeout         time.Duration
	GroupMaxSessionTimeout         time.Duration
	GroupConsumerHeartbeatInterval time.Duration
	GroupConsumerSessionTimeout    time.Duration
	GroupMigrationPolicy           string
	GroupConsumerAssignors         string
	OffsetMetadataMaxBytes         int
	// TopicConfigDefaults is --topic-config-defaults, topicDefaults what it
	// sets (Kafka broker config -> value).
	TopicConfigDefaults               string
	topicDefaults                     map[string]string
	GroupMaxSize                      int
	GroupConsumerMaxSize              int
	GroupShareMaxSize                 int
	GroupShareMaxShareSessions        int
	GroupShareSessionTimeout          time.Duration
	GroupSharePartitionMaxRecordLocks int
	GroupShareHeartbeatInterval       time.Duration
	// GroupBounds are Kafka's group.*.min/max.* broker configs.
	GroupBounds                    []*groupBound
	DeadLetterTopicPrefix          string
	DeadLetterAutoCreate           bool
	GroupStreamsMaxSize            int
	GroupStreamsHeartbeatInterval  time.Duration
	GroupStreamsSessionTimeout     time.Duration
	GroupStreamsNumStandbyReplicas int
	GroupStreamsInitialDelay       time.Duration
	ShareRecordLockDuration        time.Duration
	ShareDeliveryCountLimit        int
	ShareAutoOffsetReset           string
	OffsetsRetentionMinutes        int

	// transactions
	TransactionalIDExpiration time.Duration
	TransactionMaxTimeout     time.Duration
	ProducerIDExpiration      time.Duration
	DeleteTopicEnable         bool
	ConnectionsMaxIdle        time.Duration
	FetchMaxBytes             int

	// listeners, TLS, SASL, debug endpoints (security.go)
	securityConfig

	podName, podNamespace, podUID string
	// explicit names the flags given on the command line or by KAAS_* variables.
	explicit map[string]bool

	// derived
	advHost  string
	advPort  int32
	level    zerolog.Level
	syncMode disklog.SyncMode
	// throttle is shared by every partition's cleaner (cleaner.go).
	throttle *compaction.Throttle
}

// serveUsage heads the flag list of kaas --help.
const serveUsage = commandsUsage + `

Every flag can also be set by its environment variable: KAAS_ and the flag
name in upper case with _ for - (--kafka-addr: KAAS_KAFKA_ADDR); a flag on the
command line wins. Cluster mode is on when MY_POD_NAME is set. Durations are
Go durations (500ms, 2s, 1m30s). Flags:

`

func newServeFlags(cfg *serveConfig, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kaas", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.KafkaAddr, "kafka-addr", ":9092", "address the Kafka listener binds, host:port (empty host: every interface); {ordinal} and {ordinal+N} here and in --advertised-addr, --listeners and --advertised-listeners become the broker's ordinal (plus N)")
	fs.StringVar(&cfg.AdvertisedAddr, "advertised-addr", "", "host:port put in Metadata for clients (default: localhost:<kafka port>, or the pod DNS name in cluster mode)")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", ":8080", "address of the HTTP listener for /healthz, /readyz, /metrics (and /debug/pprof/ with --debug-pprof); empty disables it")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "directory for partition data; empty keeps everything in memory")
	fs.StringVar(&cfg.Fsync, "fsync", "syncfs", "how group commit makes --data-dir appends durable: syncfs (one syncfs(2) of the volume per round for every partition of the broker; Linux) or file (one fdatasync per partition)")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "least severe log level written: trace, debug, info, warn or error")
	fs.StringVar(&cfg.LogFormat, "log-format", "console", "log format: json (one object per line) or console (human-readable)")
	fs.IntVar(&cfg.MaxRequestSize, "max-request-size", 100<<20, "largest request frame accepted, in bytes (Kafka's socket.request.max.bytes)")
	fs.IntVar(&cfg.FetchMaxBytes, "fetch-max-bytes", conn.DefaultFetchMaxBytes, "most record bytes in one Fetch answer, whatever the request asks (its first batch is sent whole even when larger, KIP-74); at least 1024 (Kafka's fetch.max.bytes)")
	fs.IntVar(&cfg.FetchSessionSlots, "fetch-session-cache-slots", 1000, "incremental fetch sessions (KIP-227) this broker keeps; 0 offers none, so consumers send full fetches (Kafka's max.incremental.fetch.session.cache.slots)")
	fs.IntVar(&cfg.MaxConnections, "max-connections", connlimit.Unlimited, "most client connections served at once on all listeners together; at the limit a listener accepts nothing more until one closes, but the first (inter-broker) listener of several closes the least recently active connection of another instead (Kafka's max.connections; listener.name.<listener>.max.connections bounds one listener, as a dynamic broker config)")
	fs.IntVar(&cfg.MaxConnectionsPerIP, "max-connections-per-ip", connlimit.Unlimited, "most connections one client address may have open; one more is closed at once; 0 only with --max-connections-per-ip-overrides (Kafka's max.connections.per.ip)")
	fs.IntVar(&cfg.MaxConnectionCreationRate, "max-connection-creation-rate", connlimit.Unlimited, "most connections accepted per second on all listeners but the first (inter-broker) one, measured over --quota-window-num windows of --quota-window-size; one over it is held for its throttle time, at most one window, then served (Kafka's max.connection.creation.rate; listener.name.<listener>.max.connection.creation.rate bounds one listener, the first included, as a dynamic broker config)")
	fs.StringVar(&cfg.MaxConnectionsPerIPOverrides, "max-connections-per-ip-overrides", "", "per-address exceptions to --max-connections-per-ip: comma-separated host:count entries, each host an IP address or a name resolved at start and at each change (Kafka's max.connections.per.ip.overrides)")
	fs.BoolVar(&cfg.ClientTelemetry, "client-telemetry", false, "receive the metrics Kafka clients push (KIP-714: GetTelemetrySubscriptions and PushTelemetry, as the CLIENT_METRICS subscriptions ask) and expose them on /metrics as kafka_client_* series")
	fs.IntVar(&cfg.TelemetryMaxBytes, "telemetry-max-bytes", 1<<20, "largest client telemetry push taken (Kafka's telemetry.max.bytes)")
	fs.BoolVar(&cfg.DeleteTopicEnable, "delete-topic-enable", true, "serve DeleteTopics; false refuses every topic of it with TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3), as Kafka does (Kafka's delete.topic.enable; KafkaTopic objects deleted with kubectl still go)")
	fs.DurationVar(&cfg.ConnectionsMaxIdle, "connections-max-idle", 10*time.Minute, "a client connection that sends no request for this long is closed (Kafka's connections.max.idle.ms)")
	fs.StringVar(&cfg.TopicConfigDefaults, "topic-config-defaults", "", "topic config defaults as Kafka's broker configs set them in server.properties, NAME=VALUE;...: log.retention.ms=86400000;log.segment.bytes=268435456;compression.type=zstd; dynamic broker configs of the same names win over them")
	fs.BoolVar(&cfg.AutoCreateTopics, "auto-create-topics", true, "create a topic a Metadata request names but that does not exist (Kafka's auto.create.topics.enable)")
	fs.IntVar(&cfg.DefaultPartitions, "default-partitions", 1, "partitions of auto-created topics and CreateTopics with -1 (Kafka's num.partitions)")
	fs.StringVar(&cfg.ClusterID, "cluster-id", "kaas-local", "cluster id reported in Metadata and DescribeCluster")
	fs.BoolVar(&cfg.DebugChaos, "debug-chaos", false, "testing only: serve /debug/chaos/ on --http-addr, which kills actors and slows or fails fsyncs on request (never in a deployment)")
	fs.StringVar(&cfg.Authorizer, "authorizer", "", "authorization: empty allows every request (no ACLs; the ACL APIs answer SECURITY_DISABLED); acl checks every request against the ACLs (KafkaAcl objects in cluster mode, <data-dir>/acls.json or memory in local mode)")
	fs.StringVar(&cfg.SuperUsers, "super-users", "", "authorization: principals allowed everything whatever the ACLs, separated by ';' (User:admin;User:ops) (Kafka's super.users)")
	fs.BoolVar(&cfg.AllowEveryoneIfNoACL, "allow-everyone-if-no-acl-found", false, "authorization: allow a request on a resource that no ACL names (Kafka's allow.everyone.if.no.acl.found)")
	fs.IntVar(&cfg.BrokerID, "broker-id", 0, "broker id in local mode (cluster mode takes it from the pod name)")
	fs.StringVar(&cfg.Rack, "rack", "", "rack (zone) of this broker, shown to clients in Metadata and DescribeCluster; empty: none (Kafka's broker.rack)")
	fs.DurationVar(&cfg.GroupInitialRebalanceDelay, "group-initial-rebalance-delay", 3*time.Second, "consumer groups: how long the first rebalance of an empty classic group waits for more members to join; 0 does not wait (Kafka's group.initial.rebalance.delay.ms)")
	fs.DurationVar(&cfg.GroupMinSessionTimeout, "group-min-session-timeout", 6*time.Second, "consumer groups: shortest session timeout a classic group member may ask for (Kafka's group.min.session.timeout.ms)")
	fs.DurationVar(&cfg.GroupMaxSessionTimeout, "group-max-session-timeout", 30*time.Minute, "consumer groups: longest session timeout a classic group member may ask for (Kafka's group.max.session.timeout.ms)")
	fs.DurationVar(&cfg.GroupConsumerHeartbeatInterval, "group-consumer-heartbeat-interval", 5*time.Second, "consumer groups: heartbeat interval given to KIP-848 consumer-protocol members (Kafka's group.consumer.heartbeat.interval.ms)")
	fs.DurationVar(&cfg.GroupConsumerSessionTimeout, "group-consumer-session-timeout", 45*time.Second, "consumer groups: a KIP-848 consumer-protocol member silent this long is removed; must exceed --group-consumer-heartbeat-interval (Kafka's group.consumer.session.timeout.ms)")
	fs.StringVar(&cfg.GroupConsumerAssignors, "group-consumer-assignors", "uniform,range", "consumer groups: the server-side assignors KIP-848 members may ask for, comma-separated, uniform and range; the first is the one of a group whose members ask for none, another is refused with UNSUPPORTED_ASSIGNOR (Kafka's group.consumer.assignors)")
	fs.StringVar(&cfg.GroupMigrationPolicy, "group-consumer-migration-policy", "bidirectional", "consumer groups: whether a group with members switches protocol as its consumers do: bidirectional, upgrade (classic to the KIP-848 consumer protocol only), downgrade (back only) or disabled (Kafka's group.consumer.migration.policy)")
	fs.IntVar(&cfg.GroupMaxSize, "group-max-size", math.MaxInt32, "consumer groups: most members a classic group takes; a new member's JoinGroup into a full group gets GROUP_MAX_SIZE_REACHED, and a consumer group goes back to the classic protocol only if its members fit (Kafka's group.max.size)")
	fs.IntVar(&cfg.GroupConsumerMaxSize, "group-consumer-max-size", math.MaxInt32, "consumer groups: most members a KIP-848 consumer group takes, classic-protocol members included; a new member of a full group gets GROUP_MAX_SIZE_REACHED, and a classic group moves to the consumer protocol only if its members fit (Kafka's group.consumer.max.size)")
	fs.IntVar(&cfg.GroupShareMaxSize, "group-share-max-size", 200, "share groups: most members a share group takes, 1 to 1000; a new member of a full group gets GROUP_MAX_SIZE_REACHED (Kafka's group.share.max.size)")
	fs.IntVar(&cfg.GroupShareMaxShareSessions, "group-share-max-share-sessions", 2000, "share groups: most share sessions this broker keeps, at least --group-share-max-size; a member opening one more gets SHARE_SESSION_LIMIT_REACHED (retriable), and a session goes when the connection that opened it closes (Kafka's group.share.max.share.sessions)")
	fs.IntVar(&cfg.GroupSharePartitionMaxRecordLocks, "group-share-partition-max-record-locks", 2000, "share groups: most records in flight (acquired or waiting for redelivery) in one share-partition; nothing past them is acquired until the oldest are acknowledged (Kafka's group.share.partition.max.record.locks)")
	fs.DurationVar(&cfg.GroupShareHeartbeatInterval, "group-share-heartbeat-interval", 5*time.Second, "share groups: heartbeat interval given to share-group members (Kafka's group.share.heartbeat.interval.ms)")
	fs.DurationVar(&cfg.GroupShareSessionTimeout, "group-share-session-timeout", 45*time.Second, "share groups: a share-group member silent this long is removed and its records released; must exceed --group-share-heartbeat-interval (Kafka's group.share.session.timeout.ms)")
	fs.StringVar(&cfg.DeadLetterTopicPrefix, "errors-deadletterqueue-topic-name-prefix", "dlq.", "share groups: the prefix a group's dead-letter topic (errors.deadletterqueue.topic.name) must have; empty allows any name (Kafka's errors.deadletterqueue.topic.name.prefix)")
	fs.BoolVar(&cfg.DeadLetterAutoCreate, "errors-deadletterqueue-auto-create-topics", false, "share groups: create a group's dead-letter topic that does not exist on its first write, with errors.deadletterqueue.group.enable=true (Kafka's errors.deadletterqueue.auto.create.topics.enable)")
	fs.IntVar(&cfg.GroupStreamsMaxSize, "group-streams-max-size", math.MaxInt32, "streams groups: most members a KIP-1071 streams group takes; a new member of a full group gets GROUP_MAX_SIZE_REACHED (Kafka's group.streams.max.size)")
	fs.DurationVar(&cfg.GroupStreamsHeartbeatInterval, "group-streams-heartbeat-interval", 5*time.Second, "streams groups: heartbeat interval given to KIP-1071 streams-group members (Kafka's group.streams.heartbeat.interval.ms)")
	fs.DurationVar(&cfg.GroupStreamsSessionTimeout, "group-streams-session-timeout", 45*time.Second, "streams groups: a KIP-1071 streams-group member silent this long is removed; must exceed --group-streams-heartbeat-interval (Kafka's group.streams.session.timeout.ms)")
	fs.DurationVar(&cfg.GroupStreamsInitialDelay, "group-streams-initial-rebalance-delay", 3*time.Second, "streams groups: how long a new KIP-1071 streams group waits for more members before its first task assignment; 0 does not wait (Kafka's group.streams.initial.rebalance.delay.ms)")
	fs.IntVar(&cfg.GroupStreamsNumStandbyReplicas, "group-streams-num-standby-replicas", 0, "streams groups: standby replicas of each stateful task, 0 to 2 (Kafka's group.streams.num.standby.replicas)")
	fs.DurationVar(&cfg.ShareRecordLockDuration, "share-record-lock-duration", 30*time.Second, "share groups: how long a record acquired by a share consumer stays locked to it before it can be delivered again (Kafka's share.record.lock.duration.ms)")
	fs.IntVar(&cfg.ShareDeliveryCountLimit, "share-delivery-count-limit", 5, "share groups: deliveries after which a record not accepted is archived, 2 to 10 (Kafka's group.share.delivery.count.limit)")
	fs.StringVar(&cfg.ShareAutoOffsetReset, "share-auto-offset-reset", "latest", "share groups: where a share group starts reading a partition it has not read before: latest or earliest (Kafka's share.auto.offset.reset)")
	fs.IntVar(&cfg.OffsetMetadataMaxBytes, "offset-metadata-max-bytes", 4096, "consumer groups: longest metadata string an offset commit may carry, at least 1; a longer one is refused with OFFSET_METADATA_TOO_LARGE for its partition (Kafka's offset.metadata.max.bytes)")
	fs.IntVar(&cfg.OffsetsRetentionMinutes, "offsets-retention-minutes", 7*24*60, "consumer groups: minutes a committed offset is kept once no member uses it, counted from when its group became empty (Kafka's offsets.retention.minutes)")
	fs.DurationVar(&cfg.ProducerIDExpiration, "producer-id-expiration", partition.DefaultProducerExpiration, "idempotent producers: a partition forgets a producer whose last batch is this old and that has no open transaction (its next batch then starts a new sequence), bounding the memory of producers that come and go (Kafka's producer.id.expiration.ms; a dynamic broker config of that name overrides it)")
	fs.DurationVar(&cfg.TransactionMaxTimeout, "transaction-max-timeout", 15*time.Minute, "transactions: the longest transaction timeout a producer may ask for in InitProducerId; more is refused with INVALID_TRANSACTION_TIMEOUT (Kafka's transaction.max.timeout.ms; raise it for clients with long transactions, such as Flink's exactly-once sink at one hour)")
	fs.DurationVar(&cfg.TransactionalIDExpiration, "transactional-id-expiration", 7*24*time.Hour, "transactions: a transactional id with no transaction in progress and no change for this long is forgotten, its log removed (Kafka's transactional.id.expiration.ms)")
	fs.StringVar(&cfg.HeartbeatAddr, "heartbeat-addr", ":9094", "cluster mode: address the heartbeat gRPC listener binds, host:port")
	fs.StringVar(&cfg.AdvertisedHeartbeatAddr, "advertised-heartbeat-addr", "", "cluster mode: heartbeat address other brokers dial (default <pod>.<service>.<namespace>.svc:<heartbeat port>)")
	fs.StringVar(&cfg.Service, "service", "kaas", "cluster mode: name of the headless Service that gives each broker pod its DNS name")
	fs.StringVar(&cfg.LeaseName, "lease-name", "kaas-controller", "cluster mode: name of the Lease whose holder is the controller")
	fs.DurationVar(&cfg.LeaseDuration, "lease-duration", 15*time.Second, "cluster mode: how long a Lease not renewed stays held before another broker may take it; must exceed --renew-deadline")
	fs.DurationVar(&cfg.RenewDeadline, "renew-deadline", 10*time.Second, "cluster mode: the controller steps down (stops writing assignment.json) if it cannot renew its Lease within this; must exceed --retry-period")
	fs.DurationVar(&cfg.RetryPeriod, "retry-period", 2*time.Second, "cluster mode: how often the Lease is renewed or tried and brokers re-read its epoch")
	fs.DurationVar(&cfg.FenceAfter, "fence-after", 4*time.Second, "cluster mode: a broker without a heartbeat exchange this long stops accepting writes (the controller's broker: this long after its last Lease renewal; at least twice --retry-period, at most --lease-duration - 1s)")
	fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", time.Second, "cluster mode: ping period to the controller (at most half of --fence-after)")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 45*time.Second, "cluster mode: on SIGTERM, how long to wait for the controller to move everything away before exiting")
	fs.DurationVar(&cfg.DeadAfter, "dead-after", 8*time.Second, "cluster mode: the controller declares a silent broker dead after this (must exceed --fence-after plus a margin)")
	fs.IntVar(&cfg.ConcurrentMoves, "concurrent-moves", 0, "cluster mode: the most planned partition moves (drain, rebalance) in motion at once, held, granted or still opening; more run in waves, which shortens each partition's unavailability and lengthens the drain; 0 moves everything at once")
	fs.DurationVar(&cfg.StrayGrace, "stray-grace", 2*time.Minute, "cluster mode: the controller removes a partition directory of a deleted topic that no broker removed (its leader was down) once it has been stray this long; 0 never")
	fs.Int64Var(&cfg.CleanerIORate, "cleaner-io-rate", 64<<20, "log cleaner (cleanup.policy=compact): bytes per second every compaction pass of the broker reads and writes, together; 0 is unthrottled (Kafka's log.cleaner.io.max.bytes.per.second)")
	fs.Int64Var(&cfg.CleanerBufferSize, "cleaner-dedupe-buffer-size", 128<<20, "log cleaner: memory bound of one pass's key map, in bytes (about 48 bytes a distinct key); a partition with more distinct dirty keys cleans in several passes (Kafka's log.cleaner.dedupe.buffer.size)")
	fs.DurationVar(&cfg.CleanerInterval, "cleaner-interval", 15*time.Second, "log cleaner: how often a compacted partition checks whether it is dirty enough to clean (Kafka's log.cleaner.backoff.ms)")
	fs.DurationVar(&cfg.RetentionCheckInterval, "retention-check-interval", 30*time.Second, "how often each partition's leader deletes the segments retention.ms and retention.bytes no longer keep (Kafka's log.retention.check.interval.ms)")
	fs.IntVar(&cfg.QuotaWindowNum, "quota-window-num", 11, "client quotas: samples a byte rate is measured over (Kafka's quota.window.num)")
	fs.DurationVar(&cfg.QuotaWindowSize, "quota-window-size", time.Second, "client quotas: length of one rate sample (Kafka's quota.window.size.seconds)")
	cfg.GroupBounds = newGroupBounds()
	addGroupBoundFlags(fs, cfg.GroupBounds)
	addSecurityFlags(fs, &cfg.securityConfig)
	return fs
}

// envName maps a flag name to its environment twin.
func envName(flagName string) string {
	return "KAAS_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseServe parses args and the KAAS_* environment, then validates.
func parseServe(args []string, getenv func(string) string, out io.Writer) (*serveConfig, error) {
	cfg := &serveConfig{}
	fs := newServeFlags(cfg, out)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (commands: serve (default), version, assignment)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", envName(f.Name), v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.explicit = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cfg.explicit[f.Name] = true })
	cfg.podName, cfg.podNamespace, cfg.podUID = getenv("MY_POD_NAME"), getenv("MY_POD_NAMESPACE"), getenv("MY_POD_UID")
	return cfg, cfg.validate()
}

func (c *serveConfig) validate() error {
	if _, _, err := net.SplitHostPort(c.KafkaAddr); err != nil {
		return fmt.Errorf("--kafka-addr %q: %w", c.KafkaAddr, err)
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			return fmt.Errorf("--http-addr %q: %w", c.HTTPAddr, err)
		}
	}
	lvl, err := zerolog.ParseLevel(c.LogLevel)
	if err != nil || c.LogLevel == "" {
		return fmt.Errorf("--log-level %q: want trace, debug, info, warn or error", c.LogLevel)
	}
	c.level = lvl
	if c.LogFormat != "json" && c.LogFormat != "console" {
		return fmt.Errorf("--log-format %q: want json or console", c.LogFormat)
	}
	if c.syncMode, err = disklog.ParseSyncMode(c.Fsync); err != nil {
		return fmt.Errorf("--fsync: %w", err)
	}
	if c.CleanerIORate < 0 || c.CleanerBufferSize < 1<<20 || c.CleanerInterval <= 0 {
		return fmt.Errorf("--cleaner-io-rate %d, --cleaner-dedupe-buffer-size %d, --cleaner-interval %s: want a rate >= 0, a buffer >= 1 MiB and a positive interval",
			c.CleanerIORate, c.CleanerBufferSize, c.CleanerInterval)
	}
	if c.RetentionCheckInterval < time.Millisecond {
		return fmt.Errorf("--retention-check-interval %s: want at least 1ms", c.RetentionCheckInterval)
	}
	if c.QuotaWindowNum < 2 || c.QuotaWindowSize <= 0 {
		return fmt.Errorf("--quota-window-num %d, --quota-window-size %s: want at least 2 samples of a positive length", c.QuotaWindowNum, c.QuotaWindowSize)
	}
	if c.MaxRequestSize < 1024 || c.MaxRequestSize > 1<<30 {
		return fmt.Errorf("--max-request-size %d: want 1024 .. 1073741824 bytes", c.MaxRequestSize)
	}
	if c.FetchSessionSlots < 0 {
		return fmt.Errorf("--fetch-session-cache-slots %d: want 0 or more", c.FetchSessionSlots)
	}
	if c.MaxConnections < 0 || c.MaxConnectionsPerIP < 0 || c.MaxConnectionCreationRate < 0 {
		return fmt.Errorf("--max-connections %d, --max-connections-per-ip %d, --max-connection-creation-rate %d: want 0 or more",
			c.MaxConnections, c.MaxConnectionsPerIP, c.MaxConnectionCreationRate)
	}
	if _, err := brokerconfig.ParseConnectionOverrides(c.MaxConnectionsPerIPOverrides); err != nil {
		return fmt.Errorf("--max-connections-per-ip-overrides: %w", err)
	}
	if c.MaxConnectionsPerIP == 0 && strings.TrimSpace(c.MaxConnectionsPerIPOverrides) == "" {
		return fmt.Errorf("--max-connections-per-ip can be 0 only with --max-connections-per-ip-overrides")
	}
	if c.DefaultPartitions < 1 {
		return fmt.Errorf("--default-partitions %d: must be at least 1", c.DefaultPartitions)
	}
	if c.GroupMinSessionTimeout <= 0 || c.GroupMaxSessionTimeout < c.GroupMinSessionTimeout {
		return fmt.Errorf("--group-min-session-timeout %s / --group-max-session-timeout %s: want 0 < min <= max", c.GroupMinSessionTimeout, c.GroupMaxSessionTimeout)
	}
	if c.GroupConsumerHeartbeatInterval <= 0 || c.GroupConsumerSessionTimeout <= c.GroupConsumerHeartbeatInterval {
		return fmt.Errorf("--group-consumer-session-timeout %s must exceed --group-consumer-heartbeat-interval %s", c.GroupConsumerSessionTimeout, c.GroupConsumerHeartbeatInterval)
	}
	if c.GroupStreamsHeartbeatInterval <= 0 || c.GroupStreamsSessionTimeout <= c.GroupStreamsHeartbeatInterval {
		return fmt.Errorf("--group-streams-session-timeout %s must exceed --group-streams-heartbeat-interval %s", c.GroupStreamsSessionTimeout, c.GroupStreamsHeartbeatInterval)
	}
	if c.GroupShareHeartbeatInterval <= 0 || c.GroupShareSessionTimeout <= c.GroupShareHeartbeatInterval {
		return fmt.Errorf("--group-share-session-timeout %s must exceed --group-share-heartbeat-interval %s", c.GroupShareSessionTimeout, c.GroupShareHeartbeatInterval)
	}
	if c.GroupStreamsInitialDelay < 0 {
		return fmt.Errorf("--group-streams-initial-rebalance-delay %s: must not be negative", c.GroupStreamsInitialDelay)
	}
	if c.GroupMaxSize < 1 {
		return fmt.Errorf("--group-max-size %d: must be at least 1", c.GroupMaxSize)
	}
	if c.GroupConsumerMaxSize < 1 {
		return fmt.Errorf("--group-consumer-max-size %d: must be at least 1", c.GroupConsumerMaxSize)
	}
	if c.GroupShareMaxSize < 1 || c.GroupShareMaxSize > 1000 {
		return fmt.Errorf("--group-share-max-size %d: must be 1 to 1000", c.GroupShareMaxSize)
	}
	if c.GroupShareMaxShareSessions < c.GroupShareMaxSize {
		return fmt.Errorf("--group-share-max-share-sessions=%d: must be at least --group-share-max-size (%d)", c.GroupShareMaxShareSessions, c.GroupShareMaxSize)
	}
	if c.GroupStreamsMaxSize < 1 {
		return fmt.Errorf("--group-streams-max-size %d: must be at least 1", c.GroupStreamsMaxSize)
	}
	if c.topicDefaults, err = parseTopicConfigDefaults(c.TopicConfigDefaults); err != nil {
		return err
	}
	if _, err := group.ParseAssignors(c.GroupConsumerAssignors); err != nil {
		return fmt.Errorf("--group-consumer-assignors %q: %w", c.GroupConsumerAssignors, err)
	}
	policy, err := group.ParseMigrationPolicy(c.GroupMigrationPolicy)
	if err != nil {
		return fmt.Errorf("--group-consumer-migration-policy: %w", err)
	}
	c.GroupMigrationPolicy = string(policy)
	if err := validateGroupBounds(c); err != nil {
		return err
	}
	if c.ShareAutoOffsetReset != "latest" && c.ShareAutoOffsetReset != "earliest" {
		return fmt.Errorf("--share-auto-offset-reset %q: want latest or earliest", c.ShareAutoOffsetReset)
	}
	if c.OffsetMetadataMaxBytes < 1 {
		return fmt.Errorf("--offset-metadata-max-bytes %d: must be at least 1", c.OffsetMetadataMaxBytes)
	}
	if c.OffsetsRetentionMinutes < 1 {
		return fmt.Errorf("--offsets-retention-minutes %d must be at least 1", c.OffsetsRetentionMinutes)
	}
	if c.ProducerIDExpiration < time.Millisecond {
		return fmt.Errorf("--producer-id-expiration %s: want at least 1ms", c.ProducerIDExpiration)
	}
	if c.TransactionMaxTimeout < time.Millisecond {
		return fmt.Errorf("--transaction-max-timeout %s: want at least 1ms", c.TransactionMaxTimeout)
	}
	if c.FetchMaxBytes < 1024 {
		return fmt.Errorf("--fetch-max-bytes %d: want at least 1024", c.FetchMaxBytes)
	}
	if c.ConnectionsMaxIdle < time.Millisecond {
		return fmt.Errorf("--connections-max-idle %s: want at least 1ms", c.ConnectionsMaxIdle)
	}
	if c.FailedAuthDelay < 0 {
		return errors.New("--connection-failed-authentication-delay must not be negative")
	}
	if c.FailedAuthDelay >= c.ConnectionsMaxIdle {
		// As Kafka requires: the connection would be closed as idle first.
		return fmt.Errorf("--connection-failed-authentication-delay %s: want less than --connections-max-idle (%s)", c.FailedAuthDelay, c.ConnectionsMaxIdle)
	}
	if c.TransactionalIDExpiration <= 0 {
		return fmt.Errorf("--transactional-id-expiration %s must be positive", c.TransactionalIDExpiration)
	}
	if err := c.validateAuthorizer(); err != nil {
		return err
	}
	if c.BrokerID < 0 {
		return fmt.Errorf("--broker-id %d: must not be negative", c.BrokerID)
	}
	if len(c.Rack) > maxRackLen {
		return fmt.Errorf("--rack: %d bytes, at most %d", len(c.Rack), maxRackLen)
	}
	if c.clusterMode() {
		if err := c.validateCluster(); err != nil {
			return err
		}
	}
	if err := c.expandOrdinals(); err != nil {
		return err
	}
	adv := c.AdvertisedAddr
	if adv == "" && c.clusterMode() {
		_, port, _ := net.SplitHostPort(c.KafkaAddr)
		adv = net.JoinHostPort(c.podName+"."+c.Service+"."+c.podNamespace+".svc", port)
	}
	if adv == "" {
		_, port, _ := net.SplitHostPort(c.KafkaAddr)
		adv = net.JoinHostPort("localhost", port)
	}
	host, portStr, err := net.SplitHostPort(adv)
	if err != nil || host == "" {
		return fmt.Errorf("--advertised-addr %q: want host:port", adv)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return fmt.Errorf("--advertised-addr %q: bad port", adv)
	}
	c.advHost, c.advPort = host, int32(port)
	if err := c.validateSecurity(); err != nil {
		return err
	}
	if c.DataDir != "" {
		if st, err := os.Stat(c.DataDir); err == nil && !st.IsDir() {
			return fmt.Errorf("--data-dir %q is not a directory", c.DataDir)
		}
	}
	return nil
}

// expandOrdinals puts the broker's ordinal into the listener address flags
// (expandOrdinal), so that one StatefulSet spec gives each pod its own
// address.
func (c *serveConfig) expandOrdinals() error {
	for _, f := range []struct {
		name string
		v    *string
	}{
		{"--kafka-addr", &c.KafkaAddr}, {"--advertised-addr", &c.AdvertisedAddr},
		{"--listeners", &c.Listeners}, {"--advertised-listeners", &c.AdvertisedListeners},
	} {
		v, err := expandOrdinal(*f.v, c.BrokerID)
		if err != nil {
			return fmt.Errorf("%s %q: %w", f.name, *f.v, err)
		}
		*f.v = v
	}
	return nil
}

// expandOrdinal replaces each {ordinal} in s with the broker's ordinal and
// each {ordinal+N} with the ordinal plus N: a port per pod
// (EXTERNAL://$(MY_HOST_IP):{ordinal+31090} behind a NodePort per pod) or
// a host name per pod. Any other brace is an error.
func expandOrdinal(s string, ordinal int) (string, error) {
	var out strings.Builder
	for {
		i := strings.IndexAny(s, "{}")
		if i < 0 {
			out.WriteString(s)
			return out.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if s[i] == '}' || j < 0 {
			return "", errors.New("unmatched brace: want {ordinal} or {ordinal+N}")
		}
		inner, n := s[i+1:i+j], ordinal
		if rest, ok := strings.CutPrefix(inner, "ordinal+"); ok {
			add, err := strconv.Atoi(rest)
			if err != nil || add < 0 || add > 65535 {
				return "", fmt.Errorf("{%s}: want {ordinal+N} with N a number from 0 to 65535", inner)
			}
			n += add
		} else if inner != "ordinal" {
			return "", fmt.Errorf("{%s}: want {ordinal} or {ordinal+N}", inner)
		}
		out.WriteString(s[:i])
		out.WriteString(strconv.Itoa(n))
		s = s[i+j+1:]
	}
}

// clusterMode is on when the broker runs in a pod (MY_POD_NAME set).
func (c *serveConfig) clusterMode() bool { return c.podName != "" }

// fenceMargin is the minimum gap between --fence-after and --dead-after: a
// silent broker must have stopped writing before its partitions move.
const fenceMargin = time.Second

// leaseSeconds is the lease duration other brokers wait out: client-go
// records it in the Lease in whole seconds, rounded down.
func leaseSeconds(d time.Duration) time.Duration { return d.Truncate(time.Second) }

func (c *serveConfig) validateCluster() error {
	id, err := brokerOrdinal(c.podName)
	if err != nil {
		return fmt.Errorf("MY_POD_NAME: %w", err)
	}
	c.BrokerID = id
	if c.podNamespace == "" {
		return errors.New("MY_POD_NAMESPACE must be set in cluster mode")
	}
	if c.DataDir == "" {
		return errors.New("--data-dir (the shared volume) is required in cluster mode")
	}
	if _, _, err := net.SplitHostPort(c.HeartbeatAddr); err != nil {
		return fmt.Errorf("--heartbeat-addr %q: %w", c.HeartbeatAddr, err)
	}
	if c.AdvertisedHeartbeatAddr == "" {
		_, port, _ := net.SplitHostPort(c.HeartbeatAddr)
		c.AdvertisedHeartbeatAddr = net.JoinHostPort(c.podName+"."+c.Service+"."+c.podNamespace+".svc", port)
	}
	if _, _, err := net.SplitHostPort(c.AdvertisedHeartbeatAddr); err != nil {
		return fmt.Errorf("--advertised-heartbeat-addr %q: %w", c.AdvertisedHeartbeatAddr, err)
	}
	switch {
	case c.RetryPeriod <= 0:
		return fmt.Errorf("--retry-period %s must be positive", c.RetryPeriod)
	case c.RenewDeadline <= c.RetryPeriod:
		return fmt.Errorf("--renew-deadline %s must exceed --retry-period %s", c.RenewDeadline, c.RetryPeriod)
	case c.LeaseDuration <= c.RenewDeadline:
		return fmt.Errorf("--lease-duration %s must exceed --renew-deadline %s", c.LeaseDuration, c.RenewDeadline)
	case c.HeartbeatInterval <= 0:
		return fmt.Errorf("--heartbeat-interval %s must be positive", c.HeartbeatInterval)
	case c.FenceAfter < 2*c.HeartbeatInterval:
		return fmt.Errorf("--fence-after %s must be at least twice --heartbeat-interval %s", c.FenceAfter, c.HeartbeatInterval)
	case c.FenceAfter < 2*c.RetryPeriod:
		return fmt.Errorf("--fence-after %s must be at least twice --retry-period %s: the controller's broker fences itself --fence-after after its last Lease renewal", c.FenceAfter, c.RetryPeriod)
	case c.FenceAfter+fenceMargin > leaseSeconds(c.LeaseDuration):
		return fmt.Errorf("--fence-after %s must be at most --lease-duration %s (whole seconds, as the Lease records it) - %s: the controller's broker must fence itself before another broker can take its Lease", c.FenceAfter, c.LeaseDuration, fenceMargin)
	case c.DeadAfter < c.FenceAfter+fenceMargin:
		return fmt.Errorf("--dead-after %s must be at least --fence-after %s + %s", c.DeadAfter, c.FenceAfter, fenceMargin)
	case c.ConcurrentMoves < 0:
		return fmt.Errorf("--concurrent-moves %d must not be negative (0: no limit)", c.ConcurrentMoves)
	case c.StrayGrace < 0:
		return fmt.Errorf("--stray-grace %s must not be negative (0 turns the sweep off)", c.StrayGrace)
	}
	return nil
}

// brokerOrdinal parses the StatefulSet ordinal from a pod name (kaas-2 -> 2).
func brokerOrdinal(pod string) (int, error) {
	i := strings.LastIndexByte(pod, '-')
	if i <= 0 || i == len(pod)-1 {
		return 0, fmt.Errorf("pod name %q has no -N ordinal suffix", pod)
	}
	n, err := strconv.Atoi(pod[i+1:])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("pod name %q: bad ordinal", pod)
	}
	return n, nil
}

// maxRackLen bounds --rack: a rack is a zone name, and it travels in every
// Metadata response.
const maxRackLen = 255

// rack is --rack as the view holds it (nil: none).
func (c *serveConfig) rack() *string {
	if c.Rack == "" {
		return nil
	}
	return &c.Rack
}
