package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions (key 18): v0-4. A newer version gets the v0 answer with
// UNSUPPORTED_VERSION, as Kafka (apiVersionsUnsupported). v3+ carries the
// supported and finalized features (features.go).
func init() {
	serve(API{Key: kmsg.ApiVersions.Int16(), MinVersion: 0, MaxVersion: 4, Handle: handleApiVersions})
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
