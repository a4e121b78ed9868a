// Package quota is the broker's client quotas, with Apache Kafka's
// semantics (KIP-13, KIP-55, KIP-124, KIP-219, KIP-546, KIP-599, KIP-612): quota entities (a
// user, a client id, both, an ip address, and the default of each), their
// configured values, the filters DescribeClientQuotas matches them with,
// the resolution of the quota that applies to one connection's (user,
// client id) or address, and the rate meters and token buckets whose
// overshoot becomes a throttle time.
//
// The package is pure apart from the local-dev file store: a Quotas holds
// an immutable snapshot of the configuration that whoever watches the store
// (KafkaQuota objects, the local file) replaces with Set, and meters that
// callers feed with the time of an injectable clock.
package quota

import (
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strings"
)

// Kafka's entity types and quota keys.
const (
	TypeUser     = "user"
	TypeClientID = "client-id"
	TypeIP       = "ip"

	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"

	// DefaultName is how a default entity is written in the KafkaQuota
	// objects and the local file (Kafka's own notation, as in
	// kafka-configs.sh --entity-default).
	DefaultName = "<default>"
)

// keys are the quota keys Kafka accepts for user and client-id entities,
// and whether the value is a whole number (a LONG config in Kafka).
var keys = map[string]bool{
	ProducerByteRate:       true,
	ConsumerByteRate:       true,
	RequestPercentage:      false,
	ControllerMutationRate: false,
}

// ipKeys are the quota keys of ip entities (KIP-612).
var ipKeys = map[string]bool{ConnectionCreationRate: true}

// ErrInvalid marks an entity, a filter or a value Kafka refuses with
// INVALID_REQUEST.
var ErrInvalid = errors.New("invalid client quota")

// Part is one component of an entity: absent, a name, or the default.
type Part struct {
	Set     bool // the entity has this component
	Default bool // the default entity of this type (Name empty)
	Name    string
}

// Named is a Part naming name.
func Named(name string) Part { return Part{Set: true, Name: name} }

// Default is the default Part.
func Default() Part { return Part{Set: true, Default: true} }

func (p Part) String() string {
	switch {
	case !p.Set:
		return "-"
	case p.Default:
		return DefaultName
	default:
		return p.Name
	}
}

// Entity is what a quota is configured for: a user, a client id, or both,
// or an ip address (never with the others), each a name or the default.
type Entity struct {
	User     Part
	ClientID Part
	IP       Part
}

func (e Entity) String() string {
	var parts []string
	if e.User.Set {
		parts = append(parts, TypeUser+"="+e.User.String())
	}
	if e.ClientID.Set {
		parts = append(parts, TypeClientID+"="+e.ClientID.String())
	}
	if e.IP.Set {
		parts = append(parts, TypeIP+"="+e.IP.String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// check refuses entities Kafka refuses: no component, an ip with a user
// or client id, an ip name that is not an address.
func (e Entity) check() error {
	switch {
	case !e.User.Set && !e.ClientID.Set && !e.IP.Set:
		return fmt.Errorf("%w: empty entity", ErrInvalid)
	case e.IP.Set && (e.User.Set || e.ClientID.Set):
		return fmt.Errorf("%w: an ip entity cannot be combined with a user or client-id", ErrInvalid)
	case e.IP.Set && !e.IP.Default && net.ParseIP(e.IP.Name) == nil:
		return fmt.Errorf("%w: ip entity %q is not an IP address", ErrInvalid, e.IP.Name)
	}
	return nil
}

// canonicalIP is addr as net.IP prints it, so that an entity named "::01"
// and a connection from ::1 meet.
func canonicalIP(addr string) string {
	if ip := net.ParseIP(addr); ip != nil {
		return ip.String()
	}
	return addr
}

// Component is one (type, name) pair of an entity as the Kafka protocol
// carries it: a nil Name is the default entity of the type.
type Component struct {
	Type string
	Name *string
}

// EntityOf builds an entity from the protocol's components: each of user,
// client-id and ip at most once, an ip alone and naming an address.
func EntityOf(cs []Component) (Entity, error) {
	var e Entity
	for _, c := range cs {
		p := Default()
		if c.Name != nil {
			p = Named(*c.Name)
		}
		var slot *Part
		switch c.Type {
		case TypeUser:
			slot = &e.User
		case TypeClientID:
			slot = &e.ClientID
		case TypeIP:
			slot = &e.IP
			if !p.Default {
				p.Name = canonicalIP(p.Name)
			}
		default:
			return e, fmt.Errorf("%w: unknown entity type %q (want user, client-id or ip)", ErrInvalid, c.Type)
		}
		if slot.Set {
			return e, fmt.Errorf("%w: duplicate entity type %q", ErrInvalid, c.Type)
		}
		*slot = p
	}
	return e, e.check()
}

// Components is e in the protocol's form, in Kafka's order (its
// ClientQuotaEntity's map).
func (e Entity) Components() []Component {
	var out []Component
	add := func(typ string, p Part) {
		if !p.Set {
			return
		}
		c := Component{Type: typ}
		if !p.Default {
			name := p.Name
			c.Name = &name
		}
		out = append(out, c)
	}
	add(TypeUser, e.User)
	add(TypeClientID, e.ClientID)
	add(TypeIP, e.IP)
	InKafkaOrder(out, componentHash, 16)
	return out
}

// Values are an entity's configured quotas, by key.
type Values map[string]float64

// ValidateValue checks one quota key and value of entity e as Kafka does:
// a key of e's kind (connection_creation_rate for ip entities, the others
// for users and client ids), a positive finite value, whole for the byte
// and connection rates.
func ValidateValue(e Entity, key string, v float64) error {
	whole, ok := keys[key]
	if e.IP.Set {
		whole, ok = ipKeys[key]
	}
	switch {
	case !ok && e.IP.Set:
		return fmt.Errorf("%w: quota key %q does not apply to an ip entity (want %s)", ErrInvalid, key, ConnectionCreationRate)
	case !ok:
		return fmt.Errorf("%w: unknown quota key %q (want %s, %s, %s or %s; %s is for ip entities)", ErrInvalid, key,
			ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate, ConnectionCreationRate)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return fmt.Errorf("%w: %s must be a positive number, not %v", ErrInvalid, key, v)
	}
	if whole && (v != math.Trunc(v) || v > math.MaxInt64) {
		return fmt.Errorf("%w: %s must be a whole number of bytes per second, not %v", ErrInvalid, key, v)
	}
	return nil
}

// Op is one change of an entity's quota: set Key to Value, or remove it.
type Op struct {
	Key    string
	Value  float64
	Remove bool
}

// Apply validates ops on entity e and returns cur with them applied (cur
// is not changed). An op naming a key twice is refused, as Kafka does.
func Apply(e Entity, cur Values, ops []Op) (Values, error) {
	seen := map[string]bool{}
	next := Values{}
	for k, v := range cur {
		next[k] = v
	}
	for _, op := range ops {
		if seen[op.Key] {
			return nil, fmt.Errorf("%w: duplicate quota key %q", ErrInvalid, op.Key)
		}
		seen[op.Key] = true
		if op.Remove {
			if err := ValidateValue(e, op.Key, 1); err != nil {
				return nil, err
			}
			delete(next, op.Key)
			continue
		}
		if err := ValidateValue(e, op.Key, op.Value); err != nil {
			return nil, err
		}
		next[op.Key] = op.Value
	}
	return next, nil
}

// Config is every configured entity's values.
type Config map[Entity]Values

// MatchType is how a DescribeClientQuotas filter component matches.
type MatchType int8

// Kafka's match types.
const (
	MatchExact   MatchType = 0 // the entity has the type, with this name
	MatchDefault MatchType = 1 // the entity has the type's default
	MatchAny     MatchType = 2 // the entity has the type (any name or default)
)

// FilterComponent is one component of a DescribeClientQuotas filter.
type FilterComponent struct {
	Type  string
	Match MatchType
	Name  string // MatchExact only
}

// Filter selects entities: every component must match; Strict also
// requires the entity to have no other component.
type Filter struct {
	Components []FilterComponent
	Strict     bool
}

// Validate checks f as Kafka does: known entity types, each at most once,
// a known match type.
func (f Filter) Validate() error {
	seen := map[string]bool{}
	for _, c := range f.Components {
		switch c.Type {
		case TypeUser, TypeClientID, TypeIP:
		default:
			return fmt.Errorf("%w: unknown entity type %q in filter", ErrInvalid, c.Type)
		}
		if seen[c.Type] {
			return fmt.Errorf("%w: duplicate entity type %q in filter", ErrInvalid, c.Type)
		}
		seen[c.Type] = true
		if c.Match != MatchExact && c.Match != MatchDefault && c.Match != MatchAny {
			return fmt.Errorf("%w: unknown match type %d", ErrInvalid, c.Match)
		}
	}
	return nil
}

// Matches reports whether f selects e.
func (f Filter) Matches(e Entity) bool {
	want := 0
	for _, c := range f.Components {
		p := e.User
		switch c.Type {
		case TypeClientID:
			p = e.ClientID
		case TypeIP:
			p = e.IP
		}
		if !p.Set {
			return false
		}
		switch c.Match {
		case MatchExact:
			if p.Default || p.Name != c.Name && (c.Type != TypeIP || p.Name != canonicalIP(c.Name)) {
				return false
			}
		case MatchDefault:
			if !p.Default {
				return false
			}
		}
		want++
	}
	if f.Strict {
		have := 0
		if e.User.Set {
			have++
		}
		if e.ClientID.Set {
			have++
		}
		if e.IP.Set {
			have++
		}
		return have == want
	}
	return true
}

// Describe returns the entities of c that f selects, in Kafka's order
// (order.go).
func (c Config) Describe(f Filter) []Entity {
	// Kafka's order of every entity (its ClientQuotasImage, as a broker
	// loading them builds it), from the fixed one.
	all := c.sorted()
	hash := func(e Entity) int32 { return EntityHash(e.Components()) }
	InKafkaOrder(all, hash, 16)
	InKafkaOrder(all, hash, 0)
	out := all[:0]
	for _, e := range all {
		if f.Matches(e) {
			out = append(out, e)
		}
	}
	return out
}

// sorted is c's entities that have values, ordered by less.
func (c Config) sorted() []Entity {
	var out []Entity
	for e, vs := range c {
		if len(vs) > 0 {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].less(out[j]) })
	return out
}

// less orders entities by user, then client id, then ip: names (sorted),
// then the default, then absent; Kafka's order breaks its ties with it.
func (e Entity) less(o Entity) bool {
	if e.User != o.User {
		return e.User.less(o.User)
	}
	if e.ClientID != o.ClientID {
		return e.ClientID.less(o.ClientID)
	}
	return e.IP.less(o.IP)
}

func (p Part) rank() int {
	switch {
	case !p.Set:
		return 2
	case p.Default:
		return 1
	default:
		return 0
	}
}

func (p Part) less(o Part) bool {
	if p.rank() != o.rank() {
		return p.rank() < o.rank()
	}
	return p.Name < o.Name
}

// precedence is the order in which Kafka looks for the quota of a (user,
// client id) connection (the "Quota configuration" section of Kafka's
// documentation): the most specific entity first.
var precedence = []func(user, client string) Entity{
	func(u, c string) Entity { return Entity{User: Named(u), ClientID: Named(c)} },
	func(u, c string) Entity { return Entity{User: Named(u), ClientID: Default()} },
	func(u, c string) Entity { return Entity{User: Named(u)} },
	func(u, c string) Entity { return Entity{User: Default(), ClientID: Named(c)} },
	func(u, c string) Entity { return Entity{User: Default(), ClientID: Default()} },
	func(u, c string) Entity { return Entity{User: Default()} },
	func(u, c string) Entity { return Entity{ClientID: Named(c)} },
	func(u, c string) Entity { return Entity{ClientID: Default()} },
}

// Resolve finds the quota key applies to a connection of user with client
// id client: the bound, and the meter key every connection sharing that
// quota records into (a default entity's quota is per user or client id,
// as in Kafka: the meter names the connection's own user or client id).
// ok is false when no entity sets key.
func (c Config) Resolve(key, user, client string) (bound float64, meter Entity, ok bool) {
	for _, at := range precedence {
		e := at(user, client)
		v, set := c[e][key]
		if !set {
			continue
		}
		m := Entity{}
		if e.User.Set {
			m.User = Named(user)
		}
		if e.ClientID.Set {
			m.ClientID = Named(client)
		}
		return v, m, true
	}
	return 0, Entity{}, false
}

// ResolveIP finds the connection_creation_rate that applies to connections
// from addr: the address's own quota, else the default ip quota (Kafka's
// order). Every address is metered on its own, under either.
func (c Config) ResolveIP(addr string) (bound float64, meter Entity, ok bool) {
	meter = Entity{IP: Named(canonicalIP(addr))}
	for _, e := range []Entity{meter, {IP: Default()}} {
		if v, set := c[e][ConnectionCreationRate]; set {
			return v, meter, true
		}
	}
	return 0, Entity{}, false
}
