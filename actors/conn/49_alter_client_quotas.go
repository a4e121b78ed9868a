package conn

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/quota"
)

// AlterClientQuotas (key 49): v0-1. Each entry's entity and operations are
// validated as Kafka does (INVALID_REQUEST with the reason: unknown entity
// type or key, an ip entity with a user or client id or a key other than
// connection_creation_rate, a rate that is not a positive whole number) and, unless validateOnly, written to the quota store: a
// KafkaQuota object per entity in cluster mode, the local quota file
// otherwise. Removing every key of an entity removes it.
func init() {
	serve(API{Key: kmsg.AlterClientQuotas.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleAlterClientQuotas, ErrorResponse: alterClientQuotasError})
}

// quotaStoreTimeout bounds one AlterClientQuotas write to the store.
const quotaStoreTimeout = 30 * time.Second

func handleAlterClientQuotas(r *Request) Pending {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := alterClientQuotasError(req, 0).(*kmsg.AlterClientQuotasResponse)
	cur := r.Server.Quotas.Config()
	var changes []quota.Change
	var slots []int
	for i, e := range req.Entries {
		cs := make([]quota.Component, 0, len(e.Entity))
		for _, c := range e.Entity {
			cs = append(cs, quota.Component{Type: c.Type, Name: c.Name})
		}
		ent, err := quota.EntityOf(cs)
		ops := make([]quota.Op, 0, len(e.Ops))
		for _, o := range e.Ops {
			ops = append(ops, quota.Op{Key: o.Key, Value: o.Value, Remove: o.Remove})
		}
		if err == nil {
			_, err = quota.Apply(ent, cur[ent], ops)
		}
		if err != nil {
			resp.Entries[i].ErrorCode = kerr.InvalidRequest.Code
			resp.Entries[i].ErrorMessage = optString(err.Error())
			continue
		}
		changes = append(changes, quota.Change{Entity: ent, Ops: ops})
		slots = append(slots, i)
	}
	if req.ValidateOnly || len(changes) == 0 {
		return Ready(inKafkaOrder(resp))
	}
	store, log := r.Server.QuotaStore, r.Server.Log()
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.Background(), quotaStoreTimeout)
		defer cancel()
		for j, err := range store.Alter(ctx, changes) {
			if err == nil {
				continue
			}
			code := kerr.UnknownServerError.Code
			if errors.Is(err, quota.ErrInvalid) {
				code = kerr.InvalidRequest.Code
			} else {
				log.Warn().Err(err).Str("entity", changes[j].Entity.String()).Msg("AlterClientQuotas")
			}
			resp.Entries[slots[j]].ErrorCode = code
			resp.Entries[slots[j]].ErrorMessage = optString(err.Error())
		}
		return inKafkaOrder(resp)
	}
}

// inKafkaOrder orders resp's entries and each one's entity as Kafka's
// controller answers them (its results map; actors/quota's order.go):
// clients compare whole answers.
func inKafkaOrder(resp *kmsg.AlterClientQuotasResponse) *kmsg.AlterClientQuotasResponse {
	components := func(e kmsg.AlterClientQuotasResponseEntry) []quota.Component {
		cs := make([]quota.Component, len(e.Entity))
		for i, c := range e.Entity {
			cs[i] = quota.Component{Type: c.Type, Name: c.Name}
		}
		return cs
	}
	for i := range resp.Entries {
		quota.InKafkaOrder(resp.Entries[i].Entity, func(c kmsg.AlterClientQuotasResponseEntryEntity) int32 { return quota.JavaHash(c.Type) }, len(resp.Entries[i].Entity))
	}
	quota.InKafkaOrder(resp.Entries, func(e kmsg.AlterClientQuotasResponseEntry) int32 { return quota.EntityHash(components(e)) }, 16)
	return resp
}

// alterClientQuotasError answers every entry with code, echoing its entity.
func alterClientQuotasError(body kmsg.Request, code int16) kmsg.Response {
	req := body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = code
		for _, c := range e.Entity {
			rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
			rc.Type, rc.Name = c.Type, c.Name
			re.Entity = append(re.Entity, rc)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}
