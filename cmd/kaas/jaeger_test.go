package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJaegerShowsKcatProduce runs a real Jaeger (the all-in-one that
// `go tool task jaeger` builds), a kaas process configured only by the
// OTEL_* environment to export to it over OTLP/HTTP, and kcat producing
// with acks=all. Jaeger's query API must then return one trace holding the
// connection actor's Produce span, the partition actor's Produce span under
// it and the group commit (fsync) under that, for the topic kcat wrote.
func TestJaegerShowsKcatProduce(t *testing.T) {
	j := startJaeger(t)
	const service = "kaas-jaeger-test"
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", j.otlpEndpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_SERVICE_NAME", service)
	k := startKaas(t, "--data-dir", t.TempDir(), "--default-partitions", "1")

	const topic = "jaeger-traced"
	// kcat's produce creates the topic: it may reach the partition while
	// its log is still opening, and is then held and served in its own
	// trace (TestProduceHeldWhileOpeningStaysInItsTrace).
	kcatProduce(t, k.Addr, topic, []produced{{Key: "k", Value: "v"}}, "-X", "acks=all")

	var found jaegerTrace
	var last string
	for deadline := time.Now().Add(60 * time.Second); found.TraceID == "" && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		traces, err := j.traces(service, "conn Produce")
		if err != nil {
			last = err.Error()
			continue
		}
		last = fmt.Sprintf("%d traces:", len(traces))
		for _, tr := range traces {
			if tr.hasChain(topic, "conn Produce", "partition Produce", "partition group commit") {
				found = tr
				break
			}
			last += " [" + tr.operations() + "]"
		}
	}
	if found.TraceID == "" {
		t.Fatalf("no trace with the produce chain within 60s; last query: %s", last)
	}
	for _, s := range found.Spans {
		if svc := found.Processes[s.ProcessID].ServiceName; svc != service {
			t.Errorf("span %q of service %q in the trace, want %q", s.OperationName, svc, service)
		}
	}
	t.Logf("trace %s: %d spans", found.TraceID, len(found.Spans))
}

// jaeger is a running Jaeger all-in-one with in-memory storage on loopback.
type jaeger struct {
	otlpEndpoint string // OTLP/HTTP receiver, for OTEL_EXPORTER_OTLP_ENDPOINT
	queryURL     string // the query service's HTTP API
}

// startJaeger runs deploy/testenv/bin/jaeger with a configuration whose
// every listener is on a free loopback port, and waits for its query API.
// A missing binary fails the test: `go tool task jaeger` builds it.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "deploy", "testenv", "bin", "jaeger")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is missing: build it first (go tool task jaeger): %v", bin, err)
	}
	port := func() string { return "127.0.0.1:" + strconv.Itoa(freeLoopbackPort(t)) }
	otlp, query, queryGRPC, metrics := port(), port(), port(), port()
	host, mport, _ := strings.Cut(metrics, ":")
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
      readers:
        - pull:
            exporter:
              prometheus:
                host: %q
                port: %s
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %q
    grpc:
      endpoint: %q
receivers:
  otlp:
    protocols:
      http:
        endpoint: %q
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
`, host, mport, query, queryGRPC, otlp)
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("--- jaeger output ---\n%s", truncate(out.String(), 8000))
		}
	})
	j := &jaeger{otlpEndpoint: "http://" + otlp, queryURL: "http://" + query}
	hc := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("jaeger exited before it was ready: %v\n%s", err, truncate(out.String(), 8000))
		default:
		}
		resp, err := hc.Get(j.queryURL + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger's query API did not answer within 60s: %v\n%s", err, truncate(out.String(), 8000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jaegerTrace is one trace as Jaeger's query API (/api/traces) returns it.
type jaegerTrace struct {
	TraceID   string `json:"traceID"`
	Spans     []jaegerSpan
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	}
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	ProcessID     string `json:"processID"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	}
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
}

func (s jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

func (s jaegerSpan) tag(key string) string {
	for _, tg := range s.Tags {
		if tg.Key == key {
			return fmt.Sprint(tg.Value)
		}
	}
	return ""
}

// operations lists the trace's spans as "operation<-parent operation".
func (tr jaegerTrace) operations() string {
	byID := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
	}
	var out []string
	for _, s := range tr.Spans {
		op := s.OperationName
		if p, ok := byID[s.parent()]; ok {
			op += "<-" + p.OperationName
		}
		out = append(out, op)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// hasChain reports whether the trace holds spans named names[0] >
// names[1] > ..., each the parent of the next, where the second names
// topic (the partition actor's span carries the topic).
func (tr jaegerTrace) hasChain(topic string, names ...string) bool {
	byID := map[string]jaegerSpan{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
	}
	for _, leaf := range tr.Spans {
		if leaf.OperationName != names[len(names)-1] {
			continue
		}
		s, ok := leaf, true
		for i := len(names) - 2; i >= 0 && ok; i-- {
			s, ok = byID[s.parent()]
			ok = ok && s.OperationName == names[i]
			if ok && i == 1 && s.tag("messaging.destination.name") != topic {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// traces asks Jaeger's query API for the recent traces of service holding
// an operation.
func (j *jaeger) traces(service, operation string) ([]jaegerTrace, error) {
	q := url.Values{"service": {service}, "operation": {operation}, "limit": {"50"}, "lookback": {"1h"}}
	resp, err := http.Get(j.queryURL + "/api/traces?" + q.Encode())
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /api/traces: %s", resp.Status)
	}
	var body struct {
		Data []jaegerTrace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("decode /api/traces: %w", err)
	}
	return body.Data, nil
}
