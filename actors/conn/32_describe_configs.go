package conn

import (
	"maps"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/brokerconfig"
	"github.com/kaas-project/kaas/storage/clientmetrics"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// DescribeConfigs (key 32): v1-4, topics, from the routing view; this
// broker and the cluster-wide broker default, from the broker's static
// configs and the dynamic broker config store; groups, from the group
// config store.
func init() {
	serve(API{Key: kmsg.DescribeConfigs.Int16(), MinVersion: 1, MaxVersion: 4, Handle: handleDescribeConfigs, ErrorResponse: describeConfigsError})
}

// handleDescribeConfigs describes topic configs (with synonyms and
// documentation when asked), this broker's static configs and group
// configs (read from the store off the connection actor).
func handleDescribeConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	v := r.View
	// indexes in resp.Resources described when answering (off the actor)
	var groups, brokers, subscriptions []int
	var dyn brokerconfig.Set // the dynamic broker configs topic defaults come from
	if r.Server.DynamicInForce != nil {
		dyn = r.Server.DynamicInForce()
	}
	for _, res := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		switch res.ResourceType {
		case resourceTopic:
			t, ok := v.Internal(res.ResourceName)
			if !ok {
				t, ok = v.Topics[res.ResourceName]
			}
			if !ok {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			for _, name := range topicconfig.Names() {
				if !wanted(res.ConfigNames, name) {
					continue
				}
				rr.Configs = append(rr.Configs, describeTopicConfig(req, r.Server, dyn, v.Self, t, name))
			}
		case resourceBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(v.Self)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				m := "Unexpected broker id, expected " + strconv.Itoa(int(v.Self)) + " or empty string, but received " + res.ResourceName
				rr.ErrorMessage = &m
				break
			}
			brokers = append(brokers, len(resp.Resources))
		case resourceBrokerLogger:
			if bad := brokerLoggerResourceError(res.ResourceName, v.Self); bad.code != 0 {
				rr.ErrorCode, rr.ErrorMessage = bad.code, optString(bad.msg)
				break
			}
			for _, l := range r.Server.Loggers.Describe() {
				if !wanted(res.ConfigNames, l.Name) {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				c.Name, c.Value, c.Source = l.Name, kmsg.StringPtr(l.Level), sourceDynamicBrokerLogger
				c.ConfigType = kmsg.ConfigTypeString
				if req.IncludeDocumentation {
					c.Documentation = kmsg.StringPtr("the level of the broker's " + l.Name + " logger")
				}
				rr.Configs = append(rr.Configs, c)
			}
		case resourceGroup:
			groups = append(groups, len(resp.Resources))
		case resourceClientMetric:
			if res.ResourceName == "" {
				rr.ErrorCode, rr.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Client metrics subscription name must not be empty")
				break
			}
			subscriptions = append(subscriptions, len(resp.Resources))
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			m := "kaas describes topic, broker, broker logger, group and client-metrics configs only"
			rr.ErrorMessage = &m
		}
		resp.Resources = append(resp.Resources, rr)
	}
	if len(groups) == 0 && len(brokers) == 0 && len(subscriptions) == 0 {
		return Ready(resp)
	}
	return func() kmsg.Response {
		for _, i := range subscriptions {
			describeClientMetrics(r.Server.ClientMetrics, req.Resources[i].ConfigNames, &resp.Resources[i])
		}
		for _, i := range groups {
			describeGroupConfigs(req, r.Server.GroupConfigs, req.Resources[i].ConfigNames, &resp.Resources[i])
		}
		for _, i := range brokers {
			describeBrokerConfigs(req, r.Server, v.Self, req.Resources[i].ConfigNames, &resp.Resources[i])
		}
		return resp
	}
}

// describeBrokerConfigs fills rr with a broker resource's configs, as
// Kafka does: for this broker every static config and every dynamic one in
// force, each with the value and source of the highest level that sets it
// (per-broker dynamic, cluster default dynamic, static flag, Kafka
// default); for the cluster default ("") the dynamic defaults alone.
func describeBrokerConfigs(req *kmsg.DescribeConfigsRequest, s *Server, self int32, names []string, rr *kmsg.DescribeConfigsResponseResource) {
	set, err := s.BrokerDynamic.Load()
	if err != nil {
		rr.ErrorCode = kerr.KafkaStorageError.Code
		m := err.Error()
		rr.ErrorMessage = &m
		return
	}
	static := func(name string) (string, bool) {
		bc, ok := s.BrokerConfigs[name]
		return bc.Value, ok
	}
	listed := maps.Clone(set.Default)
	if rr.ResourceName != "" {
		listed = set.For(self)
		for name := range s.BrokerConfigs {
			listed[name] = ""
		}
	} else {
		set.Brokers = nil // the default resource shows no broker's own values
	}
	for _, name := range sortedKeys(listed) {
		if !wanted(names, name) {
			continue
		}
		levels := brokerconfig.Resolve(set, self, name, static)
		if len(levels) == 0 {
			continue
		}
		k, dynamic := brokerconfig.Lookup(name)
		_, isStatic := s.BrokerConfigs[name]
		sensitive := brokerconfig.Sensitive(name)
		value := func(v string) *string {
			if sensitive {
				return nil
			}
			return &v
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = name, value(levels[0].Value), kmsg.ConfigSource(levels[0].Source)
		c.ReadOnly = isStatic && !dynamic
		c.IsDefault = levels[0].Source == brokerconfig.SourceDefault
		c.IsSensitive = sensitive
		c.ConfigType = kmsg.ConfigType(k.Type)
		doc := k.Doc
		if bc, ok := s.BrokerConfigs[name]; ok {
			c.ConfigType = kmsg.ConfigType(bc.Type)
			doc = bc.Doc
		} else if !dynamic {
			doc = "a custom broker config (not a Kafka config), stored and reported"
		}
		if req.IncludeDocumentation {
			c.Documentation = &doc
		}
		if req.IncludeSynonyms {
			for _, l := range levels {
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				sy.Name, sy.Value, sy.Source = l.Name, value(l.Value), kmsg.ConfigSource(l.Source)
				c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
			}
		}
		rr.Configs = append(rr.Configs, c)
	}
}

// describeClientMetrics fills rr with a client-metrics subscription's
// configs: those it sets, with source CLIENT_METRICS_CONFIG, as Kafka lists
// them (a name without a subscription lists none).
func describeClientMetrics(store *clientmetrics.Store, names []string, rr *kmsg.DescribeConfigsResponseResource) {
	all, err := store.Load()
	if err != nil {
		rr.ErrorCode, rr.ErrorMessage = kerr.KafkaStorageError.Code, kmsg.StringPtr(err.Error())
		return
	}
	cfg := all[rr.ResourceName]
	for _, name := range sortedKeys(cfg) {
		if !wanted(names, name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name, c.Value, c.Source = name, kmsg.StringPtr(cfg[name]), sourceClientMetrics
		if name == clientmetrics.IntervalMs {
			c.ConfigType = kmsg.ConfigTypeInt
		} else {
			c.ConfigType = kmsg.ConfigTypeList
		}
		rr.Configs = append(rr.Configs, c)
	}
}

// describeGroupConfigs fills rr with the group's configs: each override
// (source GROUP_CONFIG) or the default this broker applies.
func describeGroupConfigs(req *kmsg.DescribeConfigsRequest, store *groupconfig.Store, names []string, rr *kmsg.DescribeConfigsResponseResource) {
	if rr.ResourceName == "" {
		rr.ErrorCode = kerr.InvalidRequest.Code
		m := "a group config resource needs a group name"
		rr.ErrorMessage = &m
		return
	}
	set, err := store.Load(rr.ResourceName)
	if err != nil {
		rr.ErrorCode = kerr.KafkaStorageError.Code
		m := err.Error()
		rr.ErrorMessage = &m
		return
	}
	for _, name := range groupconfig.Names() {
		if !wanted(names, name) {
			continue
		}
		k := groupconfig.Keys[name]
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		def := store.Default(name)
		val, isSet := set[name]
		c.Name, c.Source, c.IsDefault = name, sourceDefault, !isSet
		if isSet {
			c.Source = sourceGroup
		} else {
			val = def
		}
		c.Value = &val
		c.ConfigType = kmsg.ConfigType(k.Type)
		if req.IncludeDocumentation {
			doc := k.Doc
			c.Documentation = &doc
		}
		if req.IncludeSynonyms {
			if isSet {
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				ov := val
				sy.Name, sy.Value, sy.Source = name, &ov, sourceGroup
				c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
			}
			if k.Type == topicconfig.TypeInt { // the broker default group.<name>
				sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
				sy.Name, sy.Value, sy.Source = "group."+name, &def, sourceDefault
				c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
			}
		}
		rr.Configs = append(rr.Configs, c)
	}
}

// wanted reports whether a resource's ConfigNames ask for name: null or
// empty asks for every config, as on Kafka (ConfigHelperUtils).
func wanted(names []string, name string) bool {
	return len(names) == 0 || slices.Contains(names, name)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// describeTopicConfig describes one topic config: the topic's override,
// else the broker default in force (per-broker dynamic, cluster default
// dynamic, static flag), else Kafka's default, with every level as a
// synonym when asked.
func describeTopicConfig(req *kmsg.DescribeConfigsRequest, s *Server, dyn brokerconfig.Set, self int32, t *routing.Topic, name string) kmsg.DescribeConfigsResponseResourceConfig {
	k := topicconfig.Keys[name]
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	levels, val, src, inForce := brokerconfig.ResolveTopic(dyn, self, name, func(n string) (string, bool) {
		bc, ok := s.BrokerConfigs[n]
		return bc.Value, ok
	})
	if !inForce {
		val, src = k.Default, brokerconfig.SourceDefault
	}
	if v, isSet := t.Config[name]; isSet {
		levels = append([]brokerconfig.Synonym{{Name: name, Value: v, Source: brokerconfig.Source(sourceDynamicTopic)}}, levels...)
		val, src = v, brokerconfig.Source(sourceDynamicTopic)
	}
	levels = append(levels, brokerconfig.Synonym{Name: k.Synonym, Value: k.Default, Source: brokerconfig.SourceDefault})
	c.Value = &val
	c.Source = kmsg.ConfigSource(src)
	_, isSet := t.Config[name]
	c.IsDefault = !isSet
	c.ConfigType = kmsg.ConfigType(k.Type)
	if req.IncludeDocumentation {
		doc := k.Doc
		c.Documentation = &doc
	}
	if req.IncludeSynonyms {
		for _, l := range levels {
			sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			v := l.Value
			sy.Name, sy.Value, sy.Source = l.Name, &v, kmsg.ConfigSource(l.Source)
			c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
		}
	}
	return c
}

// describeConfigsError answers every resource of a DescribeConfigs with code.
func describeConfigsError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	for _, rr := range req.Resources {
		rs := kmsg.NewDescribeConfigsResponseResource()
		rs.ResourceType, rs.ResourceName, rs.ErrorCode = rr.ResourceType, rr.ResourceName, code
		resp.Resources = append(resp.Resources, rs)
	}
	return resp
}
