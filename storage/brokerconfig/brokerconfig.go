// Package brokerconfig holds Kafka's dynamic broker configs (KIP-226): the
// BROKER config resources AlterConfigs and IncrementalAlterConfigs change at
// runtime, for one broker (resource name "<id>") or as the cluster-wide
// default (resource name ""). The keys, their types and validation, the
// precedence (per-broker dynamic > cluster default dynamic > static flag >
// Kafka default) and the topic defaults they imply are plain functions over
// maps; Store keeps them in one file on the shared volume.
package brokerconfig

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// Key is one dynamic broker config. What kaas does with it is in its Doc:
// the broker defaults of topic configs (TopicDefaults) and the cleaner's
// I/O rate (CleanerIORate) are applied, the others stored and reported.
type Key struct {
	Type topicconfig.Type
	// Default is Kafka's default ("" when Kafka has none).
	Default string
	// PerBroker configs can only be set for a named broker, never as the
	// cluster-wide default.
	PerBroker bool
	// Check validates a value beyond its type (nil: any value of the type).
	Check func(string) error
	Doc   string
}

// topicSynonym is a topic config whose broker-level synonym is a dynamic
// broker config, with the topic config it stands for.
type topicSynonym struct {
	topic string
	// scale turns the broker value into the topic value (hours and minutes
	// into milliseconds); 0 is 1.
	scale int64
}

// synonyms maps each broker config that is the default of a topic config
// to that topic config (Kafka's ServerTopicConfigSynonyms).
var synonyms = map[string]topicSynonym{}

// Keys are the dynamic broker configs of Apache Kafka 4 that kaas accepts:
// DynamicBrokerConfig.AllDynamicConfigs less the listener set, which
// kaas's flags own (see ReadOnly).
var Keys = map[string]Key{}

// sslDynamic are Kafka's reconfigurable SSL configs: settable per listener
// only (listener.name.<listener>.<config>).
var sslDynamic = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.type", "ssl.truststore.location",
	"ssl.truststore.password", "ssl.truststore.certificates",
}

// ReadOnly are Kafka broker configs that cannot change at runtime, in Kafka
// or in kaas (the listener configs are dynamic per broker in Kafka, but
// kaas's listeners are its --listeners and --advertised-* flags). A name
// that is neither here, in Keys, nor a static config of the broker is a
// custom config, which Kafka stores and reports; so does kaas.
var ReadOnly = map[string]bool{}

func init() {
	for _, n := range []string{
		"broker.id", "node.id", "process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
		"controller.listener.names", "log.dir", "log.dirs", "metadata.log.dir", "zookeeper.connect",
		"listeners", "advertised.listeners", "listener.security.protocol.map", "inter.broker.listener.name",
		"security.inter.broker.protocol", "auto.create.topics.enable", "num.partitions", "default.replication.factor",
		"delete.topic.enable", "socket.request.max.bytes", "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
		"queued.max.requests", "replica.lag.time.max.ms", "replica.fetch.max.bytes", "offsets.topic.replication.factor",
		"offsets.topic.num.partitions", "offsets.retention.minutes", "offset.metadata.max.bytes", "transaction.state.log.replication.factor",
		"transaction.state.log.min.isr", "transactional.id.expiration.ms", "group.initial.rebalance.delay.ms",
		"group.min.session.timeout.ms", "group.max.session.timeout.ms", "group.consumer.heartbeat.interval.ms",
		"group.consumer.session.timeout.ms", "group.streams.heartbeat.interval.ms", "group.streams.session.timeout.ms",
		"group.streams.num.standby.replicas", "group.streams.initial.rebalance.delay.ms", "group.max.size", "group.consumer.max.size",
		"group.share.max.size", "group.share.max.share.sessions", "group.streams.max.size", "max.incremental.fetch.session.cache.slots", "authorizer.class.name",
		"super.users", "allow.everyone.if.no.acl.found", "log.cleaner.enable", "log.retention.check.interval.ms",
		"quota.window.num", "quota.window.size.seconds", "connections.max.idle.ms", "request.timeout.ms",
		"sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol", "cluster.id",
	} {
		ReadOnly[n] = true
	}
	// The bounds of GROUP configs and the share-group defaults: static on
	// Kafka brokers.
	for _, k := range groupconfig.Keys {
		for _, n := range []string{k.MinConfig, k.MaxConfig} {
			if n != "" {
				ReadOnly[n] = true
			}
		}
	}
	for _, n := range []string{"group.share.record.lock.duration.ms", "group.share.delivery.count.limit",
		"group.share.session.timeout.ms", "group.share.heartbeat.interval.ms", "group.share.partition.max.record.locks", "group.consumer.assignors"} {
		ReadOnly[n] = true
	}
	// The broker defaults of topic configs (Kafka's log configs).
	topicOnly := map[string]bool{ // topic configs without a broker-level twin
		"follower.replication.throttled.replicas": true, "leader.replication.throttled.replicas": true,
		"remote.log.copy.disable": true, "remote.log.delete.on.disable": true, "remote.storage.enable": true,
		"log.message.downconversion.enable": true, "log.message.timestamp.difference.max.ms": true,
		"errors.deadletterqueue.group.enable": true,
	}
	for _, name := range topicconfig.Names() {
		tk := topicconfig.Keys[name]
		if topicOnly[tk.Synonym] {
			continue
		}
		synonyms[tk.Synonym] = topicSynonym{topic: name}
		Keys[tk.Synonym] = Key{Type: tk.Type, Default: tk.Default, Check: tk.Check,
			Doc: "The broker default of the topic config " + name + ": " + tk.Doc}
	}
	for name, s := range map[string]struct {
		topicSynonym
		unit, def string
	}{
		"log.retention.minutes": {topicSynonym{topic: "retention.ms", scale: 60_000}, "minutes", ""},
		"log.retention.hours":   {topicSynonym{topic: "retention.ms", scale: 3_600_000}, "hours", "168"},
		"log.roll.hours":        {topicSynonym{topic: "segment.ms", scale: 3_600_000}, "hours", "168"},
		"log.roll.jitter.hours": {topicSynonym{topic: "segment.jitter.ms", scale: 3_600_000}, "hours", "0"},
	} {
		synonyms[name] = s.topicSynonym
		Keys[name] = Key{Type: topicconfig.TypeInt, Default: s.def, Check: atLeast(-1),
			Doc: "The broker default of the topic config " + s.topic + ", in " + s.unit + " (the milliseconds config wins over it)."}
	}
	Keys[CordonedLogDirs] = Key{Type: topicconfig.TypeList, Default: "",
		Doc: "Log dirs that take no new partitions (KIP-1066): the broker's log dir (log.dirs), or * for all. " +
			"A kaas broker has one log dir, so this cordons the broker: the controller gives it no partition it does not lead already; " +
			"applied at once."}
	Keys[DeadLetterTopicPrefix] = Key{Type: topicconfig.TypeString, Default: "dlq.",
		Doc: "The prefix a share group's dead-letter topic name must have (KIP-1191; empty: any name); applied at once."}
	Keys[DeadLetterAutoCreate] = Key{Type: topicconfig.TypeBoolean, Default: "false",
		Doc: "Whether a share group's dead-letter topic that does not exist is created on its first write (KIP-1191); applied at once."}
	Keys["log.flush.scheduler.interval.ms"] = Key{Type: topicconfig.TypeLong, Default: "9223372036854775807", Check: atLeast(0),
		Doc: "How often the log flusher checks whether a log needs a flush. kaas flushes per acks=all group commit."}
	stored := func(typ topicconfig.Type, def string, check func(string) error, doc string) Key {
		return Key{Type: typ, Default: def, Check: check, Doc: doc + " kaas stores and reports it, without effect."}
	}
	Keys["log.cleaner.io.max.bytes.per.second"] = Key{Type: topicconfig.TypeDouble, Check: nonNegativeFloat,
		Doc: "Bytes per second every compaction pass of the broker reads and writes, together (0: unthrottled); applied at once."}
	Keys[CleanerBackoff] = Key{Type: topicconfig.TypeLong, Default: "15000", Check: atLeast(1),
		Doc: "How long a compacted partition waits between checks whether it is dirty enough to clean; applied at each partition's next wait."}
	Keys[CleanerDedupeBufferSize] = Key{Type: topicconfig.TypeLong, Default: "134217728", Check: atLeast(1 << 20),
		Doc: "Memory bound of a cleaning pass's key map (one pass runs at a time in the broker); applied from the next pass."}
	Keys["log.cleaner.threads"] = stored(topicconfig.TypeInt, "1", atLeast(0), "Threads of the log cleaner.")
	Keys["log.cleaner.io.buffer.size"] = stored(topicconfig.TypeInt, "524288", atLeast(0), "Memory of the cleaner's I/O buffers.")
	Keys["log.cleaner.io.buffer.load.factor"] = stored(topicconfig.TypeDouble, "0.9", nil, "Load factor of the cleaner's key map.")
	for name, def := range map[string]string{"num.io.threads": "8", "num.network.threads": "3", "num.replica.fetchers": "1",
		"num.recovery.threads.per.data.dir": "2", "background.threads": "10"} {
		Keys[name] = stored(topicconfig.TypeInt, def, atLeast(1), "Kafka's thread pool size; kaas runs actors on its own pools.")
	}
	Keys[MaxConnections] = Key{Type: topicconfig.TypeInt, Default: "2147483647", Check: atLeast(0),
		Doc: "The most connections the broker serves at once, on all listeners together (listener.name.<listener>.max.connections: on one); " +
			"at the limit a listener accepts nothing more until one closes, the inter-broker listener excepted " +
			"(it closes the least recently active connection of another listener instead); applied at once."}
	Keys[MaxConnectionsPerIP] = Key{Type: topicconfig.TypeInt, Default: "2147483647", Check: atLeast(0),
		Doc: "The most connections one address may have open; one more is closed at once. 0 only with max.connections.per.ip.overrides; applied at once."}
	Keys[MaxConnectionsPerIPOverrides] = Key{Type: topicconfig.TypeString, Default: "",
		Check: func(v string) error { _, err := ParseConnectionOverrides(v); return err },
		Doc:   "Per-address exceptions to max.connections.per.ip, as host:count entries (an IP address or a host name, resolved when applied), comma-separated; applied at once."}
	Keys[MaxConnectionCreationRate] = Key{Type: topicconfig.TypeInt, Default: "2147483647", Check: atLeast(0),
		Doc: "The most connections the broker accepts per second on all listeners but the inter-broker one " +
			"(listener.name.<listener>.max.connection.creation.rate: on one, the inter-broker one included), measured as client quotas are; " +
			"a connection over it is held for its throttle time, at most one quota window, before it is served; applied at once."}
	Keys["metric.reporters"] = stored(topicconfig.TypeList, "", nil, "Metrics reporter classes; kaas serves Prometheus metrics.")
	Keys["config.providers"] = stored(topicconfig.TypeList, "", nil, "Config provider classes.")
	Keys[ProducerIDExpiration] = Key{Type: topicconfig.TypeInt, Default: "86400000", Check: atLeast(1),
		Doc: "How long a partition remembers an idempotent producer whose last batch is that old and that has no open transaction; applied at the partitions' next maintenance."}
	Keys["transaction.partition.verification.enable"] = stored(topicconfig.TypeBoolean, "true", nil,
		"KIP-890 produce verification; kaas always verifies.")
	Keys["follower.fetch.last.tiered.offset.enable"] = stored(topicconfig.TypeBoolean, "false", nil, "Tiered storage follower fetch.")
	for name, def := range map[string]string{"remote.log.manager.copy.max.bytes.per.second": "9223372036854775807",
		"remote.log.manager.fetch.max.bytes.per.second": "9223372036854775807", "remote.log.index.file.cache.total.size.bytes": "1073741824",
		"remote.list.offsets.request.timeout.ms": "30000"} {
		Keys[name] = stored(topicconfig.TypeLong, def, atLeast(1), "Tiered storage; kaas has none.")
	}
	for name, def := range map[string]string{"remote.fetch.max.wait.ms": "500", "remote.log.manager.copier.thread.pool.size": "10",
		"remote.log.manager.expiration.thread.pool.size": "10"} {
		Keys[name] = stored(topicconfig.TypeInt, def, atLeast(1), "Tiered storage; kaas has none.")
	}
}

// The log cleaner's dynamic configs kaas applies.
const (
	CleanerBackoff          = "log.cleaner.backoff.ms"
	CleanerDedupeBufferSize = "log.cleaner.dedupe.buffer.size"
)

// Cleaner is log.cleaner.backoff.ms and log.cleaner.dedupe.buffer.size
// among the configs in force, each the static value given when unset.
func Cleaner(inForce map[string]string, backoff time.Duration, mapBytes int64) (time.Duration, int64) {
	if ms, err := strconv.ParseInt(strings.TrimSpace(inForce[CleanerBackoff]), 10, 64); err == nil && ms >= 1 {
		backoff = time.Duration(ms) * time.Millisecond
	}
	if n, err := strconv.ParseInt(strings.TrimSpace(inForce[CleanerDedupeBufferSize]), 10, 64); err == nil && n >= 1<<20 {
		mapBytes = n
	}
	return backoff, mapBytes
}

// ProducerIDExpiration is Kafka's producer.id.expiration.ms (KIP-854).
const ProducerIDExpiration = "producer.id.expiration.ms"

// ProducerExpiration is producer.id.expiration.ms among the configs in
// force, when set.
func ProducerExpiration(inForce map[string]string) (d time.Duration, ok bool) {
	v, set := inForce[ProducerIDExpiration]
	if !set {
		return 0, false
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || ms < 1 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// CordonedLogDirs is KIP-1066's broker config: the log dirs that take no
// new partitions, as a comma-separated list or "*" for every one.
const CordonedLogDirs = "cordoned.log.dirs"

// cordonedEntries are the entries of a cordoned.log.dirs value, trimmed;
// none for an empty value.
func cordonedEntries(v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	out := strings.Split(v, ",")
	for i := range out {
		out[i] = strings.TrimSpace(out[i])
	}
	return out
}

// cordonedDirs checks that every entry of a cordoned.log.dirs value is "*"
// or the broker's log dir, as Kafka requires of its log.dirs.
func cordonedDirs(v, logDir string) error {
	for _, d := range cordonedEntries(v) {
		if d != "*" && d != logDir {
			return &InvalidError{fmt.Sprintf("Invalid value %s for configuration %s: %q is not a log dir of the broker (log.dirs=%s)",
				v, CordonedLogDirs, d, logDir)}
		}
	}
	return nil
}

// Cordoned reports whether the configs in force on a broker (Set.For)
// cordon its log dir.
func Cordoned(inForce map[string]string, logDir string) bool {
	for _, d := range cordonedEntries(inForce[CordonedLogDirs]) {
		if d == "*" || d == logDir {
			return true
		}
	}
	return false
}

func atLeast(n int64) func(string) error {
	return func(v string) error {
		if i, _ := strconv.ParseInt(v, 10, 64); i < n {
			return fmt.Errorf("must be at least %d", n)
		}
		return nil
	}
}

func nonNegativeFloat(v string) error {
	if f, _ := strconv.ParseFloat(v, 64); !(f >= 0) {
		return fmt.Errorf("must be at least 0")
	}
	return nil
}

// listenerConfig matches Kafka's per-listener configs,
// listener.name.<listener>.<config>.
var listenerConfig = regexp.MustCompile(`^listener\.name\.[^.]*\.(.+)$`)

// Lookup returns the key of a dynamic config name; a per-listener config
// is the key of its base config, set per broker. ok is false for a
// custom config (no Kafka config of that name).
func Lookup(name string) (k Key, ok bool) {
	if m := listenerConfig.FindStringSubmatch(name); m != nil {
		k, ok := Keys[m[1]]
		if !ok {
			k = Key{Type: topicconfig.TypeString}
		}
		k.PerBroker, k.Check = true, nil
		if m[1] == MaxConnections || m[1] == MaxConnectionCreationRate {
			k.Check = atLeast(1) // Kafka's listener quotas refuse 0
		}
		return k, true
	}
	if slices.Contains(sslDynamic, name) {
		typ := topicconfig.TypeString
		if strings.HasSuffix(name, "password") {
			typ = topicconfig.TypePassword
		}
		return Key{Type: typ, PerBroker: true}, true
	}
	k, ok = Keys[name]
	return k, ok
}

// Sensitive reports a config whose value DescribeConfigs never shows.
func Sensitive(name string) bool {
	k, _ := Lookup(name)
	return k.Type == topicconfig.TypePassword || strings.HasSuffix(name, "sasl.jaas.config")
}

// InvalidError is a refused change, answered INVALID_REQUEST with its
// message as Kafka answers (KAFKA-13609).
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

// setOf formats names as Kafka's message does: Set(a, b).
func setOf(names []string) string {
	slices.Sort(names)
	return "Set(" + strings.Join(names, ", ") + ")"
}

// Validate checks the whole set of dynamic configs one resource would
// hold, in Kafka's order: names that cannot change at runtime (ReadOnly and
// static, the broker's own non-dynamic configs), SSL configs without a
// listener prefix, each value's type and range, and per-broker configs on
// the cluster-wide default (perBroker false).
func Validate(cfg map[string]string, perBroker bool, static func(string) bool) error {
	names := slices.Sorted(maps.Keys(cfg))
	var readOnly, unprefixed, brokerOnly []string
	for _, n := range names {
		_, dynamic := Lookup(n)
		switch {
		case ReadOnly[n] || !dynamic && static != nil && static(n):
			readOnly = append(readOnly, n)
		case slices.Contains(sslDynamic, n):
			unprefixed = append(unprefixed, n)
		}
	}
	if len(readOnly) > 0 {
		return &InvalidError{"Cannot update these configs dynamically: " + setOf(readOnly)}
	}
	if len(unprefixed) > 0 {
		return &InvalidError{"These security configs can be dynamically updated only per-listener using the listener prefix: " + setOf(unprefixed)}
	}
	for _, n := range names {
		k, ok := Lookup(n)
		if !ok {
			continue // a custom config: any string
		}
		if err := checkValue(n, cfg[n], k); err != nil {
			return &InvalidError{err.Error()}
		}
		if k.PerBroker && !perBroker {
			brokerOnly = append(brokerOnly, n)
		}
	}
	if len(brokerOnly) > 0 {
		return &InvalidError{"Cannot update these configs at default cluster level, broker id must be specified: " + setOf(brokerOnly)}
	}
	if v, ok := cfg[MaxConnectionsPerIP]; ok && strings.TrimSpace(v) == "0" && strings.TrimSpace(cfg[MaxConnectionsPerIPOverrides]) == "" {
		return &InvalidError{fmt.Sprintf("Invalid value 0 for configuration %s: %s can be set to zero only if %s property is set.",
			MaxConnectionsPerIP, MaxConnectionsPerIP, MaxConnectionsPerIPOverrides)}
	}
	return nil
}

// checkValue checks v against k's type and range.
func checkValue(name, v string, k Key) error {
	bad := func(what string) error { return fmt.Errorf("Invalid value %s for configuration %s: %s", v, name, what) }
	switch k.Type {
	case topicconfig.TypeBoolean:
		if v != "true" && v != "false" {
			return bad("Expected value to be either true or false")
		}
	case topicconfig.TypeInt, topicconfig.TypeShort:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32); err != nil {
			return bad("Not a number of type INT")
		}
	case topicconfig.TypeLong:
		if _, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
			return bad("Not a number of type LONG")
		}
	case topicconfig.TypeDouble:
		if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err != nil {
			return bad("Not a number of type DOUBLE")
		}
	}
	if k.Check != nil {
		if err := k.Check(strings.TrimSpace(v)); err != nil {
			return bad(err.Error())
		}
	}
	return nil
}

// Set is every dynamic broker config of the cluster: the cluster-wide
// defaults and each broker's own, by broker id.
type Set struct {
	Default map[string]string            `json:"default,omitempty"`
	Brokers map[string]map[string]string `json:"brokers,omitempty"`
}

// Resource returns the configs of resource name ("" the cluster default).
func (s Set) Resource(name string) map[string]string {
	if name == "" {
		return s.Default
	}
	return s.Brokers[name]
}

// For returns broker id's dynamic configs in force: its own over the
// cluster defaults.
func (s Set) For(id int32) map[string]string {
	out := maps.Clone(s.Default)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, s.Brokers[strconv.Itoa(int(id))])
	return out
}

// Source is where a broker config's value comes from, numbered as
// DescribeConfigs v1+ reports it.
type Source int8

// Kafka's ConfigSource numbering.
const (
	SourceDynamicBroker        Source = 2
	SourceDynamicDefaultBroker Source = 3
	SourceStaticBroker         Source = 4
	SourceDefault              Source = 5
)

// Synonym is one level of a broker config's value.
type Synonym struct {
	Name   string
	Value  string
	Source Source
}

// Resolve lists name's values for broker id, highest precedence first:
// per-broker dynamic, cluster default dynamic, static (static, when the
// flag stands for it), Kafka's default. The first is the value in force.
func Resolve(s Set, id int32, name string, static func(string) (string, bool)) []Synonym {
	var out []Synonym
	if v, ok := s.Brokers[strconv.Itoa(int(id))][name]; ok {
		out = append(out, Synonym{name, v, SourceDynamicBroker})
	}
	if v, ok := s.Default[name]; ok {
		out = append(out, Synonym{name, v, SourceDynamicDefaultBroker})
	}
	if static != nil {
		if v, ok := static(name); ok {
			out = append(out, Synonym{name, v, SourceStaticBroker})
		}
	}
	if k, ok := Lookup(name); ok && k.Default != "" {
		out = append(out, Synonym{name, k.Default, SourceDefault})
	}
	return out
}

// IsTopicDefault reports whether name is the broker default of a topic
// config (log.retention.ms of retention.ms, message.max.bytes of
// max.message.bytes, ...).
func IsTopicDefault(name string) bool {
	_, ok := synonyms[name]
	return ok
}

// TopicSynonyms are the broker configs that set topic's default: the
// milliseconds config first, then its minutes and hours twins (Kafka's
// ServerTopicConfigSynonyms order).
func TopicSynonyms(topic string) []string {
	var out []string
	for name, s := range synonyms {
		if s.topic == topic {
			out = append(out, name)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Compare(max(synonyms[a].scale, 1), max(synonyms[b].scale, 1)) })
	return out
}

// ResolveTopic is topic's broker default on broker id: the levels as Kafka
// lists a topic config's synonyms (each synonym set for this broker, then
// in the cluster default, then by static, each level in TopicSynonyms
// order), and the default in force with its source, where a milliseconds
// config wins over its minutes and hours twins at whatever level, as
// TopicDefaults. ok is false when no level sets one.
func ResolveTopic(s Set, id int32, topic string, static func(string) (string, bool)) (levels []Synonym, value string, source Source, ok bool) {
	names := TopicSynonyms(topic)
	merged := map[string]string{}
	for _, src := range []Source{SourceDynamicBroker, SourceDynamicDefaultBroker, SourceStaticBroker} {
		for _, n := range names {
			var v string
			var set bool
			switch src {
			case SourceDynamicBroker:
				v, set = s.Brokers[strconv.Itoa(int(id))][n]
			case SourceDynamicDefaultBroker:
				v, set = s.Default[n]
			default:
				if static != nil {
					v, set = static(n)
				}
			}
			if !set {
				continue
			}
			levels = append(levels, Synonym{n, v, src})
			if _, seen := merged[n]; !seen {
				merged[n] = v
			}
		}
	}
	value, ok = TopicDefaults(merged)[topic]
	if !ok {
		return levels, "", 0, false
	}
	// The winner is the first level of the smallest-scale name set.
	for _, n := range names {
		if _, set := merged[n]; set {
			for _, l := range levels {
				if l.Name == n {
					return levels, value, l.Source, true
				}
			}
		}
	}
	return levels, value, 0, true
}

// TopicDefaults derives the topic configs a broker's dynamic configs set
// the default of: log.retention.ms gives retention.ms, message.max.bytes
// gives max.message.bytes, and so on; a milliseconds config wins over its
// minutes and hours twins, as in Kafka. Values that do not parse are left
// out (Validate keeps them out of the store).
func TopicDefaults(dyn map[string]string) map[string]string {
	out := map[string]string{}
	rank := map[string]int64{} // the scale that set out[topic]: smaller wins
	for _, name := range slices.Sorted(maps.Keys(dyn)) {
		s, ok := synonyms[name]
		if !ok {
			continue
		}
		v := strings.TrimSpace(dyn[name])
		scale := max(s.scale, 1)
		if r, set := rank[s.topic]; set && r <= scale {
			continue
		}
		if s.scale > 0 {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				continue
			}
			if n > 0 {
				n *= s.scale
			}
			v = strconv.FormatInt(n, 10)
		}
		out[s.topic], rank[s.topic] = v, scale
	}
	return out
}

// WithDefaults is a topic's config with defaults under it: each topic
// config the topic does not set takes the broker default. It returns cfg
// itself when there are no defaults.
func WithDefaults(cfg, defaults map[string]string) map[string]string {
	if len(defaults) == 0 {
		return cfg
	}
	out := maps.Clone(defaults)
	maps.Copy(out, cfg)
	return out
}

// The dynamic broker configs of share groups' dead-letter queues (KIP-1191).
const (
	DeadLetterTopicPrefix = "errors.deadletterqueue.topic.name.prefix"
	DeadLetterAutoCreate  = "errors.deadletterqueue.auto.create.topics.enable"
)

// CleanerIORate is the cleaner's I/O rate the dynamic configs set; ok is
// false when they do not set it.
func CleanerIORate(dyn map[string]string) (rate int64, ok bool) {
	v, set := dyn["log.cleaner.io.max.bytes.per.second"]
	if !set {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return int64(f), true
}
