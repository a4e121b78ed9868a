package conn

import (
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
)

// ListConfigResources (key 74, KIP-1142; v0 was KIP-1000's
// ListClientMetricsResources): v0-1, the resources DescribeConfigs can
// describe. v0 lists client-metrics resources only; v1 lists the types it
// is asked for, every type it serves when asked for none: BROKER_LOGGER
// lists this broker (its loggers are its own), CLIENT_METRICS the KIP-714
// subscriptions; a type Kafka does not list answers UNSUPPORTED_VERSION as
// Kafka does for a type it does not support.
func init() {
	serve(API{Key: kmsg.ListConfigResources.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleListConfigResources})
}

// listableTypes are the v1 types kaas lists, in the order they are
// answered.
var listableTypes = []int8{resourceTopic, resourceBroker, resourceBrokerLogger, resourceGroup, int8(kmsg.ConfigResourceTypeClientMetrics)}

func handleListConfigResources(r *Request) Pending {
	req := r.Body.(*kmsg.ListConfigResourcesRequest)
	resp := req.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	types := req.ResourceTypes
	if req.Version == 0 {
		types = []int8{resourceClientMetric} // KIP-1000's ListClientMetricsResources
	} else if len(types) == 0 {
		types = listableTypes
	}
	for _, t := range types {
		if !slices.Contains(listableTypes, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return Ready(resp)
		}
	}
	add := func(t int8, name string) {
		c := kmsg.NewListConfigResourcesResponseConfigResource()
		c.Type, c.Name = t, name
		resp.ConfigResources = append(resp.ConfigResources, c)
	}
	v := r.View
	if slices.Contains(types, resourceTopic) {
		for _, name := range configTopics(v) {
			add(resourceTopic, name)
		}
	}
	if slices.Contains(types, resourceBroker) {
		for _, b := range v.Brokers {
			if b.Alive {
				add(resourceBroker, strconv.Itoa(int(b.ID)))
			}
		}
	}
	if slices.Contains(types, resourceBrokerLogger) {
		add(resourceBrokerLogger, strconv.Itoa(int(v.Self)))
	}
	groups, subscriptions := slices.Contains(types, resourceGroup), slices.Contains(types, resourceClientMetric)
	if !groups && !subscriptions {
		return Ready(resp)
	}
	return func() kmsg.Response { // the file stores read the shared volume
		fail := func(what string, err error) kmsg.Response {
			r.Server.Log().Error().Err(err).Msg("list " + what + " config resources")
			resp.ErrorCode = kerr.KafkaStorageError.Code
			resp.ConfigResources = nil
			return resp
		}
		if groups {
			names, err := r.Server.GroupConfigs.Groups()
			if err != nil {
				return fail("group", err)
			}
			for _, g := range names {
				add(resourceGroup, g)
			}
		}
		if subscriptions {
			all, err := r.Server.ClientMetrics.Load()
			if err != nil {
				return fail("client-metrics", err)
			}
			for _, name := range sortedKeys(all) {
				add(resourceClientMetric, name)
			}
		}
		return resp
	}
}

// configTopics is every topic DescribeConfigs describes, internal ones
// included, sorted.
func configTopics(v *routing.View) []string {
	names := make([]string, 0, len(v.Topics)+len(routing.InternalTopics))
	for name := range v.Topics {
		names = append(names, name)
	}
	for _, it := range routing.InternalTopics {
		if _, ok := v.Internal(it.Name); ok {
			names = append(names, it.Name) // a KafkaTopic of that name is hidden behind it
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}
