package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/metrics"
)

// countResponse counts an answered request by its top-level error code and,
// for Produce and Fetch, each partition's error code. It runs on the
// connection actor before the response is encoded.
func countResponse(api *metrics.API, resp kmsg.Response) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		api.Request(0)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				api.PartitionError(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *fetchResponse:
		countFetch(api, r.FetchResponse)
	case *kmsg.FetchResponse:
		countFetch(api, r)
	case *kmsg.MetadataResponse:
		api.Request(0) // errors are per topic
	default:
		api.Request(topLevelError(resp))
	}
}

func countFetch(api *metrics.API, r *kmsg.FetchResponse) {
	api.Request(r.ErrorCode)
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			api.PartitionError(r.Topics[i].Partitions[j].ErrorCode)
		}
	}
}
