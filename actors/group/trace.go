package group

import (
	"reflect"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/kaas-project/kaas/actors/tracing"
)

// TraceName implements tracing.Named: a group call is named after its
// request ("group JoinGroup").
func (c *call) TraceName() string {
	n := reflect.TypeOf(c.gc.Op)
	for n != nil && n.Kind() == reflect.Pointer {
		n = n.Elem()
	}
	if n == nil {
		return "call"
	}
	return strings.TrimSuffix(n.Name(), "Request")
}

// TraceAttributes implements tracing.Attributed.
func (a *groupActor) TraceAttributes() []attribute.KeyValue {
	return []attribute.KeyValue{tracing.AttrGroup.String(a.id)}
}
