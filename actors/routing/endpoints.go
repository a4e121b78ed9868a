package routing

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Endpoint is one named listener's address.
type Endpoint struct {
	Name string // upper case, as Kafka compares listener names
	Host string // "" binds every interface
	Port int32
}

// String is e in Kafka's listeners form, NAME://host:port.
func (e Endpoint) String() string {
	return e.Name + "://" + net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
}

// ParseEndpoints parses Kafka's listeners and advertised.listeners form:
// NAME://host:port entries separated by commas ("" is none). A listener
// named twice, a missing name, an address that is not host:port or a port
// outside 0-65535 is an error.
func ParseEndpoints(s string) ([]Endpoint, error) {
	if s == "" {
		return nil, nil
	}
	var out []Endpoint
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		name, addr, ok := strings.Cut(item, "://")
		if !ok || name == "" {
			return nil, fmt.Errorf("%q is not NAME://host:port", item)
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", item, err)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("%q: port %q: want 0-65535", item, port)
		}
		e := Endpoint{Name: strings.ToUpper(name), Host: host, Port: int32(n)}
		for _, seen := range out {
			if seen.Name == e.Name {
				return nil, fmt.Errorf("listener %s given twice", e.Name)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// JoinEndpoints renders endpoints in the form ParseEndpoints reads.
func JoinEndpoints(eps []Endpoint) string {
	parts := make([]string, len(eps))
	for i, e := range eps {
		parts[i] = e.String()
	}
	return strings.Join(parts, ",")
}
