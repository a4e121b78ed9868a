package main

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is one span an OTLP receiver got.
type otlpSpan struct {
	Service, Name           string
	TraceID, SpanID, Parent string
	Attrs                   map[string]string
}

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: the brokers'
// exporters (OTEL_EXPORTER_OTLP_ENDPOINT=r.endpoint) post to it.
type otlpReceiver struct {
	endpoint string
	mu       sync.Mutex
	spans    []otlpSpan
}

func startOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{endpoint: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/traces", r.export)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *otlpReceiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		service := attrMap(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, otlpSpan{Service: service, Name: s.Name, TraceID: hex.EncodeToString(s.TraceId),
					SpanID: hex.EncodeToString(s.SpanId), Parent: hex.EncodeToString(s.ParentSpanId), Attrs: attrMap(s.Attributes)})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		default:
			m[kv.Key] = fmt.Sprint(v.GetIntValue())
			if _, ok := v.GetValue().(*commonpb.AnyValue_BoolValue); ok {
				m[kv.Key] = fmt.Sprint(v.GetBoolValue())
			}
		}
	}
	return m
}

// snapshot returns the spans received so far, indexed by span id.
func (r *otlpReceiver) snapshot() map[string]otlpSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]otlpSpan, len(r.spans))
	for _, s := range r.spans {
		m[s.SpanID] = s
	}
	return m
}

// otlpPath is the names from s's root down to s, joined by " > ".
func otlpPath(spans map[string]otlpSpan, s otlpSpan) string {
	names := []string{s.Name}
	for p, ok := spans[s.Parent]; ok; p, ok = spans[p.Parent] {
		names = append([]string{p.Name}, names...)
	}
	return strings.Join(names, " > ")
}

// otlpPaths lists every distinct span path (for failure messages).
func otlpPaths(spans map[string]otlpSpan) string {
	seen := map[string]bool{}
	for _, s := range spans {
		seen[otlpPath(spans, s)] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
