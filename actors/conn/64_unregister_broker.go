package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
)

// UnregisterBroker (key 64): v0. Removes a broker gone for good from the
// registered set (the controller does so on its own for the brokers a
// StatefulSet scale-down removed, once they are dead): its row
// leaves assignment.json, DescribeCluster stops listing it as fenced, and
// its consumer-group slot goes (every group may change coordinator, two-
// phase). Any broker forwards it to the controller, as Kafka's brokers do.
// Only a dead broker can be unregistered: one alive or draining is
// INVALID_REQUEST (its row is how its partitions and groups are taken from
// it safely); an unknown id is BROKER_ID_NOT_REGISTERED. A broker that
// heartbeats again afterwards is registered anew.
func init() {
	serve(API{Key: kmsg.UnregisterBroker.Int16(), MinVersion: 0, MaxVersion: 0, Handle: handleUnregisterBroker})
}

func handleUnregisterBroker(r *Request) Pending {
	req := r.Body.(*kmsg.UnregisterBrokerRequest)
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	done := make(chan struct{})
	r.Server.Supervisor().Send(&messages.UnregisterBroker{ID: req.BrokerID, Reply: func(code int16, msg string) {
		resp.ErrorCode, resp.ErrorMessage = code, optString(msg)
		close(done)
	}})
	return func() kmsg.Response {
		<-done
		return resp
	}
}
