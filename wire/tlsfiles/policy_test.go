package tlsfiles_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaas-project/kaas/wire/tlsfiles"
	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

func TestParsePolicy(t *testing.T) {
	const gcm128, gcm256 = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
	for _, tc := range []struct {
		protocols, suites string
		min, max          uint16
		ids               []uint16
		err               string
	}{
		{"TLSv1.2,TLSv1.3", "", tls.VersionTLS12, tls.VersionTLS13, nil, ""},
		{" TLSv1.3 ", "", tls.VersionTLS13, tls.VersionTLS13, nil, ""},
		{"TLSv1.2", gcm256 + ", " + gcm128 + "," + gcm256, tls.VersionTLS12, tls.VersionTLS12,
			[]uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, ""},
		{"TLSv1.1,TLSv1.2", "", 0, 0, nil, `"TLSv1.1" is not served`},
		{"", "", 0, 0, nil, "no protocol given"},
		{"TLSv1.3", gcm128, 0, 0, nil, "TLS 1.3 alone"},
		{"TLSv1.2", "TLS_RSA_WITH_RC4_128_SHA", 0, 0, nil, "not a TLS 1.2 cipher suite"},
		{"TLSv1.2", "TLS_AES_128_GCM_SHA256", 0, 0, nil, "not a TLS 1.2 cipher suite"}, // a TLS 1.3 suite
	} {
		p, err := tlsfiles.ParsePolicy(tc.protocols, tc.suites)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePolicy(%q, %q) = %+v, %v; want an error with %q", tc.protocols, tc.suites, p, err, tc.err)
			}
			continue
		}
		if err != nil || p.MinVersion != tc.min || p.MaxVersion != tc.max || !slices.Equal(p.CipherSuites, tc.ids) {
			t.Errorf("ParsePolicy(%q, %q) = %+v, %v", tc.protocols, tc.suites, p, err)
		}
	}
}

// TestPolicyAppliesToHandshakes: a server and a peer client of a directory
// speak only the policy's versions and TLS 1.2 suites.
func TestPolicyAppliesToHandshakes(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	ca.WriteDir(t, dir, ca.Issue(t, pkix.Name{CommonName: "broker"}, time.Time{}))
	d, err := tlsfiles.Open(dir, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	client := func(max uint16, suites ...uint16) *tls.Config {
		return &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MaxVersion: max, CipherSuites: suites}
	}
	// The default: TLS 1.2 and 1.3.
	if st, err := handshake(t, d.ServerConfig(tls.NoClientCert), client(tls.VersionTLS12)); err != nil || st.Version != tls.VersionTLS12 {
		t.Fatalf("default policy, a TLS 1.2 client: %v (version %x)", err, st.Version)
	}
	if st, err := handshake(t, d.ServerConfig(tls.NoClientCert), client(0)); err != nil || st.Version != tls.VersionTLS13 {
		t.Fatalf("default policy, a TLS 1.3 client: %v (version %x)", err, st.Version)
	}

	d.Policy, err = tlsfiles.ParsePolicy("TLSv1.3", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, d.ServerConfig(tls.NoClientCert), client(tls.VersionTLS12)); err == nil {
		t.Fatal("a TLSv1.3-only server took a TLS 1.2 client")
	}
	if _, err := handshake(t, d.ServerConfig(tls.RequireAndVerifyClientCert), d.ClientConfig("localhost")); err != nil {
		t.Fatalf("TLSv1.3 peers: %v", err)
	}

	d.Policy, err = tlsfiles.ParsePolicy("TLSv1.2", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384")
	if err != nil {
		t.Fatal(err)
	}
	st, err := handshake(t, d.ServerConfig(tls.NoClientCert), client(0))
	if err != nil || st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Fatalf("one TLS 1.2 suite: %v (version %x, suite %x)", err, st.Version, st.CipherSuite)
	}
	if _, err := handshake(t, d.ServerConfig(tls.NoClientCert), client(0, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)); err == nil {
		t.Fatal("a client offering only another suite was served")
	}
	if _, err := handshake(t, d.ServerConfig(tls.NoClientCert), d.ClientConfig("localhost")); err != nil {
		t.Fatalf("peers under the same policy: %v", err)
	}
}
