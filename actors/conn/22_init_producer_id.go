package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// InitProducerID (key 22): v0-4, idempotent producers only. The transaction
// coordinator (actors/txn) registers its own handler for this key, serving
// transactional ids too; this one stays when it could not start. Errors go
// in the top-level ErrorCode (no ErrorResponse).
func init() {
	serve(API{Key: kmsg.InitProducerID.Int16(), MinVersion: 0, MaxVersion: 5, Handle: handleInitProducerID})
}

// handleInitProducerID hands idempotent producers a fresh producer id. A
// transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// (non-retriable, so clients fail fast instead of retrying forever): without
// a transaction coordinator the transaction APIs are absent from ApiVersions.
func handleInitProducerID(r *Request) Pending {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	if req.TransactionalID != nil {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return Ready(resp)
	}
	resp.ProducerID = r.Server.NextProducerID()
	resp.ProducerEpoch = 0
	return Ready(resp)
}
