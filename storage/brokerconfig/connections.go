package brokerconfig

import (
	"fmt"
	"strconv"
	"strings"
)

// Kafka's connection limits (applied by actors/connlimit).
const (
	MaxConnections               = "max.connections"
	MaxConnectionsPerIP          = "max.connections.per.ip"
	MaxConnectionsPerIPOverrides = "max.connections.per.ip.overrides"
	MaxConnectionCreationRate    = "max.connection.creation.rate"
)

// ListenerConfig is the name of a listener's own value of config
// (listener.name.<listener>.<config>, the listener's name in lower case,
// as Kafka names it).
func ListenerConfig(listener, config string) string {
	return "listener.name." + strings.ToLower(listener) + "." + config
}

// ConnectionOverride is one entry of max.connections.per.ip.overrides.
type ConnectionOverride struct {
	Host string // an IP address or a host name
	Max  int
}

// ParseConnectionOverrides reads max.connections.per.ip.overrides as Kafka does:
// comma-separated host:count entries (the count after the last colon, so
// an IPv6 address may stand before it), "" for none.
func ParseConnectionOverrides(v string) ([]ConnectionOverride, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []ConnectionOverride
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		i := strings.LastIndex(e, ":")
		if i <= 0 {
			return nil, fmt.Errorf("%q is not host:count", e)
		}
		host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(e[:i]), "["), "]")
		n, err := strconv.Atoi(strings.TrimSpace(e[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: the count must be a whole number of at least 0", e)
		}
		out = append(out, ConnectionOverride{Host: host, Max: n})
	}
	return out, nil
}
