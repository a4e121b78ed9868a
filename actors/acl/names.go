package acl

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Spec is a binding in the text form KafkaAcl objects and the local ACL
// file use: CamelCase names (Topic, Prefixed, DescribeConfigs, Allow).
// Parsing also accepts Kafka's upper-case names (TRANSACTIONAL_ID).
type Spec struct {
	ResourceType string `json:"resourceType"`
	ResourceName string `json:"resourceName"`
	PatternType  string `json:"patternType,omitempty"`
	Principal    string `json:"principal"`
	Host         string `json:"host,omitempty"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission,omitempty"`
}

var resourceTypeNames = map[kmsg.ACLResourceType]string{
	kmsg.ACLResourceTypeTopic: "Topic", kmsg.ACLResourceTypeGroup: "Group", kmsg.ACLResourceTypeCluster: "Cluster",
	kmsg.ACLResourceTypeTransactionalId: "TransactionalId", kmsg.ACLResourceTypeDelegationToken: "DelegationToken",
	kmsg.ACLResourceTypeUser: "User",
}

var patternTypeNames = map[kmsg.ACLResourcePatternType]string{
	kmsg.ACLResourcePatternTypeLiteral: "Literal", kmsg.ACLResourcePatternTypePrefixed: "Prefixed",
}

var operationNames = map[kmsg.ACLOperation]string{
	kmsg.ACLOperationAll: "All", kmsg.ACLOperationRead: "Read", kmsg.ACLOperationWrite: "Write",
	kmsg.ACLOperationCreate: "Create", kmsg.ACLOperationDelete: "Delete", kmsg.ACLOperationAlter: "Alter",
	kmsg.ACLOperationDescribe: "Describe", kmsg.ACLOperationClusterAction: "ClusterAction",
	kmsg.ACLOperationDescribeConfigs: "DescribeConfigs", kmsg.ACLOperationAlterConfigs: "AlterConfigs",
	kmsg.ACLOperationIdempotentWrite: "IdempotentWrite", kmsg.ACLOperationCreateTokens: "CreateTokens",
	kmsg.ACLOperationDescribeTokens: "DescribeTokens",
}

var permissionNames = map[kmsg.ACLPermissionType]string{
	kmsg.ACLPermissionTypeAllow: "Allow", kmsg.ACLPermissionTypeDeny: "Deny",
}

// ToSpec is b in text form.
func ToSpec(b Binding) Spec {
	return Spec{
		ResourceType: resourceTypeNames[b.ResourceType],
		ResourceName: b.ResourceName,
		PatternType:  patternTypeNames[b.PatternType],
		Principal:    b.Principal,
		Host:         b.Host,
		Operation:    operationNames[b.Operation],
		Permission:   permissionNames[b.Permission],
	}
}

// FromSpec parses and validates a text binding. An empty pattern type is
// Literal, an empty host "*", an empty permission Allow.
func FromSpec(s Spec) (Binding, error) {
	var b Binding
	var err error
	if b.ResourceType, err = kmsg.ParseACLResourceType(s.ResourceType); err != nil {
		return b, fmt.Errorf("%w: resourceType %q", ErrInvalid, s.ResourceType)
	}
	b.PatternType = kmsg.ACLResourcePatternTypeLiteral
	if s.PatternType != "" {
		if b.PatternType, err = kmsg.ParseACLResourcePatternType(s.PatternType); err != nil {
			return b, fmt.Errorf("%w: patternType %q", ErrInvalid, s.PatternType)
		}
	}
	if b.Operation, err = kmsg.ParseACLOperation(s.Operation); err != nil {
		return b, fmt.Errorf("%w: operation %q", ErrInvalid, s.Operation)
	}
	b.Permission = kmsg.ACLPermissionTypeAllow
	if s.Permission != "" {
		if b.Permission, err = kmsg.ParseACLPermissionType(s.Permission); err != nil {
			return b, fmt.Errorf("%w: permission %q", ErrInvalid, s.Permission)
		}
	}
	b.ResourceName, b.Principal, b.Host = s.ResourceName, s.Principal, s.Host
	if b.Host == "" {
		b.Host = WildcardHost
	}
	return b, b.Validate()
}
