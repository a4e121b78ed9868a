package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake (key 17): v1 (the connection actor answers it, sasl.go).
// v0, after which the client sends raw SASL tokens outside Kafka framing,
// is not served: clients since Kafka 1.0 use v1.
func init() {
	serve(API{Key: kmsg.SASLHandshake.Int16(), MinVersion: 1, MaxVersion: 1, Handle: illegalSASLState})
}

// illegalSASLState answers a SASL request that reached the API table,
// which the connection actor never lets happen.
func illegalSASLState(r *Request) Pending {
	resp := r.Body.ResponseKind()
	setTopLevelError(resp, kerr.IllegalSaslState.Code)
	return Ready(resp)
}
