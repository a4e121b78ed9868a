package conn

import "github.com/twmb/franz-go/pkg/kmsg"

// SaslAuthenticate (key 36): v0-2 (KIP-152 framing; v1+ answers carry the
// session lifetime, KIP-368). The connection actor answers it (sasl.go).
func init() {
	serve(API{Key: kmsg.SASLAuthenticate.Int16(), MinVersion: 0, MaxVersion: 2, Handle: illegalSASLState})
}
