package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

func apiVersionsResponse(s *Server) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	for _, a := range s.APIs() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.MinVersion, a.MaxVersion
		if a.Key == kmsg.Produce.Int16() {
			// As Apache Kafka 4 (KAFKA-18659): advertise Produce from v0 although
			// v0-v2 are refused (UNSUPPORTED_VERSION), because librdkafka only
			// compresses with gzip/snappy/lz4 when the range reaches v0.
			k.MinVersion = 0
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// handleApiVersions lists exactly the APIs and versions registered.
func handleApiVersions(r *Request) Pending {
	return Ready(apiVersionsResponse(r.Server))
}
