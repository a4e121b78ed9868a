package conn

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (key 60): v0-2, from the routing view. Errors go in the
// top-level ErrorCode (no ErrorResponse).
func init() {
	serve(API{Key: kmsg.DescribeCluster.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleDescribeCluster})
}

// handleDescribeCluster lists brokers; v2 can include fenced (draining or
// dead) brokers.
func handleDescribeCluster(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	v := r.View
	if req.Version >= 1 && req.EndpointType != 1 {
		resp.ErrorCode = kerr.MismatchedEndpointType.Code
		m := "kaas brokers serve broker endpoints only"
		resp.ErrorMessage = &m
		return Ready(resp)
	}
	resp.EndpointType = 1
	resp.ClusterID = v.ClusterID
	resp.ControllerID = v.ControllerID
	for _, b := range v.Brokers {
		if b.Fenced && !req.IncludeFencedBrokers {
			continue
		}
		if !b.Alive && !b.Fenced {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack, rb.IsFenced = b.ID, b.Host, b.Port, b.Rack, b.Fenced
		resp.Brokers = append(resp.Brokers, rb)
	}
	sort.Slice(resp.Brokers, func(i, j int) bool { return resp.Brokers[i].NodeID < resp.Brokers[j].NodeID })
	return Ready(resp)
}
