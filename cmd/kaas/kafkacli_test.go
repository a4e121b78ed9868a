package main

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kaas-project/kaas/cmd/kaas/internal/kafkacli"
)

// runKaas runs `kaas args...` in process, as an operator runs one of the
// Kafka tools, and returns what it printed and its exit status.
func runKaas(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// mustTool runs a tool that must succeed and returns its output.
func mustTool(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := runKaas(t, args...)
	if code != 0 {
		t.Fatalf("kaas %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// writeProperties writes a --command-config file.
func writeProperties(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestToolsConnectWithCommandConfig: the tools' --command-config logs in
// as Kafka's client properties say, over each kind of listener, and a bad
// login or an untrusted broker is refused.
func TestToolsConnectWithCommandConfig(t *testing.T) {
	e := newSecureEnv(t)
	caFile := filepath.Join(e.dir, "ca.crt")
	// A PEM keystore as Java reads it: the key and the chain in one file.
	leaf := e.ca.Issue(t, pkix.Name{CommonName: "alice"}, time.Time{})
	keystore := filepath.Join(t.TempDir(), "alice.pem")
	if err := os.WriteFile(keystore, append(append([]byte{}, leaf.KeyPEM...), leaf.CertPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	jaas := func(mod, user, pass string) string {
		return fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.%s required username="%s" password="%s";`, mod, user, pass)
	}
	cases := []struct {
		name, addr string
		props      []string
		ok         bool
		why        string // in the refusal
	}{
		{"plaintext", e.plain, nil, true, ""},
		{"SASL_SSL SCRAM-SHA-512, PEM trust store", e.saslSSL, []string{"security.protocol=SASL_SSL", "sasl.mechanism=SCRAM-SHA-512",
			jaas("scram.ScramLoginModule", "alice", "alice-secret"), "ssl.truststore.type=PEM", "ssl.truststore.location=" + caFile}, true, ""},
		{"SASL_SSL PLAIN, librdkafka's names", e.saslSSL, []string{"security.protocol=sasl_ssl", "sasl.mechanism=PLAIN",
			"sasl.username=bob", "sasl.password=bob-secret", "ssl.ca.location=" + caFile}, true, ""},
		{"SASL_PLAINTEXT SCRAM-SHA-256, wrong password", e.saslPlaintext, []string{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256",
			jaas("scram.ScramLoginModule", "alice", "nope")}, false, "SASL_AUTHENTICATION_FAILED"},
		{"SSL with a PEM keystore", e.ssl, []string{"security.protocol=SSL", "ssl.truststore.location=" + caFile,
			"ssl.keystore.type=PEM", "ssl.keystore.location=" + keystore}, true, ""},
		{"SSL without a client certificate", e.ssl, []string{"security.protocol=SSL", "ssl.truststore.location=" + caFile}, false, ""},
		{"SSL trusting the system roots only", e.ssl, []string{"security.protocol=SSL", "ssl.keystore.type=PEM", "ssl.keystore.location=" + keystore}, false, "unknown authority"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := kafkacli.Conn{Bootstrap: c.addr}
			if c.props != nil {
				conn.CommandConfig = writeProperties(t, c.props...)
			}
			_, adm, err := conn.Client()
			if err != nil {
				t.Fatal(err)
			}
			defer adm.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err = adm.ListTopics(ctx)
			if c.ok && err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !c.ok && (err == nil || !strings.Contains(err.Error(), c.why)) {
				t.Fatalf("got %v, want a refusal naming %q", err, c.why)
			}
		})
	}
}

// TestToolsListedByHelp: kaas help lists every tool kaas runs beside the
// Kafka script it stands for.
func TestToolsListedByHelp(t *testing.T) {
	out := mustTool(t, "help")
	for _, name := range kafkacli.Names() {
		tool, _ := kafkacli.Lookup(name)
		if !regexp.MustCompile(`(?m)^  kaas ` + regexp.QuoteMeta(name) + ` +` + regexp.QuoteMeta(tool.Kafka) + `$`).MatchString(out) {
			t.Errorf("kaas %s (%s) is not listed by kaas help:\n%s", name, tool.Kafka, out)
		}
	}
	if len(kafkacli.Names()) < 4 {
		t.Fatalf("tools registered: %v", kafkacli.Names())
	}
}
