package conn

import (
	"crypto/tls"
	"sync"
	"time"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles"
)

// Listener is one named Kafka listener: its security protocol, the address
// Metadata, FindCoordinator and DescribeCluster advertise to the clients
// that came in on it, and how it authenticates them.
type Listener struct {
	Name             string
	SecurityProtocol string // ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL
	// AdvertisedHost and AdvertisedPort are this broker's address on this
	// listener. Other brokers are advertised on it at the address they
	// published for a listener of this name (routing.Broker.Listeners), or,
	// when they published none, at their published host with this
	// listener's port (every broker of a StatefulSet has the same
	// listeners). A zero port advertises the published addresses as they are
	// (the primary listener).
	AdvertisedHost string
	AdvertisedPort int32
	// TLS serves SSL and SASL_SSL listeners (tlsfiles.Dir.ServerConfig).
	TLS *tls.Config
	// SASL authenticates SASL_PLAINTEXT and SASL_SSL listeners.
	SASL *sasl.Server
	// MaxReauth is connections.max.reauth.ms: a SASL session lasts at most
	// this long (KIP-368); the client re-authenticates on the same
	// connection before it ends or the connection is closed. Zero: sessions
	// last as long as their credential (an OAUTHBEARER token's expiry).
	MaxReauth time.Duration
	// FailedAuthDelay is connection.failed.authentication.delay.ms: the
	// answer to a failed first authentication, and the close after it,
	// wait this long, so that a client guessing passwords gets one guess
	// per delay on each connection.
	FailedAuthDelay time.Duration
	// AllowPlainWithoutTLS lets SASL PLAIN (a clear-text password) run on a
	// SASL_PLAINTEXT listener.
	AllowPlainWithoutTLS bool
	// PrincipalMapping names the principal of a client certificate from its
	// subject DN (ssl.principal.mapping.rules); nil keeps the DN. A DN no
	// rule applies to fails the handshake.
	PrincipalMapping *tlsfiles.PrincipalMapper

	views viewCache
}

// usesTLS reports whether connections start with a TLS handshake.
func (l *Listener) usesTLS() bool {
	return l.SecurityProtocol == ProtocolSSL || l.SecurityProtocol == ProtocolSASLSSL
}

// usesSASL reports whether clients must authenticate with SASL first.
func (l *Listener) usesSASL() bool {
	return l.SecurityProtocol == ProtocolSASLPlaintext || l.SecurityProtocol == ProtocolSASLSSL
}

// viewCache holds the published View rewritten with this listener's
// advertised addresses, rebuilt when a new View is published.
type viewCache struct {
	mu   sync.Mutex
	src  *routing.View
	view *routing.View
}

// view returns v as clients of l see it.
func (l *Listener) view(v *routing.View) *routing.View {
	if l.AdvertisedPort == 0 || v == nil {
		return v
	}
	l.views.mu.Lock()
	defer l.views.mu.Unlock()
	if l.views.src != v {
		l.views.src, l.views.view = v, advertiseOn(v, l.Name, l.AdvertisedHost, l.AdvertisedPort)
	}
	return l.views.view
}

// advertiseOn copies v with every broker's address moved to the listener
// called name: this broker at host:port, the others at the address they
// published for it, else at their host and port.
func advertiseOn(v *routing.View, name, host string, port int32) *routing.View {
	out := *v
	self := v.Self
	published := map[int32]routing.Endpoint{}
	for _, b := range v.Brokers {
		if e, ok := b.ListenerAddr(name); ok && b.ID != self && e.Host != "" && e.Port > 0 {
			published[b.ID] = e
		}
	}
	move := func(b routing.Broker) routing.Broker {
		if b.Host == "" {
			return b
		}
		if e, ok := published[b.ID]; ok {
			b.Host, b.Port = e.Host, e.Port
			return b
		}
		if b.ID == self {
			b.Host = host
		}
		b.Port = port
		return b
	}
	out.Brokers = make([]routing.Broker, len(v.Brokers))
	for i, b := range v.Brokers {
		out.Brokers[i] = move(b)
	}
	if c := v.Coordinator; c != nil {
		out.Coordinator = func(group string) (routing.Broker, bool) {
			b, local := c(group)
			return move(b), local
		}
	}
	if c := v.NextCoordinator; c != nil {
		out.NextCoordinator = func(group string) (routing.Broker, bool) {
			b, local := c(group)
			return move(b), local
		}
	}
	return &out
}
