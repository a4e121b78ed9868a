package tlsfiles

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// Policy is what TLS a broker speaks: the protocol versions (Kafka's
// ssl.enabled.protocols) and, for TLS 1.2, the cipher suites (Kafka's
// ssl.cipher.suites). Go chooses TLS 1.3's suites itself.
type Policy struct {
	MinVersion, MaxVersion uint16
	// CipherSuites are the TLS 1.2 suites allowed (nil: Go's defaults).
	CipherSuites []uint16
}

// DefaultPolicy is Kafka 4's: TLS 1.2 and 1.3, the runtime's suites.
var DefaultPolicy = Policy{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS13}

// protocolVersions are the ssl.enabled.protocols names served.
var protocolVersions = map[string]uint16{"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13}

// ParsePolicy reads Kafka's comma-separated ssl.enabled.protocols (TLSv1.2,
// TLSv1.3) and ssl.cipher.suites (IANA names, as the JVM names them; empty:
// the runtime's secure defaults). Versions before TLS 1.2 and suites Go
// deems insecure are refused, as is a suite list with TLS 1.3 alone (its
// suites are not configurable).
func ParsePolicy(protocols, cipherSuites string) (Policy, error) {
	p := Policy{}
	for _, name := range splitList(protocols) {
		v, ok := protocolVersions[name]
		if !ok {
			return Policy{}, fmt.Errorf("ssl.enabled.protocols: %q is not served (want TLSv1.2 or TLSv1.3)", name)
		}
		if p.MinVersion == 0 || v < p.MinVersion {
			p.MinVersion = v
		}
		p.MaxVersion = max(p.MaxVersion, v)
	}
	if p.MinVersion == 0 {
		return Policy{}, fmt.Errorf("ssl.enabled.protocols: no protocol given (want TLSv1.2, TLSv1.3 or both)")
	}
	names := splitList(cipherSuites)
	if len(names) == 0 {
		return p, nil
	}
	if p.MinVersion == tls.VersionTLS13 {
		return Policy{}, fmt.Errorf("ssl.cipher.suites: TLS 1.3 alone is enabled, whose cipher suites are not configurable")
	}
	known := map[string]uint16{}
	for _, s := range tls.CipherSuites() {
		if slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
			known[s.Name] = s.ID
		}
	}
	for _, name := range names {
		id, ok := known[name]
		if !ok {
			return Policy{}, fmt.Errorf("ssl.cipher.suites: %q is not a TLS 1.2 cipher suite this broker serves", name)
		}
		if !slices.Contains(p.CipherSuites, id) {
			p.CipherSuites = append(p.CipherSuites, id)
		}
	}
	return p, nil
}

// apply sets the policy on c.
func (p Policy) apply(c *tls.Config) {
	if p.MinVersion == 0 {
		p = DefaultPolicy
	}
	c.MinVersion, c.MaxVersion, c.CipherSuites = p.MinVersion, p.MaxVersion, p.CipherSuites
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
