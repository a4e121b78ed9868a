package main

import (
	"io"
	"strconv"
	"time"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// brokerConfigs are the read-only broker configs DescribeConfigs reports:
// each Kafka broker config a flag stands for, with the flag's value, Kafka's
// type for it and the flag's help as its documentation (the flag is the one
// home of what it means).
func brokerConfigs(cfg *serveConfig) map[string]conn.BrokerConfig {
	flags := newServeFlags(&serveConfig{}, io.Discard)
	c := func(flag string, typ topicconfig.Type, value string) conn.BrokerConfig {
		return conn.BrokerConfig{Value: value, Type: typ, Doc: "kaas --" + flag + ": " + flags.Lookup(flag).Usage}
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	return map[string]conn.BrokerConfig{
		"broker.id":                 c("broker-id", topicconfig.TypeInt, strconv.Itoa(cfg.BrokerID)),
		"advertised.listeners":      c("advertised-listeners", topicconfig.TypeString, cfg.advertisedListenersString()),
		"socket.request.max.bytes":  c("max-request-size", topicconfig.TypeInt, strconv.Itoa(cfg.MaxRequestSize)),
		"auto.create.topics.enable": c("auto-create-topics", topicconfig.TypeBoolean, strconv.FormatBool(cfg.AutoCreateTopics)),
		"num.partitions":            c("default-partitions", topicconfig.TypeInt, strconv.Itoa(cfg.DefaultPartitions)),
		"log.dirs":                  c("data-dir", topicconfig.TypeString, cfg.DataDir),
		// One copy per partition on the shared volume: what CreateTopics
		// with replication factor -1 gets, for tools that read it first.
		"default.replication.factor": {Value: "1", Type: topicconfig.TypeShort,
			Doc: "one copy per partition on the shared volume: the replication factor of CreateTopics with -1"},

		"log.cleaner.backoff.ms":              c("cleaner-interval", topicconfig.TypeLong, ms(cfg.CleanerInterval)),
		"log.cleaner.io.max.bytes.per.second": c("cleaner-io-rate", topicconfig.TypeDouble, strconv.FormatInt(cfg.CleanerIORate, 10)),
		"log.cleaner.dedupe.buffer.size":      c("cleaner-dedupe-buffer-size", topicconfig.TypeLong, strconv.FormatInt(cfg.CleanerBufferSize, 10)),

		"max.incremental.fetch.session.cache.slots": c("fetch-session-cache-slots", topicconfig.TypeInt, strconv.Itoa(cfg.FetchSessionSlots)),

		"group.initial.rebalance.delay.ms":     c("group-initial-rebalance-delay", topicconfig.TypeInt, ms(cfg.GroupInitialRebalanceDelay)),
		"group.min.session.timeout.ms":         c("group-min-session-timeout", topicconfig.TypeInt, ms(cfg.GroupMinSessionTimeout)),
		"group.max.session.timeout.ms":         c("group-max-session-timeout", topicconfig.TypeInt, ms(cfg.GroupMaxSessionTimeout)),
		"group.consumer.heartbeat.interval.ms": c("group-consumer-heartbeat-interval", topicconfig.TypeInt, ms(cfg.GroupConsumerHeartbeatInterval)),
		"group.consumer.session.timeout.ms":    c("group-consumer-session-timeout", topicconfig.TypeInt, ms(cfg.GroupConsumerSessionTimeout)),
	}
}
