package conn

import "github.com/kaas-project/kaas/actors/acl"

// Session is what a connection knows of its client once it is set up: the
// authenticated principal in Kafka form ("User:alice"; "User:ANONYMOUS"
// when unauthenticated), the listener and security protocol it came in on,
// and the client's host (the authorizer matches ACL hosts against it).
type Session struct {
	Principal, Listener, SecurityProtocol, ClientHost string
}

// newSession is an unauthenticated connection's session.
func newSession(clientHost string) Session {
	return Session{Principal: acl.Anonymous, Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", ClientHost: clientHost}
}
