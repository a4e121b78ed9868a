package routing

import (
	"slices"
	"strings"
	"testing"
)

func TestParseEndpoints(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Endpoint
		err  string // in the error; "" = parsed
	}{
		{"", nil, ""},
		{"PLAINTEXT://:9092", []Endpoint{{"PLAINTEXT", "", 9092}}, ""},
		{"plaintext://127.0.0.1:0, external://[::1]:31090", []Endpoint{{"PLAINTEXT", "127.0.0.1", 0}, {"EXTERNAL", "::1", 31090}}, ""},
		{"EXTERNAL://kafka-1.example.com:9094,INTERNAL://kaas-1.kaas.ns.svc:9095", []Endpoint{{"EXTERNAL", "kafka-1.example.com", 9094}, {"INTERNAL", "kaas-1.kaas.ns.svc", 9095}}, ""},
		{"localhost:9092", nil, "not NAME://host:port"},
		{"://h:1", nil, "not NAME://host:port"},
		{"A://h", nil, "missing port"},
		{"A://h:70000", nil, "0-65535"},
		{"A://h:x", nil, "0-65535"},
		{"A://h:1,a://g:2", nil, "given twice"},
	} {
		got, err := ParseEndpoints(tc.in)
		switch {
		case tc.err == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%q: %v (%v), want %v", tc.in, got, err, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error with %q", tc.in, err, tc.err)
		}
		if tc.err == "" {
			if back, err := ParseEndpoints(JoinEndpoints(got)); err != nil || !slices.Equal(back, got) {
				t.Errorf("%q: joined and parsed again: %v (%v)", tc.in, back, err)
			}
		}
	}
}

func TestBrokerListenerAddr(t *testing.T) {
	b := Broker{Listeners: "EXTERNAL://10.0.0.7:31090,INTERNAL://kaas-0.kaas.ns.svc:9095"}
	if e, ok := b.ListenerAddr("INTERNAL"); !ok || e != (Endpoint{"INTERNAL", "kaas-0.kaas.ns.svc", 9095}) {
		t.Errorf("INTERNAL: %v %v", e, ok)
	}
	if _, ok := b.ListenerAddr("SSL"); ok {
		t.Error("a listener the broker did not publish was found")
	}
	if _, ok := (Broker{Listeners: "garbage"}).ListenerAddr("EXTERNAL"); ok {
		t.Error("a malformed list gave an address")
	}
}
