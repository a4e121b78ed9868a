package tlsfiles_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kaas-project/kaas/wire/tlsfiles"
	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

func TestReloadsChangedFiles(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	a := ca.Issue(t, pkix.Name{CommonName: "a"}, time.Time{})
	ca.WriteDir(t, dir, a)
	now := time.Unix(1000, 0)
	d, err := tlsfiles.Open(dir, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	var reloads []error
	d.OnReload = func(err error) { reloads = append(reloads, err) }
	if got := d.Certificate().Leaf.Subject.CommonName; got != "a" {
		t.Fatalf("cert %q, want a", got)
	}
	b := ca.Issue(t, pkix.Name{CommonName: "b"}, time.Time{})
	ca.WriteDir(t, dir, b)
	later := time.Now().Add(time.Minute)
	for _, f := range []string{"tls.crt", "tls.key"} {
		if err := os.Chtimes(filepath.Join(dir, f), later, later); err != nil {
			t.Fatal(err)
		}
	}
	if got := d.Certificate().Leaf.Subject.CommonName; got != "a" {
		t.Fatalf("re-read before CheckEvery passed: %q", got)
	}
	now = now.Add(tlsfiles.CheckEvery)
	if got := d.Certificate().Leaf.Subject.CommonName; got != "b" {
		t.Fatalf("cert %q after the files changed, want b", got)
	}
	// A broken key keeps the last good certificate and is reported once.
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		now = now.Add(tlsfiles.CheckEvery)
		if got := d.Certificate().Leaf.Subject.CommonName; got != "b" {
			t.Fatalf("cert %q after a broken key, want b kept", got)
		}
	}
	if len(reloads) != 2 || reloads[0] != nil || reloads[1] == nil {
		t.Fatalf("reload reports %v, want [nil, error]", reloads)
	}
}

func handshake(t *testing.T, server *tls.Config, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	srv := tls.Server(c1, server)
	errc := make(chan error, 1)
	go func() { errc <- tls.Client(c2, client).Handshake(); _ = c2.Close() }()
	err := srv.Handshake()
	cerr := <-errc
	if err == nil {
		err = cerr
	}
	return srv.ConnectionState(), err
}

func TestClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "ca")
	ca.WriteDir(t, dir, ca.Issue(t, pkix.Name{CommonName: "broker"}, time.Time{}))
	d, err := tlsfiles.Open(dir, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	alice := ca.Issue(t, pkix.Name{CommonName: "alice", Organization: []string{"Example"}}, time.Time{}).TLS(t)
	required := d.ServerConfig(tls.RequireAndVerifyClientCert)

	st, err := handshake(t, required, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{alice}})
	if err != nil {
		t.Fatalf("mTLS handshake: %v", err)
	}
	if got := tlsfiles.Principal(st.PeerCertificates[0]); got != "User:CN=alice,O=Example" {
		t.Fatalf("principal %q", got)
	}
	if _, err := handshake(t, required, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}); err == nil {
		t.Fatal("handshake without a client certificate succeeded on a required listener")
	}
	other := tlstest.NewCA(t, "other")
	mallory := other.Issue(t, pkix.Name{CommonName: "mallory"}, time.Time{}).TLS(t)
	if _, err := handshake(t, required, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{mallory}}); err == nil {
		t.Fatal("certificate from another CA accepted")
	}
	st, err = handshake(t, d.ServerConfig(tls.VerifyClientCertIfGiven), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
	if err != nil || len(st.PeerCertificates) != 0 {
		t.Fatalf("requested client auth without a certificate: %v", err)
	}
	// Peer (heartbeat) client config verifies against ca.crt.
	if _, err := handshake(t, d.ServerConfig(tls.RequireAndVerifyClientCert), d.ClientConfig("localhost")); err != nil {
		t.Fatalf("peer handshake: %v", err)
	}
}
