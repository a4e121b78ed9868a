package conn

import (
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/groupconfig"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// DescribeConfigs (key 32): v0-4, topics and this broker, from the routing
// view and the broker's static configs, and groups, from the group config
// store.
func init() {
	serve(API{Key: kmsg.DescribeConfigs.Int16(), MinVersion: 0, MaxVersion: 4, Handle: handleDescribeConfigs, ErrorResponse: describeConfigsError})
}

// handleDescribeConfigs describes topic configs (with synonyms and
// documentation when asked), this broker's static configs and group
// configs (read from the store off the connection actor).
func handleDescribeConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeConfigsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	v := r.View
	var groups []int // indexes in resp.Resources described when answering
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
				bc := r.Server.BrokerConfigs[name]
				val := bc.Value
				c.Name, c.Value, c.ReadOnly, c.Source = name, &val, true, sourceStaticBroker
				c.ConfigType = kmsg.ConfigType(bc.Type)
				if req.IncludeDocumentation {
					doc := bc.Doc
					c.Documentation = &doc
				}
				if req.IncludeSynonyms {
					s := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					s.Name, s.Value, s.Source = name, &val, sourceStaticBroker
					c.ConfigSynonyms = append(c.ConfigSynonyms, s)
				}
				rr.Configs = append(rr.Configs, c)
			}
		case resourceGroup:
			groups = append(groups, len(resp.Resources))
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			m := "kaas describes topic, broker and group configs only"
			rr.ErrorMessage = &m
		}
		resp.Resources = append(resp.Resources, rr)
	}
	if len(groups) == 0 {
		return Ready(resp)
	}
	return func() kmsg.Response {
		for _, i := range groups {
			describeGroupConfigs(req, r.Server.GroupConfigs, req.Resources[i].ConfigNames, &resp.Resources[i])
		}
		return resp
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
	bc, brokerSet := s.BrokerConfigs[k.Synonym]
	brokerVal := bc.Value
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
