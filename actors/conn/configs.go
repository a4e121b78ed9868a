package conn

import (
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// Kafka's ConfigResource types and config sources.
const (
	resourceTopic  = 2
	resourceBroker = 4

	sourceDynamicTopic = 1
	sourceStaticBroker = 4
	sourceDefault      = 5
)

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
			t, ok := v.Topics[res.ResourceName]
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

func sortedKeys(m map[string]string) []string {
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

type alterResult struct {
	code int16
	msg  string
}

// alterTopic sends a full config replacement to the supervisor; the reply
// lands in out.
func alterTopic(r *Request, topic string, cfg map[string]string, validateOnly bool, out *alterResult, wg *waitGroup) {
	wg.Add(1)
	r.Server.Supervisor().Send(&messages.AlterTopicConfig{Topic: topic, Config: cfg, ValidateOnly: validateOnly,
		Reply: func(res messages.TopicResult) {
			out.code, out.msg = res.ErrorCode, res.ErrorMessage
			wg.Done()
		}})
}

func brokerAlterRefused() alterResult {
	return alterResult{code: kerr.InvalidRequest.Code, msg: "kaas broker configs are static (flags and KAAS_* variables); they cannot be altered at runtime"}
}

// handleAlterConfigs replaces a topic's whole config (the legacy API).
func handleAlterConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	results := make([]alterResult, len(req.Resources))
	wg := new(waitGroup)
	for i, res := range req.Resources {
		switch res.ResourceType {
		case resourceTopic:
			if _, ok := r.View.Topics[res.ResourceName]; !ok {
				results[i] = alterResult{code: kerr.UnknownTopicOrPartition.Code}
				continue
			}
			cfg := map[string]string{}
			for _, c := range res.Configs {
				if c.Value != nil {
					cfg[c.Name] = *c.Value
				}
			}
			alterTopic(r, res.ResourceName, cfg, req.ValidateOnly, &results[i], wg)
		case resourceBroker:
			results[i] = brokerAlterRefused()
		default:
			results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "unsupported resource type"}
		}
	}
	return func() kmsg.Response {
		wg.Wait()
		for i, res := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, results[i].code
			if results[i].msg != "" {
				m := results[i].msg
				rr.ErrorMessage = &m
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

// handleIncrementalAlterConfigs applies SET / DELETE / APPEND / SUBTRACT to
// the current topic config and sends the result as a full replacement.
func handleIncrementalAlterConfigs(r *Request) Pending {
	req := r.Body.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	results := make([]alterResult, len(req.Resources))
	wg := new(waitGroup)
	for i, res := range req.Resources {
		switch res.ResourceType {
		case resourceTopic:
			t, ok := r.View.Topics[res.ResourceName]
			if !ok {
				results[i] = alterResult{code: kerr.UnknownTopicOrPartition.Code}
				continue
			}
			cfg := maps.Clone(t.Config)
			if cfg == nil {
				cfg = map[string]string{}
			}
			if bad := applyIncremental(cfg, res.Configs); bad.code != 0 {
				results[i] = bad
				continue
			}
			alterTopic(r, res.ResourceName, cfg, req.ValidateOnly, &results[i], wg)
		case resourceBroker:
			results[i] = brokerAlterRefused()
		default:
			results[i] = alterResult{code: kerr.InvalidRequest.Code, msg: "unsupported resource type"}
		}
	}
	return func() kmsg.Response {
		wg.Wait()
		for i, res := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, results[i].code
			if results[i].msg != "" {
				m := results[i].msg
				rr.ErrorMessage = &m
			}
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	}
}

func applyIncremental(cfg map[string]string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) alterResult {
	for _, op := range ops {
		k, known := topicconfig.Keys[op.Name]
		if !known {
			return alterResult{code: kerr.InvalidConfig.Code, msg: "unknown topic config " + op.Name}
		}
		val := ""
		if op.Value != nil {
			val = *op.Value
		}
		switch op.Op {
		case 0: // SET
			cfg[op.Name] = val
		case 1: // DELETE
			delete(cfg, op.Name)
		case 2, 3: // APPEND, SUBTRACT (list types only)
			if k.Type != topicconfig.TypeList {
				return alterResult{code: kerr.InvalidConfig.Code, msg: op.Name + " is not a list config"}
			}
			cur := topicconfig.Value(cfg, op.Name)
			var items []string
			if cur != "" {
				items = strings.Split(cur, ",")
			}
			if op.Op == 2 {
				if !slices.Contains(items, val) {
					items = append(items, val)
				}
			} else {
				items = slices.DeleteFunc(items, func(s string) bool { return s == val })
			}
			cfg[op.Name] = strings.Join(items, ",")
		default:
			return alterResult{code: kerr.InvalidRequest.Code, msg: "unknown incremental alter op"}
		}
	}
	return alterResult{}
}
