package acl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	topic   = kmsg.ACLResourceTypeTopic
	group   = kmsg.ACLResourceTypeGroup
	cluster = kmsg.ACLResourceTypeCluster
	txnID   = kmsg.ACLResourceTypeTransactionalId
	lit     = kmsg.ACLResourcePatternTypeLiteral
	pre     = kmsg.ACLResourcePatternTypePrefixed
	allow   = kmsg.ACLPermissionTypeAllow
	deny    = kmsg.ACLPermissionTypeDeny
)

func bind(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func TestAuthorize(t *testing.T) {
	alice, bob := "User:alice", "User:bob"
	h1, h2 := "10.0.0.1", "10.0.0.2"
	type ask struct {
		principal, host string
		op              kmsg.ACLOperation
		rt              kmsg.ACLResourceType
		name            string
		want            bool
	}
	tests := []struct {
		name   string
		cfg    Config
		acls   []Binding
		checks []ask
	}{
		{name: "no ACLs denies by default",
			checks: []ask{{alice, h1, kmsg.ACLOperationRead, topic, "t", false}}},
		{name: "no ACLs allows with allow.everyone.if.no.acl.found", cfg: Config{AllowIfNoACL: true},
			checks: []ask{{alice, h1, kmsg.ACLOperationRead, topic, "t", true}}},
		{name: "allow.everyone.if.no.acl.found does not apply once any ACL names the resource", cfg: Config{AllowIfNoACL: true},
			acls: []Binding{bind(topic, "t", lit, bob, "*", kmsg.ACLOperationRead, allow)},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationRead, topic, "t", false},
				{bob, h1, kmsg.ACLOperationRead, topic, "t", true},
				{alice, h1, kmsg.ACLOperationRead, topic, "other", true},
			}},
		{name: "super user allowed everything, even against deny",
			cfg:  Config{SuperUsers: []string{"User:admin"}},
			acls: []Binding{bind(topic, "*", lit, "User:*", "*", kmsg.ACLOperationAll, deny)},
			checks: []ask{
				{"User:admin", h1, kmsg.ACLOperationWrite, topic, "t", true},
				{"User:admin", h1, kmsg.ACLOperationAlter, cluster, ClusterName, true},
				{alice, h1, kmsg.ACLOperationWrite, topic, "t", false},
			}},
		{name: "literal name matches exactly",
			acls: []Binding{bind(topic, "orders", lit, alice, "*", kmsg.ACLOperationWrite, allow)},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationWrite, topic, "orders", true},
				{alice, h1, kmsg.ACLOperationWrite, topic, "orders2", false},
				{alice, h1, kmsg.ACLOperationWrite, group, "orders", false},
				{bob, h1, kmsg.ACLOperationWrite, topic, "orders", false},
			}},
		{name: "wildcard resource name",
			acls: []Binding{bind(topic, "*", lit, alice, "*", kmsg.ACLOperationRead, allow)},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationRead, topic, "anything", true},
				{alice, h1, kmsg.ACLOperationRead, group, "anything", false},
			}},
		{name: "prefixed pattern",
			acls: []Binding{bind(topic, "app-", pre, alice, "*", kmsg.ACLOperationRead, allow)},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationRead, topic, "app-1", true},
				{alice, h1, kmsg.ACLOperationRead, topic, "app-", true},
				{alice, h1, kmsg.ACLOperationRead, topic, "app", false},
				{alice, h1, kmsg.ACLOperationRead, topic, "xapp-1", false},
			}},
		{name: "wildcard principal User:*",
			acls: []Binding{bind(group, "g", lit, "User:*", "*", kmsg.ACLOperationRead, allow)},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationRead, group, "g", true},
				{Anonymous, h1, kmsg.ACLOperationRead, group, "g", true},
			}},
		{name: "host matching",
			acls: []Binding{bind(topic, "t", lit, alice, h1, kmsg.ACLOperationRead, allow)},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationRead, topic, "t", true},
				{alice, h2, kmsg.ACLOperationRead, topic, "t", false},
			}},
		{name: "deny wins over allow, on its host only",
			acls: []Binding{
				bind(topic, "*", lit, "User:*", "*", kmsg.ACLOperationAll, allow),
				bind(topic, "secret", pre, alice, h2, kmsg.ACLOperationRead, deny),
			},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationRead, topic, "secret-1", true},
				{alice, h2, kmsg.ACLOperationRead, topic, "secret-1", false},
				{alice, h2, kmsg.ACLOperationWrite, topic, "secret-1", true},
				{bob, h2, kmsg.ACLOperationRead, topic, "secret-1", true},
			}},
		{name: "deny ALL denies every operation",
			acls: []Binding{
				bind(topic, "t", lit, alice, "*", kmsg.ACLOperationRead, allow),
				bind(topic, "t", lit, alice, "*", kmsg.ACLOperationAll, deny),
			},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationRead, topic, "t", false},
				{alice, h1, kmsg.ACLOperationDescribe, topic, "t", false},
			}},
		{name: "deny READ does not deny DESCRIBE granted by WRITE",
			acls: []Binding{
				bind(topic, "t", lit, alice, "*", kmsg.ACLOperationWrite, allow),
				bind(topic, "t", lit, alice, "*", kmsg.ACLOperationRead, deny),
			},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationDescribe, topic, "t", true},
				{alice, h1, kmsg.ACLOperationRead, topic, "t", false},
			}},
		{name: "implied operations",
			acls: []Binding{
				bind(topic, "r", lit, alice, "*", kmsg.ACLOperationRead, allow),
				bind(topic, "w", lit, alice, "*", kmsg.ACLOperationWrite, allow),
				bind(topic, "d", lit, alice, "*", kmsg.ACLOperationDelete, allow),
				bind(topic, "a", lit, alice, "*", kmsg.ACLOperationAlter, allow),
				bind(topic, "ac", lit, alice, "*", kmsg.ACLOperationAlterConfigs, allow),
				bind(topic, "c", lit, alice, "*", kmsg.ACLOperationCreate, allow),
				bind(topic, "all", lit, alice, "*", kmsg.ACLOperationAll, allow),
			},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationDescribe, topic, "r", true},
				{alice, h1, kmsg.ACLOperationDescribe, topic, "w", true},
				{alice, h1, kmsg.ACLOperationDescribe, topic, "d", true},
				{alice, h1, kmsg.ACLOperationDescribe, topic, "a", true},
				{alice, h1, kmsg.ACLOperationDescribeConfigs, topic, "ac", true},
				{alice, h1, kmsg.ACLOperationDescribe, topic, "ac", false},
				{alice, h1, kmsg.ACLOperationDescribe, topic, "c", false},
				{alice, h1, kmsg.ACLOperationWrite, topic, "r", false},
				{alice, h1, kmsg.ACLOperationRead, topic, "w", false},
				{alice, h1, kmsg.ACLOperationDescribeConfigs, topic, "r", false},
				{alice, h1, kmsg.ACLOperationAlterConfigs, topic, "all", true},
				{alice, h1, kmsg.ACLOperationDelete, topic, "all", true},
			}},
		{name: "hosts in CIDR notation (KIP-1276) cover the clients of their block",
			acls: []Binding{
				bind(topic, "t", lit, alice, "10.1.0.0/16", kmsg.ACLOperationRead, allow),
				bind(topic, "t", lit, alice, "10.1.2.0/24", kmsg.ACLOperationRead, deny),
				bind(topic, "t", lit, alice, "10.9.9.9/8", kmsg.ACLOperationWrite, allow),
				bind(topic, "t", lit, bob, "2001:db8::/32", kmsg.ACLOperationRead, allow),
				bind(topic, "t", lit, bob, "::ffff:192.168.0.0/112", kmsg.ACLOperationWrite, allow),
				bind(topic, "t", lit, bob, "2001:0db8:0000::7", kmsg.ACLOperationDelete, allow),
				bind(topic, "t", lit, bob, "0.0.0.0/0", kmsg.ACLOperationAlter, allow),
			},
			checks: []ask{
				{alice, "10.1.0.1", kmsg.ACLOperationRead, topic, "t", true},
				{alice, "10.1.255.255", kmsg.ACLOperationRead, topic, "t", true},
				{alice, "10.2.0.1", kmsg.ACLOperationRead, topic, "t", false},
				{alice, "10.1.2.3", kmsg.ACLOperationRead, topic, "t", false},       // the narrower deny wins
				{alice, "::ffff:10.1.0.1", kmsg.ACLOperationRead, topic, "t", true}, // a mapped client is its IPv4 address
				{alice, "10.200.0.1", kmsg.ACLOperationWrite, topic, "t", true},     // host bits past the prefix are ignored
				{alice, "11.0.0.1", kmsg.ACLOperationWrite, topic, "t", false},
				{alice, "not-an-address", kmsg.ACLOperationRead, topic, "t", false},
				{bob, "2001:db8:1::5", kmsg.ACLOperationRead, topic, "t", true},
				{bob, "2001:db9::5", kmsg.ACLOperationRead, topic, "t", false},
				{bob, "10.1.0.1", kmsg.ACLOperationRead, topic, "t", false},     // an IPv6 block holds no IPv4 client
				{bob, "192.168.3.4", kmsg.ACLOperationWrite, topic, "t", true},  // a mapped block is its IPv4 block
				{bob, "2001:db8::7", kmsg.ACLOperationDelete, topic, "t", true}, // one address, written another way
				{bob, "2001:db8::8", kmsg.ACLOperationDelete, topic, "t", false},
				{bob, "172.16.0.1", kmsg.ACLOperationAlter, topic, "t", true},
				{bob, "fe80::1", kmsg.ACLOperationAlter, topic, "t", false},
			}},
		{name: "a host that is not an address matches only itself",
			acls: []Binding{bind(topic, "t", lit, alice, "client.example", kmsg.ACLOperationRead, allow)},
			checks: []ask{
				{alice, "client.example", kmsg.ACLOperationRead, topic, "t", true},
				{alice, "10.0.0.1", kmsg.ACLOperationRead, topic, "t", false},
			}},
		{name: "cluster and transactional id resources",
			acls: []Binding{
				bind(cluster, ClusterName, lit, alice, "*", kmsg.ACLOperationIdempotentWrite, allow),
				bind(txnID, "tx-", pre, alice, "*", kmsg.ACLOperationWrite, allow),
			},
			checks: []ask{
				{alice, h1, kmsg.ACLOperationIdempotentWrite, cluster, ClusterName, true},
				{alice, h1, kmsg.ACLOperationAlter, cluster, ClusterName, false},
				{alice, h1, kmsg.ACLOperationWrite, txnID, "tx-1", true},
				{alice, h1, kmsg.ACLOperationDescribe, txnID, "tx-1", true},
				{alice, h1, kmsg.ACLOperationWrite, txnID, "other", false},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.cfg)
			a.Set(tc.acls)
			for _, c := range tc.checks {
				got := a.Authorize(Action{Principal: c.principal, Host: c.host, Operation: c.op, ResourceType: c.rt, ResourceName: c.name})
				if got != c.want {
					t.Errorf("%s from %s %s %s %q: got %v, want %v", c.principal, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

func TestNilAuthorizerAllows(t *testing.T) {
	var a *Authorizer
	if !a.Authorize(Action{Principal: "User:x", Operation: kmsg.ACLOperationWrite, ResourceType: topic, ResourceName: "t"}) {
		t.Fatal("a nil authorizer (authorization off) must allow")
	}
}

func ptr(s string) *string { return &s }

func TestFilterMatches(t *testing.T) {
	lt := bind(topic, "foo", lit, "User:a", "*", kmsg.ACLOperationRead, allow)
	wild := bind(topic, "*", lit, "User:a", "*", kmsg.ACLOperationRead, allow)
	px := bind(topic, "fo", pre, "User:a", "*", kmsg.ACLOperationRead, allow)
	other := bind(group, "foo", lit, "User:b", "h", kmsg.ACLOperationDescribe, deny)
	all := []Binding{lt, wild, px, other}
	any := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	with := func(f func(*Filter)) Filter { c := any; f(&c); return c }
	tests := []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"any matches all", any, all},
		{"resource type", with(func(f *Filter) { f.ResourceType = group }), []Binding{other}},
		{"ANY pattern with a name matches that exact name", with(func(f *Filter) { f.ResourceName = ptr("foo") }), []Binding{lt, other}},
		{"LITERAL pattern", with(func(f *Filter) { f.PatternType = lit }), []Binding{lt, wild, other}},
		{"PREFIXED pattern with name", with(func(f *Filter) { f.PatternType = pre; f.ResourceName = ptr("fo") }), []Binding{px}},
		{"MATCH finds every binding applying to a name", with(func(f *Filter) {
			f.ResourceType = topic
			f.PatternType = kmsg.ACLResourcePatternTypeMatch
			f.ResourceName = ptr("foo")
		}), []Binding{lt, wild, px}},
		{"MATCH with a name only the wildcard applies to", with(func(f *Filter) {
			f.ResourceType = topic
			f.PatternType = kmsg.ACLResourcePatternTypeMatch
			f.ResourceName = ptr("bar")
		}), []Binding{wild}},
		{"principal exact (no wildcard expansion)", with(func(f *Filter) { f.Principal = ptr("User:b") }), []Binding{other}},
		{"host exact", with(func(f *Filter) { f.Host = ptr("h") }), []Binding{other}},
		{"operation", with(func(f *Filter) { f.Operation = kmsg.ACLOperationDescribe }), []Binding{other}},
		{"permission", with(func(f *Filter) { f.Permission = deny }), []Binding{other}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Binding
			for _, b := range all {
				if tc.f.Matches(b) {
					got = append(got, b)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := bind(topic, "t", lit, "User:a", "*", kmsg.ACLOperationRead, allow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, b := range []Binding{
		bind(kmsg.ACLResourceTypeDelegationToken, "token-id", lit, "User:a", "*", kmsg.ACLOperationDescribe, allow),
		bind(kmsg.ACLResourceTypeUser, "User:b", lit, "User:a", "*", kmsg.ACLOperationCreateTokens, allow),
		bind(topic, "t", lit, "User:a", "10.0.0.0/8", kmsg.ACLOperationRead, allow),
		bind(topic, "t", lit, "User:a", "2001:db8::/32", kmsg.ACLOperationRead, allow),
		bind(topic, "t", lit, "User:a", "10.0.0.1", kmsg.ACLOperationRead, allow),
		bind(topic, "t", lit, "User:a", "client.example", kmsg.ACLOperationRead, allow),
	} {
		if err := b.Validate(); err != nil {
			t.Fatalf("%v: %v", b, err)
		}
	}
	bad := map[string]func(*Binding){
		"any resource type":         func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
		"match pattern":             func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		"any pattern":               func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeAny },
		"empty name":                func(b *Binding) { b.ResourceName = "" },
		"cluster named otherwise":   func(b *Binding) { b.ResourceType = cluster; b.ResourceName = "c" },
		"prefixed wildcard":         func(b *Binding) { b.PatternType = pre; b.ResourceName = "*" },
		"principal without type":    func(b *Binding) { b.Principal = "alice" },
		"empty host":                func(b *Binding) { b.Host = "" },
		"host block too long (v4)":  func(b *Binding) { b.Host = "10.0.0.0/33" },
		"host block too long (v6)":  func(b *Binding) { b.Host = "2001:db8::/129" },
		"host block without bits":   func(b *Binding) { b.Host = "10.0.0.0/" },
		"host block of a name":      func(b *Binding) { b.Host = "example.com/24" },
		"host block with a zone":    func(b *Binding) { b.Host = "fe80::1%eth0/64" },
		"any operation":             func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		"unknown operation":         func(b *Binding) { b.Operation = 42 },
		"any permission":            func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		"unknown permission":        func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeUnknown },
		"unknown resource type (0)": func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeUnknown },
	}
	for name, mut := range bad {
		b := good
		mut(&b)
		if err := b.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	f := Filter{ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny, Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	f.Operation = kmsg.ACLOperationUnknown
	if err := f.Validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("UNKNOWN filter operation: got %v", err)
	}
}

func TestSpecRoundTrip(t *testing.T) {
	b := bind(txnID, "tx-", pre, "User:a", "1.2.3.4", kmsg.ACLOperationDescribeConfigs, deny)
	got, err := FromSpec(ToSpec(b))
	if err != nil || got != b {
		t.Fatalf("round trip: %v %v", got, err)
	}
	got, err = FromSpec(Spec{ResourceType: "TRANSACTIONAL_ID", ResourceName: "x", Principal: "User:a", Operation: "IDEMPOTENT_WRITE"})
	if err != nil {
		t.Fatal(err)
	}
	want := bind(txnID, "x", lit, "User:a", "*", kmsg.ACLOperationIdempotentWrite, allow)
	if got != want {
		t.Fatalf("defaults: got %v, want %v", got, want)
	}
	if _, err := FromSpec(Spec{ResourceType: "Topic", ResourceName: "x", Principal: "User:a", Operation: "Fly"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad operation: %v", err)
	}
}

func TestLocalStorePersists(t *testing.T) {
	dir := t.TempDir()
	a := New(Config{})
	s, err := OpenLocal(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	b1 := bind(topic, "t", lit, "User:a", "*", kmsg.ACLOperationRead, allow)
	b2 := bind(group, "g", pre, "User:a", "*", kmsg.ACLOperationRead, allow)
	for _, err := range s.Create(context.Background(), []Binding{b1, b2, b1}) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Bindings(); len(got) != 2 {
		t.Fatalf("after create: %v", got)
	}
	s.Delete(context.Background(), []Binding{b2})
	a2 := New(Config{})
	if _, err := OpenLocal(dir, a2); err != nil {
		t.Fatal(err)
	}
	if got := a2.Bindings(); len(got) != 1 || got[0] != b1 {
		t.Fatalf("reloaded: %v, want [%v]", got, b1)
	}
	if err := os.WriteFile(filepath.Join(dir, LocalFileName), []byte(`[{"resourceType":"Nope"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenLocal(dir, New(Config{})); err == nil {
		t.Fatal("a bad ACL file must be refused with an error")
	}
}

func TestOperationsBitField(t *testing.T) {
	if got := OperationsBitField([]kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationDescribe}); got != 1<<3|1<<8 {
		t.Fatalf("got %b", got)
	}
}
