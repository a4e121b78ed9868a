package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func apiVersionsResponse(s *Server) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, a := range s.APIs() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// handleApiVersions lists exactly the APIs and versions registered.
func handleApiVersions(r *Request) Pending {
	return Ready(apiVersionsResponse(r.Server))
}
