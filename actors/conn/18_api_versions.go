package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions (key 18): v0-5. A newer version gets the v0 answer with
// UNSUPPORTED_VERSION, as Kafka (apiVersionsUnsupported). v3+ carries the
// supported and finalized features (features.go). From v5 a client may name
// the cluster and broker it means to reach (KIP-1242): a connection that
// reached another one (a reused address after a pod moved) is answered
// REBOOTSTRAP_REQUIRED, and the client starts over from its bootstrap
// servers.
func init() {
	serve(API{Key: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 5, Handle: handleApiVersions})
}

// apiVersionsResponse lists every registered API (this package's and the
// group package's) with its version range.
func apiVersionsResponse(s *Server) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, a := range s.APIs() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		if a.AdvertiseV0 {
			k.MinVersion = 0
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// handleApiVersions lists exactly the APIs and versions registered and, from
// v3, the KIP-584 features (features.go).
func handleApiVersions(r *Request) Pending {
	req := r.Body.(*kmsg.ApiVersionsRequest)
	if code := misrouted(req, r.View.ClusterID, r.Server.cfg.BrokerID); code != 0 {
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ErrorCode = code
		return Ready(resp)
	}
	resp := apiVersionsResponse(r.Server)
	addFeatures(resp, r.Body.GetVersion())
	return Ready(resp)
}

// apiVersionsUnsupported answers an ApiVersions of a version not served:
// UNSUPPORTED_VERSION with the table, to be encoded as v0 (the client can
// then retry with a version it knows).
func apiVersionsUnsupported(s *Server) kmsg.Response {
	resp := apiVersionsResponse(s)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return resp
}

// misrouted checks the cluster and broker a v5+ ApiVersions names: both or
// neither (INVALID_REQUEST otherwise, as Kafka validates the request), and
// if both, this cluster and this broker (REBOOTSTRAP_REQUIRED otherwise).
func misrouted(req *kmsg.ApiVersionsRequest, clusterID string, self int32) int16 {
	if req.Version < 5 {
		return 0
	}
	named, node := req.ClusterID != nil, req.NodeID != -1
	switch {
	case named != node:
		return kerr.InvalidRequest.Code
	case named && (*req.ClusterID != clusterID || req.NodeID != self):
		return kerr.RebootstrapRequired.Code
	}
	return 0
}
