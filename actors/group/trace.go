package group

import (
	"go.opentelemetry.io/otel/attribute"

	"github.com/kaas-project/kaas/actors/tracing"
)

// TraceAttributes implements tracing.Attributed.
func (a *groupActor) TraceAttributes() []attribute.KeyValue {
	return []attribute.KeyValue{tracing.AttrGroup.String(a.id)}
}
