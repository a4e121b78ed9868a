package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SaslHandshake (key 17): v1 (the connection actor answers it, sasl.go).
// v0, after which the client sends raw SASL tokens outside Kafka framing,
// closes the connection, as any version not served; ApiVersions still
// lists v0 because
// librdkafka only enables SASL when the broker claims it (and then uses
// v1, as every client since Kafka 1.0 does).
func init() {
	serve(API{Key: kmsg.SASLHandshake.Int16(), MinVersion: 1, MaxVersion: 1, Handle: illegalSASLState, AdvertiseV0: true})
}

// illegalSASLState answers a SASL request that reached the API table,
// which the connection actor never lets happen.
func illegalSASLState(r *Request) Pending {
	resp := r.Body.ResponseKind()
	setTopLevelError(resp, kerr.IllegalSaslState.Code)
	return Ready(resp)
}
