package acl

import (
	"net/netip"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Config is what the authorizer is told at start.
type Config struct {
	// SuperUsers are principals ("User:admin") allowed everything.
	SuperUsers []string
	// AllowIfNoACL allows a request on a resource that no ACL names
	// (Kafka's allow.everyone.if.no.acl.found).
	AllowIfNoACL bool
}

// Action is one question: may principal, connected from host, do op to
// the resource (type, name)?
type Action struct {
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	ResourceType kmsg.ACLResourceType
	ResourceName string
}

// Authorizer answers Actions from a snapshot of bindings. A nil
// *Authorizer allows everything (authorization off). Safe for concurrent
// use: Set swaps the snapshot atomically.
type Authorizer struct {
	super        map[string]bool
	allowIfNoACL bool
	snap         atomic.Pointer[snapshot]
}

// snapshot indexes bindings by resource type: literal names in a map,
// prefixed patterns in a list; hosts holds the block of addresses each
// binding host that names addresses covers, parsed once per Set.
type snapshot struct {
	all      []Binding
	literal  map[kmsg.ACLResourceType]map[string][]Binding
	prefixed map[kmsg.ACLResourceType][]Binding
	hosts    map[string]netip.Prefix
}

// New returns an authorizer with no bindings.
func New(cfg Config) *Authorizer {
	a := &Authorizer{super: map[string]bool{}, allowIfNoACL: cfg.AllowIfNoACL}
	for _, p := range cfg.SuperUsers {
		if p = strings.TrimSpace(p); p != "" {
			a.super[p] = true
		}
	}
	a.Set(nil)
	return a
}

// Set replaces the bindings (invalid ones are the caller's to drop).
func (a *Authorizer) Set(bs []Binding) {
	s := &snapshot{
		all:      Dedup(bs),
		literal:  map[kmsg.ACLResourceType]map[string][]Binding{},
		prefixed: map[kmsg.ACLResourceType][]Binding{},
		hosts:    map[string]netip.Prefix{},
	}
	for _, b := range s.all {
		if p, ok := hostPrefix(b.Host); ok {
			s.hosts[b.Host] = p
		}
		switch b.PatternType {
		case kmsg.ACLResourcePatternTypeLiteral:
			m := s.literal[b.ResourceType]
			if m == nil {
				m = map[string][]Binding{}
				s.literal[b.ResourceType] = m
			}
			m[b.ResourceName] = append(m[b.ResourceName], b)
		case kmsg.ACLResourcePatternTypePrefixed:
			s.prefixed[b.ResourceType] = append(s.prefixed[b.ResourceType], b)
		}
	}
	a.snap.Store(s)
}

// Bindings returns the current bindings, sorted.
func (a *Authorizer) Bindings() []Binding {
	return append([]Binding(nil), a.snap.Load().all...)
}

// Matching returns the current bindings f selects.
func (a *Authorizer) Matching(f Filter) []Binding {
	var out []Binding
	for _, b := range a.snap.Load().all {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// IsSuperUser reports whether principal is a configured super user.
func (a *Authorizer) IsSuperUser(principal string) bool { return a.super[principal] }

// Authorize answers one Action.
func (a *Authorizer) Authorize(act Action) bool {
	if a == nil || a.super[act.Principal] {
		return true
	}
	s := a.snap.Load()
	var onResource []Binding
	onResource = append(onResource, s.literal[act.ResourceType][act.ResourceName]...)
	if act.ResourceName != WildcardResource {
		onResource = append(onResource, s.literal[act.ResourceType][WildcardResource]...)
	}
	for _, b := range s.prefixed[act.ResourceType] {
		if strings.HasPrefix(act.ResourceName, b.ResourceName) {
			onResource = append(onResource, b)
		}
	}
	if len(onResource) == 0 {
		return a.allowIfNoACL
	}
	allowed := false
	c := client{host: act.Host}
	for _, b := range onResource {
		if !principalMatches(b.Principal, act.Principal) || !s.hostMatches(b.Host, &c) {
			continue
		}
		switch b.Permission {
		case kmsg.ACLPermissionTypeDeny:
			if b.Operation == act.Operation || b.Operation == kmsg.ACLOperationAll {
				return false
			}
		case kmsg.ACLPermissionTypeAllow:
			if implies(b.Operation, act.Operation) {
				allowed = true
			}
		}
	}
	return allowed
}

// AuthorizedOperations lists the operations (among ops) principal from
// host may do to the resource: KIP-430's authorized-operations bit field
// is built from it.
func (a *Authorizer) AuthorizedOperations(principal, host string, rt kmsg.ACLResourceType, name string, ops []kmsg.ACLOperation) []kmsg.ACLOperation {
	var out []kmsg.ACLOperation
	for _, op := range ops {
		if a.Authorize(Action{Principal: principal, Host: host, Operation: op, ResourceType: rt, ResourceName: name}) {
			out = append(out, op)
		}
	}
	return out
}

// Operations each resource type supports (Kafka's AclEntry), the set
// KIP-430 answers are drawn from.
var (
	TopicOperations = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs}
	GroupOperations   = []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete}
	ClusterOperations = []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe}
)

// OperationsBitField is KIP-430's int32: bit n set for operation code n.
func OperationsBitField(ops []kmsg.ACLOperation) int32 {
	var v int32
	for _, op := range ops {
		v |= 1 << uint(op)
	}
	return v
}

func principalMatches(acl, p string) bool { return acl == p || acl == WildcardPrincipal }

// Dedup sorts bindings and drops duplicates (Kafka keeps an ACL once).
func Dedup(bs []Binding) []Binding {
	out := append([]Binding(nil), bs...)
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	n := 0
	for i, b := range out {
		if i > 0 && b == out[n-1] {
			continue
		}
		out[n] = b
		n++
	}
	return out[:n]
}

func less(x, y Binding) bool {
	switch {
	case x.ResourceType != y.ResourceType:
		return x.ResourceType < y.ResourceType
	case x.ResourceName != y.ResourceName:
		return x.ResourceName < y.ResourceName
	case x.PatternType != y.PatternType:
		return x.PatternType < y.PatternType
	case x.Principal != y.Principal:
		return x.Principal < y.Principal
	case x.Host != y.Host:
		return x.Host < y.Host
	case x.Operation != y.Operation:
		return x.Operation < y.Operation
	}
	return x.Permission < y.Permission
}

// AuthorizeAny reports whether principal from host may do op to at least
// one resource of type rt (Kafka's authorizeByResourceType, used for
// KIP-679's "WRITE on any topic" idempotent producers): a super user may;
// a DENY on the wildcard resource forbids; any ALLOW naming the principal
// (or User:*) and host for op, on a literal or prefixed resource that is
// not itself denied the same way, permits. With no ACL on the type at all
// allow.everyone.if.no.acl.found decides.
func (a *Authorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if a == nil || a.super[principal] {
		return true
	}
	s := a.snap.Load()
	var candidates []Binding
	for _, bs := range s.literal[rt] {
		candidates = append(candidates, bs...)
	}
	candidates = append(candidates, s.prefixed[rt]...)
	if len(candidates) == 0 {
		return a.allowIfNoACL
	}
	c := client{host: host}
	applies := func(b Binding) bool {
		return principalMatches(b.Principal, principal) && s.hostMatches(b.Host, &c)
	}
	denied := func(b Binding) bool {
		return b.Permission == kmsg.ACLPermissionTypeDeny && (b.Operation == op || b.Operation == kmsg.ACLOperationAll)
	}
	for _, b := range s.literal[rt][WildcardResource] {
		if applies(b) && denied(b) {
			return false
		}
	}
	for _, b := range candidates {
		if !applies(b) || b.Permission != kmsg.ACLPermissionTypeAllow || !implies(b.Operation, op) {
			continue
		}
		name := b.ResourceName
		if b.PatternType == kmsg.ACLResourcePatternTypeLiteral && name == WildcardResource {
			return true
		}
		if a.Authorize(Action{Principal: principal, Host: host, Operation: op, ResourceType: rt, ResourceName: name}) {
			return true
		}
	}
	return false
}
