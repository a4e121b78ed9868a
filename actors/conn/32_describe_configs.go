package conn

import (
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// DescribeConfigs (key 32): v0-4, topics and this broker, from the routing
// view and the broker's static configs.
func init() {
	serve(API{Key: kmsg.DescribeConfigs.Int16(), MinVersion: 0, MaxVersion: 4, Handle: handleDescribeConfigs, ErrorResponse: describeConfigsError})
}

// handleDescribeConfigs describes topic configs (with synonyms and
// documentation when asked) and this broker's static configs.
func handleDescribeConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	v := r.View
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
				rr.Configs = append(rr.Configs, describeTopicConfig(req, r.Server, t, name))
			}
		case resourceBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(v.Self)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
				m := "DescribeConfigs for broker " + res.ResourceName + " must be sent to that broker"
				rr.ErrorMessage = &m
				break
			}
			for _, name := range sortedKeys(r.Server.BrokerConfigs) {
				if !wanted(res.ConfigNames, name) {
					continue
				}
				c := kmsg.NewDescribeConfigsResponseResourceConfig()
				val := r.Server.BrokerConfigs[name]
				c.Name, c.Value, c.ReadOnly, c.Source = name, &val, true, sourceStaticBroker
				c.ConfigType = kmsg.ConfigType(topicconfig.TypeString)
				if req.IncludeSynonyms {
					s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					s.Name, s.Value, s.Source = name, &val, sourceStaticBroker
					c.ConfigSynonyms = append(c.ConfigSynonyms, s)
				}
				rr.Configs = append(rr.Configs, c)
			}
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			m := "kaas describes topic and broker configs only"
			rr.ErrorMessage = &m
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return Ready(resp)
}

func wanted(names []string, name string) bool {
	return names == nil || slices.Contains(names, name)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func describeTopicConfig(req *kmsg.DescribeConfigsRequest, s *Server, t *routing.Topic, name string) kmsg.DescribeConfigsResponseResourceConfig {
	k := topicconfig.Keys[name]
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	override, isSet := t.Config[name]
	val := k.Default
	brokerVal, brokerSet := s.BrokerConfigs[k.Synonym]
	if brokerSet {
		val = brokerVal
	}
	c.Source = sourceDefault
	if brokerSet {
		c.Source = sourceStaticBroker
	}
	if isSet {
		val = override
		c.Source = sourceDynamicTopic
	}
	c.Value = &val
	c.IsDefault = !isSet
	c.ConfigType = kmsg.ConfigType(k.Type)
	if req.IncludeDocumentation {
		doc := k.Doc
		c.Documentation = &doc
	}
	if req.IncludeSynonyms {
		if isSet {
			sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			ov := override
			sy.Name, sy.Value, sy.Source = name, &ov, sourceDynamicTopic
			c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
		}
		if brokerSet {
			sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			bv := brokerVal
			sy.Name, sy.Value, sy.Source = k.Synonym, &bv, sourceStaticBroker
			c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
		}
		sy := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		def := k.Default
		sy.Name, sy.Value, sy.Source = k.Synonym, &def, sourceDefault
		c.ConfigSynonyms = append(c.ConfigSynonyms, sy)
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
