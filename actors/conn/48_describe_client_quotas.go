package conn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/quota"
)

// DescribeClientQuotas (key 48): v0-1, answered from this broker's quota
// configuration (the KafkaQuota objects it watches, or the local quota
// file), with Kafka's filter semantics (actors/quota: exact, default and
// any matches; strict excludes entities with other components), in
// Kafka's order of entities, components and values (actors/quota's
// order.go). A bad filter answers INVALID_REQUEST in the top-level
// ErrorCode.
func init() {
	serve(API{Key: kmsg.DescribeClientQuotas.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleDescribeClientQuotas})
}

func handleDescribeClientQuotas(r *Request) Pending {
	req := r.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	f := quota.Filter{Strict: req.Strict}
	for _, c := range req.Components {
		fc := quota.FilterComponent{Type: c.EntityType, Match: quota.MatchType(c.MatchType)}
		if fc.Match == quota.MatchExact {
			if c.Match == nil {
				resp.ErrorCode = kerr.InvalidRequest.Code
				resp.ErrorMessage = optString("an exact match needs a name")
				return Ready(resp)
			}
			fc.Name = *c.Match
		}
		f.Components = append(f.Components, fc)
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = optString(err.Error())
		return Ready(resp)
	}
	cfg := r.Server.Quotas.Config()
	for _, e := range cfg.Describe(f) {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range e.Components() {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = c.Type, c.Name
			entry.Entity = append(entry.Entity, ee)
		}
		for _, k := range cfg[e].SortedKeys() {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, cfg[e][k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return Ready(resp)
}
