package conn

import "github.com/kaas-project/kaas/actors/acl"

// Session is who a connection speaks for, as authorization sees it. The
// connection actor fills it once the transport (TLS) and SASL have
// authenticated the client; every Request carries the connection's current
// Session.
type Session struct {
	// Principal is the authenticated identity in Kafka form: "User:alice"
	// after SASL, "User:CN=...,O=..." from a TLS client certificate's
	// subject (Kafka's default principal builder), "User:ANONYMOUS" when
	// nothing authenticated the client.
	Principal string
	// Listener is the name of the listener the connection came in on
	// (PLAINTEXT when only the default listener is configured).
	Listener string
	// SecurityProtocol is the listener's protocol: PLAINTEXT, SSL,
	// SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	// ClientHost is the client's IP address.
	ClientHost string
	// TokenAuthenticated is set when a delegation token authenticated the
	// connection (SCRAM with tokenauth): it may not ask for tokens.
	TokenAuthenticated bool
	// ClientPort is the client's source port; SoftwareName and
	// SoftwareVersion are what its ApiVersions (v3+) named (KIP-511).
	ClientPort                    string
	SoftwareName, SoftwareVersion string
}

// AnonymousPrincipal is the principal of a client nothing authenticated.
const AnonymousPrincipal = acl.Anonymous

// Security protocols a listener speaks.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// newSession is an unauthenticated connection's session on the default
// listener.
func newSession(clientHost string) Session {
	return Session{Principal: AnonymousPrincipal, Listener: "PLAINTEXT", SecurityProtocol: ProtocolPlaintext, ClientHost: clientHost}
}
