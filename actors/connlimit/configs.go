package connlimit

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kaas-project/kaas/storage/brokerconfig"
)

// Static are the limits a broker's flags set (each Unlimited when the
// flag is not given).
type Static struct {
	Broker, PerIP, BrokerRate int
	Overrides                 string
}

// FromConfigs are the limits in force: each named config's value in
// inForce (the broker's dynamic configs, per-broker over the cluster
// default), else static's. The listeners are the broker's, the first the
// inter-broker one. resolve turns a host name of the overrides into an
// address (IP addresses need none); an entry it cannot resolve is left out
// and reported in skipped. Of two entries for one address, the later wins.
func FromConfigs(inForce map[string]string, static Static, listeners []string,
	resolve func(host string) (netip.Addr, error)) (l Limits, skipped []string, err error) {
	l = None()
	intOf := func(name string, def int) (int, error) {
		v, ok := inForce[name]
		if !ok {
			return def, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%q: not a whole number of at least 0", name, v)
		}
		return int(n), nil
	}
	if l.Broker, err = intOf(brokerconfig.MaxConnections, static.Broker); err != nil {
		return Limits{}, nil, err
	}
	if l.PerIP, err = intOf(brokerconfig.MaxConnectionsPerIP, static.PerIP); err != nil {
		return Limits{}, nil, err
	}
	if l.BrokerRate, err = intOf(brokerconfig.MaxConnectionCreationRate, static.BrokerRate); err != nil {
		return Limits{}, nil, err
	}
	perListener := func(config string, into *map[string]int, name string) error {
		n, err := intOf(brokerconfig.ListenerConfig(name, config), Unlimited)
		if err != nil {
			return err
		}
		if n != Unlimited {
			if *into == nil {
				*into = map[string]int{}
			}
			(*into)[name] = n
		}
		return nil
	}
	for _, name := range listeners {
		if err := perListener(brokerconfig.MaxConnections, &l.Listener, name); err != nil {
			return Limits{}, nil, err
		}
		if err := perListener(brokerconfig.MaxConnectionCreationRate, &l.ListenerRate, name); err != nil {
			return Limits{}, nil, err
		}
	}
	if len(listeners) > 0 {
		l.Protected = listeners[0]
	}
	ov := static.Overrides
	if v, ok := inForce[brokerconfig.MaxConnectionsPerIPOverrides]; ok {
		ov = v
	}
	entries, err := brokerconfig.ParseConnectionOverrides(ov)
	if err != nil {
		return Limits{}, nil, fmt.Errorf("%s: %w", brokerconfig.MaxConnectionsPerIPOverrides, err)
	}
	for _, e := range entries {
		ip, perr := netip.ParseAddr(e.Host)
		if perr != nil {
			if ip, perr = resolve(e.Host); perr != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %v", e.Host, perr))
				continue
			}
		}
		ip = ip.Unmap()
		if l.PerIPOverrides == nil {
			l.PerIPOverrides = map[netip.Addr]int{}
		}
		l.PerIPOverrides[ip] = e.Max
	}
	return l, skipped, nil
}
