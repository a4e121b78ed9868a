// Package acl is the broker's authorizer: ACL bindings (resource pattern,
// principal, host, operation, permission), the filters DescribeAcls and
// DeleteAcls match them with, and the decision for one request, with Apache
// Kafka's semantics (AclAuthorizer / StandardAuthorizer, KIP-290 prefixed
// patterns): deny wins over allow; READ, WRITE, DELETE and ALTER imply
// DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL matches every
// operation; "*" is the wildcard resource name, "User:*" the wildcard
// principal and "*" the wildcard host, and a host in CIDR notation
// (KIP-1276) matches the clients of that block; super users are always allowed; a
// resource no ACL names is allowed only with allow.everyone.if.no.acl.found.
//
// The package is pure: an Authorizer holds an immutable snapshot of the
// bindings that whoever watches the store (KafkaAcl objects, the local file)
// replaces with Set.
package acl

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's names for the wildcards and the one cluster resource.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
	ClusterName       = "kafka-cluster"
	// Anonymous is the principal of an unauthenticated connection.
	Anonymous = "User:ANONYMOUS"
)

// Binding is one ACL: who (principal, host) may or may not (permission) do
// what (operation) to which resources (type, name, pattern type).
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	PatternType  kmsg.ACLResourcePatternType
	Principal    string
	Host         string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

func (b Binding) String() string {
	return fmt.Sprintf("(%s:%s:%s, %s from %s, %s %s)", b.ResourceType, b.PatternType, b.ResourceName,
		b.Principal, b.Host, b.Permission, b.Operation)
}

// ErrInvalid marks a binding or filter that Kafka would refuse with
// INVALID_REQUEST.
var ErrInvalid = errors.New("invalid ACL")

// Validate checks a binding to be created: every field concrete (no ANY,
// MATCH or UNKNOWN), a "Type:name" principal, a host ("*", an address, a
// CIDR block or another string; never a malformed block), a resource name, the
// cluster resource named kafka-cluster. Delegation-token resources are
// named by token id; user resources (KIP-373's CREATE_TOKENS and
// DESCRIBE_TOKENS) by the user's principal, "User:alice".
func (b Binding) Validate() error {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeCluster, kmsg.ACLResourceTypeTransactionalId,
		kmsg.ACLResourceTypeDelegationToken, kmsg.ACLResourceTypeUser:
	default:
		return fmt.Errorf("%w: resource type %s is not a concrete resource type", ErrInvalid, b.ResourceType)
	}
	if b.PatternType != kmsg.ACLResourcePatternTypeLiteral && b.PatternType != kmsg.ACLResourcePatternTypePrefixed {
		return fmt.Errorf("%w: pattern type %s: want LITERAL or PREFIXED", ErrInvalid, b.PatternType)
	}
	if b.ResourceName == "" {
		return fmt.Errorf("%w: empty resource name", ErrInvalid)
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName {
		return fmt.Errorf("%w: the only valid name for the CLUSTER resource is %s", ErrInvalid, ClusterName)
	}
	if b.PatternType == kmsg.ACLResourcePatternTypePrefixed && b.ResourceName == WildcardResource {
		return fmt.Errorf("%w: a PREFIXED pattern cannot be the wildcard %q (use LITERAL)", ErrInvalid, WildcardResource)
	}
	if err := validPrincipal(b.Principal); err != nil {
		return err
	}
	if err := validHost(b.Host); err != nil {
		return err
	}
	switch b.Operation {
	case kmsg.ACLOperationUnknown, kmsg.ACLOperationAny:
		return fmt.Errorf("%w: operation %s is not a concrete operation", ErrInvalid, b.Operation)
	}
	if b.Operation < kmsg.ACLOperationAll || b.Operation > kmsg.ACLOperationDescribeTokens {
		return fmt.Errorf("%w: unknown operation %d", ErrInvalid, b.Operation)
	}
	if b.Permission != kmsg.ACLPermissionTypeAllow && b.Permission != kmsg.ACLPermissionTypeDeny {
		return fmt.Errorf("%w: permission %s: want ALLOW or DENY", ErrInvalid, b.Permission)
	}
	return nil
}

// validPrincipal checks Kafka's "Type:name" principal form.
func validPrincipal(p string) error {
	typ, name, ok := strings.Cut(p, ":")
	if !ok || typ == "" || name == "" {
		return fmt.Errorf("%w: principal %q: want Type:name (e.g. User:alice)", ErrInvalid, p)
	}
	return nil
}

// Filter selects bindings (DescribeAcls, DeleteAcls). A nil string field
// matches anything; ANY matches any value of an enum field; pattern type
// MATCH selects every binding that would apply to the named resource
// (literal equal, literal wildcard, prefixed prefix).
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	PatternType  kmsg.ACLResourcePatternType
	Principal    *string
	Host         *string
	Operation    kmsg.ACLOperation
	Permission   kmsg.ACLPermissionType
}

// Validate refuses a filter with an UNKNOWN field (Kafka: INVALID_REQUEST).
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Errorf("%w: filter resource type %s", ErrInvalid, f.ResourceType)
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("%w: filter pattern type %s", ErrInvalid, f.PatternType)
	case f.Operation == kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationDescribeTokens:
		return fmt.Errorf("%w: filter operation %s", ErrInvalid, f.Operation)
	case f.Permission == kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return fmt.Errorf("%w: filter permission %s", ErrInvalid, f.Permission)
	}
	return nil
}

// Matches reports whether b is selected by f.
func (f Filter) Matches(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	if !f.patternMatches(b) {
		return false
	}
	if f.Principal != nil && *f.Principal != b.Principal {
		return false
	}
	if f.Host != nil && *f.Host != b.Host {
		return false
	}
	if f.Operation != kmsg.ACLOperationAny && f.Operation != b.Operation {
		return false
	}
	return f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission
}

func (f Filter) patternMatches(b Binding) bool {
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch:
	default:
		if f.PatternType != b.PatternType {
			return false
		}
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType != kmsg.ACLResourcePatternTypeMatch {
		return name == b.ResourceName
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral:
		return name == b.ResourceName || b.ResourceName == WildcardResource
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, b.ResourceName)
	}
	return false
}

// implies reports whether an ACL for granted allows op (ALLOW side): ALL
// grants everything; READ, WRITE, DELETE and ALTER grant DESCRIBE;
// ALTER_CONFIGS grants DESCRIBE_CONFIGS.
func implies(granted, op kmsg.ACLOperation) bool {
	if granted == op || granted == kmsg.ACLOperationAll {
		return true
	}
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}
