package main

import (
	"fmt"
	"maps"
	"strings"

	"github.com/kaas-project/kaas/storage/brokerconfig"
)

// parseTopicConfigDefaults reads --topic-config-defaults: NAME=VALUE;...
// of Kafka broker configs that are the defaults of topic configs
// (log.retention.ms, log.segment.bytes, message.max.bytes,
// compression.type, ...), as a Kafka broker's server.properties sets
// them. Each value is checked as a dynamic broker config of that name.
func parseTopicConfigDefaults(v string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(v, ";") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		switch {
		case !ok || name == "":
			return nil, fmt.Errorf("--topic-config-defaults: %q is not NAME=VALUE", item)
		case !brokerconfig.IsTopicDefault(name):
			return nil, fmt.Errorf("--topic-config-defaults: %s is not the broker default of a topic config (Kafka's log.retention.ms, log.segment.bytes, message.max.bytes, ...)", name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--topic-config-defaults: %s given twice", name)
		}
		out[name] = value
	}
	if err := brokerconfig.Validate(out, false, nil); err != nil {
		return nil, fmt.Errorf("--topic-config-defaults: %w", err)
	}
	return out, nil
}

// topicDefaultsInForce are the topic config defaults from this broker's
// flags and its dynamic configs in force, the dynamic ones winning name by
// name (Kafka's DYNAMIC_BROKER_CONFIG and DYNAMIC_DEFAULT_BROKER_CONFIG
// over STATIC_BROKER_CONFIG).
func topicDefaultsInForce(static, dynamic map[string]string) map[string]string {
	all := maps.Clone(static)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, dynamic)
	return brokerconfig.TopicDefaults(all)
}
