package kafkacli

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestTokenPrincipals: principals parse as Kafka's parseKafkaPrincipal
// (split at the first colon) and print as Java prints a List of them.
func TestTokenPrincipals(t *testing.T) {
	ps, err := tokenPrincipals("renewer-principal", []string{"User:bob", " User:CN=x:y "})
	if err != nil || len(ps) != 2 || ps[1].Type != "User" || ps[1].Name != "CN=x:y" {
		t.Fatalf("%+v %v", ps, err)
	}
	if got := principalList(ps); got != "[User:bob, User:CN=x:y]" {
		t.Fatalf("list %q", got)
	}
	if got := principalList(nil); got != "[]" {
		t.Fatalf("empty list %q", got)
	}
	for _, bad := range []string{"bob", ":bob", "User:"} {
		if _, err := tokenPrincipals("owner-principal", []string{bad}); err == nil || !strings.Contains(err.Error(), "--owner-principal") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// TestClientMetricsHelpers: comma lists split as jopt's
// withValuesSeparatedBy, and a generated name is a Kafka Uuid string.
func TestClientMetricsHelpers(t *testing.T) {
	if got := strings.Join(clientMetricsSplit(Repeated{"a,b", "c"}), "|"); got != "a|b|c" {
		t.Fatalf("split %q", got)
	}
	a, b := clientMetricsUUID(), clientMetricsUUID()
	if raw, err := base64.RawURLEncoding.DecodeString(a); err != nil || len(raw) != 16 || a == b {
		t.Fatalf("uuids %q %q: %v", a, b, err)
	}
}
