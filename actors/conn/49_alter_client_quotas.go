package conn

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/quota"
)

// AlterClientQuotas (key 49): v0-1. Each entry's entity and operations are
// validated as Kafka does (INVALID_REQUEST with the reason: unknown entity
// type or key, an ip entity with a user or client id or a key other than
// connection_creation_rate, a rate that is not a positive whole number)
// and, unless validateOnly, written to the quota store: a KafkaQuota object
// per entity in cluster mode, the local quota file otherwise. Removing
// every key of an entity removes it. As Kafka's controller, it answers
// each entity once: an entity named again, or an entry naming a key twice,
// is ignored and its entity answered INVALID_REQUEST "Ignoring duplicate
// entity" (an earlier entry of it still applied).
func init() {
	serve(API{Key: kmsg.AlterClientQuotas.Int16(), MinVersion: 0, MaxVersion: 1, Handle: handleAlterClientQuotas, ErrorResponse: alterClientQuotasError})
}

// quotaStoreTimeout bounds one AlterClientQuotas write to the store.
const quotaStoreTimeout = 30 * time.Second

func handleAlterClientQuotas(r *Request) Pending {
	req := r.Body.(*kmsg.AlterClientQuotasRequest)
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	cur := r.Server.Quotas.Config()
	var changes []quota.Change
	var slots []int
	// answered: each entity's entry in resp, as Kafka's controller keeps
	// one result per entity.
	answered := map[string]int{}
	for _, e := range req.Entries {
		key, text := requestEntity(e.Entity)
		slot, again := answered[key]
		if !again {
			slot = len(resp.Entries)
			answered[key] = slot
			resp.Entries = append(resp.Entries, alterClientQuotasEntry(e.Entity, 0))
		}
		fail := func(msg string) {
			resp.Entries[slot].ErrorCode = kerr.InvalidRequest.Code
			resp.Entries[slot].ErrorMessage = optString(msg)
		}
		if again || duplicateQuotaKey(e.Ops) {
			// Kafka's controller ignores the entry; an earlier entry of
			// the entity is still applied, and answered with this.
			fail("Ignoring duplicate entity " + text)
			continue
		}
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
			fail(err.Error())
			continue
		}
		changes = append(changes, quota.Change{Entity: ent, Ops: ops})
		slots = append(slots, slot)
	}
	if req.ValidateOnly || len(changes) == 0 {
		return Ready(inKafkaOrder(resp))
	}
	store, log := r.Server.QuotaStore, r.Server.Log()
	return func() kmsg.Response {
		ctx, cancel := context.WithTimeout(context.Background(), quotaStoreTimeout)
		defer cancel()
		for j, err := range store.Alter(ctx, changes) {
			if err == nil || resp.Entries[slots[j]].ErrorCode != 0 {
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

// requestEntity is an entity of a request as a key of the answered
// entities (its components in any order; an entity naming a type twice,
// which is refused, is its own) and as Kafka's controller prints it
// (ClientQuotaEntity's toString: a map in its HashMap order, a default's
// name null, a type named twice with its last name).
func requestEntity(cs []kmsg.AlterClientQuotasRequestEntryEntity) (key, text string) {
	keys := make([]string, len(cs))
	names := map[string]string{}
	var types []string
	for i, c := range cs {
		keys[i] = strconv.Quote(c.Type)
		name := "null"
		if c.Name != nil {
			keys[i] += "=" + strconv.Quote(*c.Name) // a default differs from a name "null"
			name = *c.Name
		}
		if _, ok := names[c.Type]; !ok {
			types = append(types, c.Type)
		}
		names[c.Type] = name
	}
	slices.Sort(keys)
	quota.InKafkaOrder(types, quota.JavaHash, len(cs))
	for i, t := range types {
		types[i] = t + "=" + names[t]
	}
	return strings.Join(keys, ","), "ClientQuotaEntity(entries={" + strings.Join(types, ", ") + "})"
}

// duplicateQuotaKey: ops name a key twice, which Kafka's controller
// answers as a duplicate entity.
func duplicateQuotaKey(ops []kmsg.AlterClientQuotasRequestEntryOp) bool {
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[o.Key] {
			return true
		}
		seen[o.Key] = true
	}
	return false
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
		resp.Entries = append(resp.Entries, alterClientQuotasEntry(e.Entity, code))
	}
	return resp
}

// alterClientQuotasEntry is an answer entry for an entity, with code.
func alterClientQuotasEntry(cs []kmsg.AlterClientQuotasRequestEntryEntity, code int16) kmsg.AlterClientQuotasResponseEntry {
	re := kmsg.NewAlterClientQuotasResponseEntry()
	re.ErrorCode = code
	for _, c := range cs {
		rc := kmsg.NewAlterClientQuotasResponseEntryEntity()
		rc.Type, rc.Name = c.Type, c.Name
		re.Entity = append(re.Entity, rc)
	}
	return re
}
