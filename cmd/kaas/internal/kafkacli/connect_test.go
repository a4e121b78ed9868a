package kafkacli

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

func TestParseProperties(t *testing.T) {
	in := `# a comment
! another
security.protocol=SASL_SSL
sasl.mechanism : SCRAM-SHA-512
  sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="alice" \
    password="pa\"ss";
empty=
bare
`
	got, err := parseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"security.protocol": "SASL_SSL",
		"sasl.mechanism":    "SCRAM-SHA-512",
		"sasl.jaas.config":  `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="pa\"ss";`,
		"empty":             "",
		"bare":              "",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestSecurityOptsRefusals(t *testing.T) {
	cases := []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"security.protocol": "SASL_TLS"}, "security.protocol"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT"}, "GSSAPI"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}, "OAUTHBEARER"},
		{map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs a username"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/x.jks", "ssl.truststore.type": "JKS"}, "only PEM"},
		{map[string]string{"security.protocol": "SSL", "ssl.truststore.location": "/does/not/exist.pem"}, "trust store"},
	}
	for _, c := range cases {
		if _, err := SecurityOpts(c.props); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error naming %q", c.props, err, c.want)
		}
	}
	opts, err := SecurityOpts(map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
		"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="x";`})
	if err != nil || len(opts) != 1 {
		t.Fatalf("SCRAM over SASL_PLAINTEXT: %d options, %v", len(opts), err)
	}
}

func TestOneAction(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "list"},
		{[]string{"--list", "--describe"}, ""},
		{nil, ""},
	} {
		fs := NewFlagSet("t", io.Discard)
		fs.Bool("list", false, "")
		fs.Bool("describe", false, "")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		got, err := OneAction(fs, "list", "describe")
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("%v: %q, %v", c.args, got, err)
		}
	}
	var r Repeated
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(&r, "config", "")
	if err := fs.Parse([]string{"--config", "a=1", "--config", "b=2"}); err != nil || len(r) != 2 {
		t.Fatalf("%v %v", r, err)
	}
}

// With host name checks off, the chain is still checked.
func TestVerifyChainOnly(t *testing.T) {
	ca, other := tlstest.NewCA(t, "trusted"), tlstest.NewCA(t, "other")
	tc := &tls.Config{RootCAs: ca.Pool()}
	verify := verifyChainOnly(tc)
	state := func(leaf tlstest.Leaf) tls.ConnectionState {
		c := leaf.TLS(t)
		cert, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}
	}
	if err := verify(state(ca.Issue(t, pkix.Name{CommonName: "elsewhere"}, time.Time{}))); err != nil {
		t.Fatalf("a certificate of the trusted CA: %v", err)
	}
	if err := verify(state(other.Issue(t, pkix.Name{CommonName: "elsewhere"}, time.Time{}))); err == nil {
		t.Fatal("a certificate of another CA was accepted")
	}
	if err := verify(tls.ConnectionState{}); err == nil {
		t.Fatal("no certificate was accepted")
	}
}
