package tracing

import (
	"encoding/binary"

	"go.opentelemetry.io/otel/trace"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/batch"
)

// maxRecordLinks bounds the links one produce span gets from its records.
const maxRecordLinks = 32

// messageLinks are the span links a traced message's span starts with: a
// Produce links the spans its records name in a traceparent header (the
// producing application's trace), without making them its parent: the
// record's trace is the application's, the produce span is the broker's.
func messageLinks(msg any) []trace.Link {
	p, ok := msg.(*messages.Produce)
	if !ok {
		return nil
	}
	var links []trace.Link
	for _, tp := range RecordTraceparents(p.Batch, maxRecordLinks) {
		sc := extract(map[string]string{traceparent: tp})
		if sc.IsValid() {
			links = append(links, trace.Link{SpanContext: sc})
		}
	}
	return links
}

// RecordTraceparents returns the values of the traceparent headers of an
// uncompressed record batch's records (at most max of them). A compressed
// or malformed batch yields none: links are best effort, and the partition
// actor validates the batch itself.
func RecordTraceparents(b []byte, max int) []string {
	h, err := batch.ParseHeader(b)
	if err != nil || h.Attributes&batch.AttrCompressionMask != 0 || h.Size() > len(b) || h.Size() < batch.HeaderSize {
		return nil
	}
	p := b[batch.HeaderSize:h.Size()]
	var out []string
	for i := int32(0); i < h.NumRecords && len(out) < max; i++ {
		length, n := binary.Varint(p)
		if n <= 0 || length < 0 || int64(len(p)-n) < length {
			return out
		}
		rec := p[n : n+int(length)]
		p = p[n+int(length):]
		out = appendTraceparent(out, rec)
	}
	return out
}

// appendTraceparent appends rec's traceparent header value, if it has one.
func appendTraceparent(out []string, rec []byte) []string {
	r := reader{b: rec, ok: true}
	r.skip(1)  // attributes
	r.varint() // timestamp delta
	r.varint() // offset delta
	r.bytes()  // key
	r.bytes()  // value
	n := r.varint()
	for j := int64(0); j < n && r.ok; j++ {
		k := r.bytes()
		v := r.bytes()
		if r.ok && string(k) == traceparent {
			return append(out, string(v))
		}
	}
	return out
}

// reader decodes a record's varint fields; ok turns false at the first
// malformed one and stays false.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) skip(n int) {
	if !r.ok || len(r.b) < n {
		r.ok = false
		return
	}
	r.b = r.b[n:]
}

func (r *reader) varint() int64 {
	if !r.ok {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	l := r.varint()
	if !r.ok || l < 0 {
		return nil // null (-1) or malformed
	}
	if int64(len(r.b)) < l {
		r.ok = false
		return nil
	}
	v := r.b[:l]
	r.b = r.b[l:]
	return v
}
