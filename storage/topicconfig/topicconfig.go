// Package topicconfig knows Kafka's topic configuration keys: their types,
// defaults, documentation, broker-level synonyms and validation. It is pure:
// CreateTopics, AlterConfigs and DescribeConfigs use it, and so do log engines
// (through LogConfig).
package topicconfig

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/compaction"
)

// Type is a config value type, numbered as DescribeConfigs v3+ reports it.
type Type int8

// Kafka's ConfigType numbering.
const (
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

// Key describes one topic configuration key.
type Key struct {
	Name    string
	Type    Type
	Default string
	// Synonym is the broker-level config that provides the default.
	Synonym string
	Doc     string
	// Check validates a value beyond its type (nil = any value of the type).
	Check func(v string) error
}

func oneOf(opts ...string) func(string) error {
	return func(v string) error {
		for _, o := range opts {
			if v == o {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(opts, ", "))
	}
}

func atLeast(n int64) func(string) error {
	return func(v string) error {
		i, _ := strconv.ParseInt(v, 10, 64)
		if i < n {
			return fmt.Errorf("must be at least %d", n)
		}
		return nil
	}
}

func between(lo, hi int64) func(string) error {
	return func(v string) error {
		i, _ := strconv.ParseInt(v, 10, 64)
		if i < lo || i > hi {
			return fmt.Errorf("must be between %d and %d", lo, hi)
		}
		return nil
	}
}

func betweenFloat(lo, hi float64) func(string) error {
	return func(v string) error {
		f, _ := strconv.ParseFloat(v, 64)
		if !(f >= lo && f <= hi) {
			return fmt.Errorf("must be between %g and %g", lo, hi)
		}
		return nil
	}
}

// gzipLevel is Kafka's gzip level range: -1 (the codec default) or 1 to 9.
func gzipLevel(v string) error {
	if v == "-1" {
		return nil
	}
	if between(1, 9)(v) != nil {
		return fmt.Errorf("must be -1 or between 1 and 9")
	}
	return nil
}

// cleanupPolicy accepts Kafka's list of compact and delete.
func cleanupPolicy(v string) error {
	for _, p := range strings.Split(v, ",") {
		switch strings.TrimSpace(p) {
		case "delete", "compact":
		default:
			return fmt.Errorf("must be a list of compact, delete")
		}
	}
	return nil
}

// compressionCodecs maps compression.type to Kafka's codec numbers;
// producer (keep the batch as produced) has none.
var compressionCodecs = map[string]int16{
	"uncompressed": batch.CodecNone, "gzip": batch.CodecGzip, "snappy": batch.CodecSnappy,
	"lz4": batch.CodecLz4, "zstd": batch.CodecZstd,
}

// compressionType accepts Kafka's codecs and producer.
func compressionType(v string) error {
	return oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")(v)
}

// throttledReplicas is Kafka's throttled replica list: empty, "*", or
// partition:broker pairs.
func throttledReplicas(v string) error {
	if strings.TrimSpace(v) == "" || strings.TrimSpace(v) == "*" {
		return nil
	}
	for _, e := range strings.Split(v, ",") {
		p, b, ok := strings.Cut(strings.TrimSpace(e), ":")
		_, perr := strconv.ParseUint(p, 10, 31)
		_, berr := strconv.ParseUint(b, 10, 31)
		if !ok || perr != nil || berr != nil {
			return fmt.Errorf("must be * or a list of partition:broker pairs")
		}
	}
	return nil
}

func refuseTrue(why string) func(string) error {
	return func(v string) error {
		if v == "true" {
			return fmt.Errorf("%s", why)
		}
		return nil
	}
}

// noEffect ends the Doc of a config kaas validates but does not act on.
const noEffect = " kaas accepts and validates it, without effect."

// MaxTimestampBound is the value of a timestamp bound that disables it.
const MaxTimestampBound = math.MaxInt64

const (
	maxLong = "9223372036854775807"
	// defaultAfterMaxMs is Kafka 4's message.timestamp.after.max.ms default (KIP-1030).
	defaultAfterMaxMs = 3600000
)

// Keys is every topic config kaas accepts, by name: the topic configs of
// Apache Kafka 4, with their types, defaults and valid ranges.
var Keys = map[string]Key{}

func init() {
	for _, k := range []Key{
		{Name: "cleanup.policy", Type: TypeList, Default: "delete", Synonym: "log.cleanup.policy",
			Doc:   "The retention policy for old log segments: delete (retention.ms/retention.bytes remove old segments), compact (the log cleaner keeps the latest record per key), or both.",
			Check: cleanupPolicy},
		{Name: "compression.type", Type: TypeString, Default: "producer", Synonym: "compression.type",
			Doc:   "The final compression type for a topic: producer keeps each batch's codec as produced; gzip, snappy, lz4, zstd or uncompressed make the broker recompress batches produced with another codec.",
			Check: compressionType},
		{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Synonym: "compression.gzip.level",
			Doc: "The compression level for gzip when compression.type is gzip: the level batches produced with another codec are recompressed at (unset: kaas's default level for gzip).", Check: gzipLevel},
		{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Synonym: "compression.lz4.level",
			Doc: "The compression level for lz4 when compression.type is lz4: the level batches produced with another codec are recompressed at (unset: kaas's default level for lz4).", Check: between(1, 17)},
		{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Synonym: "compression.zstd.level",
			Doc: "The compression level for zstd when compression.type is zstd: the level batches produced with another codec are recompressed at (unset: kaas's default level for zstd).", Check: between(-131072, 22)},
		{Name: "errors.deadletterqueue.group.enable", Type: TypeBoolean, Default: "false", Synonym: "errors.deadletterqueue.group.enable",
			Doc: "Whether share groups may use this topic as their dead-letter queue topic (KIP-1191): a group's errors.deadletterqueue.topic.name naming a topic without it gets nothing written there."},
		{Name: "delete.retention.ms", Type: TypeLong, Default: "86400000", Synonym: "log.cleaner.delete.retention.ms",
			Doc: "How long delete tombstones are retained for compacted topics.", Check: atLeast(0)},
		{Name: "file.delete.delay.ms", Type: TypeLong, Default: "60000", Synonym: "log.segment.delete.delay.ms",
			Doc: "The time to wait before deleting a file from the filesystem: a deleted segment's files are renamed aside (*.deleted) and unlinked this much later (0: at once).", Check: atLeast(0)},
		{Name: "flush.messages", Type: TypeLong, Default: maxLong, Synonym: "log.flush.interval.messages",
			Doc: "Accepted for compatibility; kaas flushes per acks=all group commit.", Check: atLeast(1)},
		{Name: "flush.ms", Type: TypeLong, Default: maxLong, Synonym: "log.flush.interval.ms",
			Doc: "Accepted for compatibility; kaas flushes per acks=all group commit.", Check: atLeast(0)},
		{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", Synonym: "follower.replication.throttled.replicas",
			Doc: "Replicas whose log replication is throttled on the follower side." + noEffect, Check: throttledReplicas},
		{Name: "index.interval.bytes", Type: TypeInt, Default: "4096", Synonym: "log.index.interval.bytes",
			Doc: "How frequently an entry is added to the offset index.", Check: atLeast(0)},
		{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", Synonym: "leader.replication.throttled.replicas",
			Doc: "Replicas whose log replication is throttled on the leader side." + noEffect, Check: throttledReplicas},
		{Name: "local.retention.bytes", Type: TypeLong, Default: "-2", Synonym: "log.local.retention.bytes",
			Doc: "The local size a partition may grow to before tiered storage deletes local segments; -2 is retention.bytes." + noEffect, Check: atLeast(-2)},
		{Name: "local.retention.ms", Type: TypeLong, Default: "-2", Synonym: "log.local.retention.ms",
			Doc: "How long tiered storage keeps a local segment; -2 is retention.ms." + noEffect, Check: atLeast(-2)},
		{Name: "max.compaction.lag.ms", Type: TypeLong, Default: maxLong, Synonym: "log.cleaner.max.compaction.lag.ms",
			Doc: "The maximum time a message remains ineligible for compaction.", Check: atLeast(1)},
		{Name: "max.message.bytes", Type: TypeInt, Default: "1048588", Synonym: "message.max.bytes",
			Doc: "The largest record batch size allowed.", Check: atLeast(0)},
		{Name: "message.downconversion.enable", Type: TypeBoolean, Default: "true", Synonym: "log.message.downconversion.enable",
			Doc: "Deprecated: removed in Kafka 4.0. Accepted for older clients; kaas serves only record batch v2."},
		{Name: "message.timestamp.after.max.ms", Type: TypeLong, Default: strconv.Itoa(defaultAfterMaxMs), Synonym: "log.message.timestamp.after.max.ms",
			Doc:   "The maximum allowed difference between a later record timestamp and the broker's time, with message.timestamp.type CreateTime; a batch beyond it is refused with INVALID_TIMESTAMP.",
			Check: atLeast(0)},
		{Name: "message.timestamp.before.max.ms", Type: TypeLong, Default: maxLong, Synonym: "log.message.timestamp.before.max.ms",
			Doc:   "The maximum allowed difference between the broker's time and an earlier record timestamp, with message.timestamp.type CreateTime; a batch beyond it is refused with INVALID_TIMESTAMP.",
			Check: atLeast(0)},
		{Name: "message.timestamp.difference.max.ms", Type: TypeLong, Default: maxLong, Synonym: "log.message.timestamp.difference.max.ms",
			Doc:   "Deprecated: removed in Kafka 4.0. Accepted for older clients (kafkajs sets it), as Kafka 3.x: the bound of message.timestamp.before.max.ms and message.timestamp.after.max.ms when the topic does not set them.",
			Check: atLeast(0)},
		{Name: "message.timestamp.type", Type: TypeString, Default: "CreateTime", Synonym: "log.message.timestamp.type",
			Doc: "Whether the timestamp in the message is the create time or the log append time.", Check: oneOf("CreateTime", "LogAppendTime")},
		{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, Default: "0.5", Synonym: "log.cleaner.min.cleanable.ratio",
			Doc: "The ratio of uncompacted log to total log that makes a log eligible for cleaning.", Check: betweenFloat(0, 1)},
		{Name: "min.compaction.lag.ms", Type: TypeLong, Default: "0", Synonym: "log.cleaner.min.compaction.lag.ms",
			Doc: "The minimum time a message remains uncompacted in the log.", Check: atLeast(0)},
		{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Synonym: "min.insync.replicas",
			Doc: "Accepted for compatibility; kaas keeps one copy on a shared volume, so 1 is the only meaningful value.", Check: atLeast(1)},
		{Name: "preallocate", Type: TypeBoolean, Default: "false", Synonym: "log.preallocate",
			Doc: "Whether to preallocate the file on disk when creating a new segment." + noEffect},
		{Name: "remote.log.copy.disable", Type: TypeBoolean, Default: "false", Synonym: "remote.log.copy.disable",
			Doc: "Whether tiered storage stops copying segments to remote storage." + noEffect},
		{Name: "remote.log.delete.on.disable", Type: TypeBoolean, Default: "false", Synonym: "remote.log.delete.on.disable",
			Doc: "Whether remote segments are deleted when tiered storage is disabled on the topic." + noEffect},
		{Name: "remote.storage.enable", Type: TypeBoolean, Default: "false", Synonym: "remote.storage.enable",
			Doc:   "Whether tiered storage is enabled for the topic. kaas has no tiered storage, so true is refused.",
			Check: refuseTrue("kaas has no tiered storage")},
		{Name: "retention.bytes", Type: TypeLong, Default: "-1", Synonym: "log.retention.bytes",
			Doc: "The maximum size a partition can grow to before old segments are discarded; -1 is no limit, 0 keeps nothing.", Check: atLeast(-1)},
		{Name: "retention.ms", Type: TypeLong, Default: "604800000", Synonym: "log.retention.ms",
			Doc: "The maximum time a segment is retained before it is discarded; -1 is no time limit, 0 keeps nothing older than now.", Check: atLeast(-1)},
		{Name: "segment.bytes", Type: TypeInt, Default: "1073741824", Synonym: "log.segment.bytes",
			Doc: "The segment file size for the log. kaas accepts segments down to 14 bytes, as Kafka did before 4.0 raised the minimum to 1 MiB.", Check: atLeast(14)},
		{Name: "segment.index.bytes", Type: TypeInt, Default: "10485760", Synonym: "log.index.size.max.bytes",
			Doc: "The size of the index that maps offsets to file positions." + noEffect, Check: atLeast(4)},
		{Name: "segment.jitter.ms", Type: TypeLong, Default: "0", Synonym: "log.roll.jitter.ms",
			Doc: "The maximum random jitter subtracted from the scheduled segment roll time (segment.ms), drawn per segment so that partitions do not all roll at once.", Check: atLeast(0)},
		{Name: "segment.ms", Type: TypeLong, Default: "604800000", Synonym: "log.roll.ms",
			Doc: "The period after which the log rolls a segment even if it is not full.", Check: atLeast(1)},
		{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Synonym: "unclean.leader.election.enable",
			Doc: "Accepted for compatibility; with one shared copy every election is clean."},
	} {
		Keys[k.Name] = k
	}
}

// Names returns every key name, sorted.
func Names() []string {
	out := make([]string, 0, len(Keys))
	for n := range Keys {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ValidateOne checks one key and value.
func ValidateOne(name, value string) error {
	k, ok := Keys[name]
	if !ok {
		return fmt.Errorf("unknown topic config %q", name)
	}
	switch k.Type {
	case TypeBoolean:
		if value != "true" && value != "false" {
			return fmt.Errorf("invalid value %q for %s: must be true or false", value, name)
		}
	case TypeInt:
		if _, err := strconv.ParseInt(value, 10, 32); err != nil {
			return fmt.Errorf("invalid value %q for %s: not a 32-bit integer", value, name)
		}
	case TypeLong:
		if _, err := strconv.ParseInt(value, 10, 64); err != nil {
			return fmt.Errorf("invalid value %q for %s: not a 64-bit integer", value, name)
		}
	case TypeDouble:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return fmt.Errorf("invalid value %q for %s: not a number", value, name)
		}
	}
	if k.Check != nil {
		if err := k.Check(value); err != nil {
			return fmt.Errorf("invalid value %q for %s: %w", value, name, err)
		}
	}
	return nil
}

// Validate checks a whole config map.
func Validate(cfg map[string]string) error {
	names := make([]string, 0, len(cfg))
	for n := range cfg {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ValidateOne(n, cfg[n]); err != nil {
			return err
		}
	}
	return nil
}

// Value returns the effective value of name: the override in cfg or the default.
func Value(cfg map[string]string, name string) string {
	if v, ok := cfg[name]; ok {
		return v
	}
	return Keys[name].Default
}

func int64Value(cfg map[string]string, name string) int64 {
	v, err := strconv.ParseInt(Value(cfg, name), 10, 64)
	if err != nil {
		v, _ = strconv.ParseInt(Keys[name].Default, 10, 64)
	}
	return v
}

// MaxMessageBytes is the effective max.message.bytes.
func MaxMessageBytes(cfg map[string]string) int { return int(int64Value(cfg, "max.message.bytes")) }

// Recompression returns the codec compression.type asks produced batches
// to be stored with; ok is false for producer (batches kept as produced).
func Recompression(cfg map[string]string) (codec int16, ok bool) {
	codec, ok = compressionCodecs[Value(cfg, "compression.type")]
	return codec, ok
}

// CompressionLevel is the compression.<codec>.level set on a topic for
// the codec recompression uses (gzip, lz4, zstd); ok is false when it is
// not set (or the codec has no level).
func CompressionLevel(cfg map[string]string, codec int16) (level int, ok bool) {
	name := map[int16]string{1: "compression.gzip.level", 3: "compression.lz4.level", 4: "compression.zstd.level"}[codec]
	v, set := cfg[name]
	if name == "" || !set {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// LogAppendTime reports message.timestamp.type=LogAppendTime.
func LogAppendTime(cfg map[string]string) bool {
	return Value(cfg, "message.timestamp.type") == "LogAppendTime"
}

// TimestampBounds returns the effective message.timestamp.before.max.ms and
// message.timestamp.after.max.ms; MaxTimestampBound means no bound. The
// deprecated message.timestamp.difference.max.ms stands in for either one
// the topic does not set, as in Kafka 3.x. It does not parse defaults, so it
// is cheap enough to call per produce.
func TimestampBounds(cfg map[string]string) (before, after int64) {
	before, after = MaxTimestampBound, defaultAfterMaxMs
	if v, ok := cfg["message.timestamp.difference.max.ms"]; ok {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			before, after = i, i
		}
	}
	if v, ok := cfg["message.timestamp.before.max.ms"]; ok {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			before = i
		}
	}
	if v, ok := cfg["message.timestamp.after.max.ms"]; ok {
		if i, err := strconv.ParseInt(v, 10, 64); err == nil {
			after = i
		}
	}
	return before, after
}

func millis(v int64) time.Duration {
	if v < 0 {
		return -1
	}
	if v > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(v) * time.Millisecond
}

// retentionLimit is retention.ms or retention.bytes as storage.LogConfig
// carries it: there zero is no limit (Kafka's negative), so Kafka's 0
// (keep nothing) is negative.
func retentionLimit(v int64) int64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return -1
	default:
		return v
	}
}

// fileDeleteDelay is file.delete.delay.ms as storage.LogConfig carries it:
// there zero is the engine's default, so Kafka's 0 (unlink at once) is
// negative.
func fileDeleteDelay(ms int64) time.Duration {
	if ms <= 0 {
		return -1
	}
	return millis(ms)
}

// LogConfig derives what a log engine obeys from a topic config. Without
// delete in cleanup.policy (compact alone), retention.ms and
// retention.bytes remove nothing, as in Kafka; with compact, the active
// segment rolls by max.compaction.lag.ms when that is sooner than segment.ms.
func LogConfig(cfg map[string]string) storage.LogConfig {
	c := storage.LogConfig{
		SegmentBytes:    int64Value(cfg, "segment.bytes"),
		SegmentMs:       millis(int64Value(cfg, "segment.ms")),
		SegmentJitter:   millis(int64Value(cfg, "segment.jitter.ms")),
		FileDeleteDelay: fileDeleteDelay(int64Value(cfg, "file.delete.delay.ms")),
		RetentionMs:     millis(retentionLimit(int64Value(cfg, "retention.ms"))),
		RetentionBytes:  retentionLimit(int64Value(cfg, "retention.bytes")),
		IndexInterval:   int32(int64Value(cfg, "index.interval.bytes")),
	}
	if !policyHas(cfg, "delete") {
		c.RetentionMs, c.RetentionBytes = 0, 0
	}
	if policyHas(cfg, "compact") {
		// The active segment is never cleaned: roll it in time for a
		// record never to stay uncompacted past max.compaction.lag.ms.
		if lag := millis(int64Value(cfg, "max.compaction.lag.ms")); lag > 0 && lag < c.SegmentMs {
			c.SegmentMs = lag
		}
	}
	return c
}

func policyHas(cfg map[string]string, p string) bool {
	for _, v := range strings.Split(Value(cfg, "cleanup.policy"), ",") {
		if strings.TrimSpace(v) == p {
			return true
		}
	}
	return false
}

// Compacted reports compact in cleanup.policy.
func Compacted(cfg map[string]string) bool { return policyHas(cfg, "compact") }

// Compaction derives the log cleaner's settings from a topic config.
func Compaction(cfg map[string]string) compaction.Config {
	ratio, err := strconv.ParseFloat(Value(cfg, "min.cleanable.dirty.ratio"), 64)
	if err != nil {
		ratio = 0.5
	}
	return compaction.Config{
		MinDirtyRatio:   ratio,
		MinLagMs:        int64Value(cfg, "min.compaction.lag.ms"),
		MaxLagMs:        int64Value(cfg, "max.compaction.lag.ms"),
		DeleteRetention: int64Value(cfg, "delete.retention.ms"),
	}
}
