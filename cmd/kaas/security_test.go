package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	grpchealth "google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

// secureEnv is a broker with PLAINTEXT, SSL (client certificates
// required) and SASL_SSL listeners, a test CA and a credentials file.
type secureEnv struct {
	ca                                 *tlstest.CA
	dir                                string // the TLS Secret directory
	plain, ssl, saslSSL, saslPlaintext string // listener addresses
	jwksKey                            *ecdsa.PrivateKey
	logs                               *lockedBuffer
	client                             tls.Certificate // signed by ca: CN=alice,O=Example
	credsFile, jwks                    string
	stop                               func()
	broker                             *broker
}

func newSecureEnv(t *testing.T, extra ...string) *secureEnv {
	t.Helper()
	e := &secureEnv{ca: tlstest.NewCA(t, "kaas test CA"), dir: t.TempDir()}
	e.ca.WriteDir(t, e.dir, e.ca.Issue(t, pkix.Name{CommonName: "kaas-0"}, time.Time{}))
	e.client = e.ca.Issue(t, pkix.Name{CommonName: "alice", Organization: []string{"Example"}}, time.Time{}).TLS(t)
	creds := sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{"alice": {}, "bob": {}}}
	for _, user := range []string{"alice", "bob"} {
		for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
			c, err := sasl.NewScramCredential(m, user+"-secret", 4096)
			if err != nil {
				t.Fatal(err)
			}
			creds.Users[user][m] = c
		}
	}
	e.credsFile = filepath.Join(t.TempDir(), "users.json")
	b, _ := json.Marshal(creds)
	if err := os.WriteFile(e.credsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.jwksKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	e.jwks = filepath.Join(t.TempDir(), "jwks.json")
	b, _ = json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &e.jwksKey.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	if err := os.WriteFile(e.jwks, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e.plain, e.ssl, e.saslSSL, e.saslPlaintext = freeAddr(t), freeAddr(t), freeAddr(t), freeAddr(t)
	args := append([]string{
		"--http-addr", "", "--log-level", "info", "--log-format", "json",
		"--listeners", fmt.Sprintf("PLAINTEXT://%s,SSL://%s,SASL_SSL://%s,SASL_PLAINTEXT://%s", e.plain, e.ssl, e.saslSSL, e.saslPlaintext),
		"--advertised-listeners", fmt.Sprintf("PLAINTEXT://%s,SSL://%s,SASL_SSL://%s,SASL_PLAINTEXT://%s", e.plain, e.ssl, e.saslSSL, e.saslPlaintext),
		"--tls-dir", e.dir, "--ssl-client-auth", "required",
		"--sasl-enabled-mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		"--sasl-credentials-file", e.credsFile,
		"--sasl-oauthbearer-jwks-file", e.jwks, "--sasl-oauthbearer-audience", "kaas",
	}, extra...)
	e.broker, e.logs, e.stop = startLoggedBroker(t, args)
	return e
}

// startLoggedBroker starts an in-process broker with args whose log (JSON)
// the test reads; it is stopped at cleanup or by stop.
func startLoggedBroker(t *testing.T, args []string) (b *broker, logs *lockedBuffer, stop func()) {
	t.Helper()
	cfg, err := parseServe(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs = &lockedBuffer{}
	var out io.Writer = logs
	if os.Getenv("KAAS_TEST_LOGS") != "" {
		out = io.MultiWriter(logs, os.Stderr)
	}
	b, err = startBroker(ctx, cfg, out)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stop = func() { cancel(); b.shutdown() }
	t.Cleanup(stop)
	return b, logs, stop
}

// tlsClient is a client TLS config trusting the test CA.
func (e *secureEnv) tlsClient(cert *tls.Certificate) *tls.Config {
	c := &tls.Config{RootCAs: e.ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	if cert != nil {
		c.Certificates = []tls.Certificate{*cert}
	}
	return c
}

// roundTrip produces one record to topic through cl and reads it back.
func roundTrip(t *testing.T, cl *kgo.Client, topic string) error {
	t.Helper()
	ctx := ctxT(t, 15*time.Second)
	value := []byte(fmt.Sprintf("v-%d", time.Now().UnixNano()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	cl.AddConsumeTopics(topic)
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("consume: %w", err)
		}
		for _, r := range fs.Records() {
			if bytes.Equal(r.Value, value) {
				return nil
			}
		}
	}
}

// advertisedPorts asks Metadata through cl and returns the advertised
// broker addresses.
func advertised(t *testing.T, cl *kgo.Client) []string {
	t.Helper()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range resp.Brokers {
		out = append(out, net.JoinHostPort(b.Host, fmt.Sprint(b.Port)))
	}
	return out
}

func secureClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RetryTimeout(5 * time.Second),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.MetadataMinAge(100 * time.Millisecond), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// TestListenersTLSAndClientCertificates: one broker serves PLAINTEXT, SSL
// with required client certificates and SASL_SSL side by side; each
// listener's clients see that listener's advertised address; certificates
// missing or from another CA are refused while others keep being served.
func TestListenersTLSAndClientCertificates(t *testing.T) {
	e := newSecureEnv(t)
	plainCl := secureClient(t, e.plain)
	if got := advertised(t, plainCl); len(got) != 1 || got[0] != e.plain {
		t.Fatalf("PLAINTEXT listener advertises %v, want [%s]", got, e.plain)
	}
	if err := roundTrip(t, plainCl, "sec-plain"); err != nil {
		t.Fatal(err)
	}
	mtls := secureClient(t, e.ssl, kgo.DialTLSConfig(e.tlsClient(&e.client)))
	if got := advertised(t, mtls); len(got) != 1 || got[0] != e.ssl {
		t.Fatalf("SSL listener advertises %v, want [%s]", got, e.ssl)
	}
	if err := roundTrip(t, mtls, "sec-ssl"); err != nil {
		t.Fatalf("mTLS client: %v", err)
	}
	// No client certificate, a certificate from another CA, a client that
	// does not trust the broker's CA: all refused.
	other := tlstest.NewCA(t, "other CA")
	mallory := other.Issue(t, pkix.Name{CommonName: "mallory"}, time.Time{}).TLS(t)
	for name, c := range map[string]*tls.Config{
		"no client certificate":     e.tlsClient(nil),
		"certificate of another CA": e.tlsClient(&mallory),
		"untrusted broker":          {RootCAs: other.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{e.client}},
	} {
		cl := secureClient(t, e.ssl, kgo.DialTLSConfig(c), kgo.RetryTimeout(time.Second), kgo.RequestRetries(1))
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), cl); err == nil {
			t.Fatalf("%s: Metadata answered", name)
		}
	}
	// Plaintext to the TLS port is not a Kafka conversation.
	c := rawConn(t, e.ssl)
	_, _ = c.Write(frame(18, 0, 1, nil))
	assertClosed(t, c, "plaintext request on the SSL listener")
	if err := roundTrip(t, plainCl, "sec-plain"); err != nil {
		t.Fatalf("PLAINTEXT client after refused TLS clients: %v", err)
	}
}

// TestTLSCertificateReload: a renewed certificate written into the
// directory is served to new connections without a restart.
func TestTLSCertificateReload(t *testing.T) {
	e := newSecureEnv(t)
	serverCN := func() string {
		conn, err := tls.Dial("tcp", e.ssl, e.tlsClient(&e.client))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if cn := serverCN(); cn != "kaas-0" {
		t.Fatalf("served %q", cn)
	}
	e.ca.WriteDir(t, e.dir, e.ca.Issue(t, pkix.Name{CommonName: "kaas-0-renewed"}, time.Time{}))
	later := time.Now().Add(time.Minute)
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
		_ = os.Chtimes(filepath.Join(e.dir, f), later, later)
	}
	deadline := time.Now().Add(5 * time.Second)
	for serverCN() != "kaas-0-renewed" {
		if time.Now().After(deadline) {
			t.Fatal("renewed certificate not served after 5s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(e.logs.String(), "TLS certificate reloaded") {
		t.Fatal("reload not logged")
	}
}

func scramMech(user, pass string, sha512 bool) ksasl.Mechanism {
	a := scram.Auth{User: user, Pass: pass}
	if sha512 {
		return a.AsSha512Mechanism()
	}
	return a.AsSha256Mechanism()
}

func (e *secureEnv) token(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	return signedToken(t, e.jwksKey, "k1", sub, exp)
}

// signedToken is a JWT for sub (audience kaas) expiring at exp, signed by
// key and naming kid.
func signedToken(t *testing.T, key *ecdsa.PrivateKey, kid, sub string, exp time.Time) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(jwt.Claims{Subject: sub, Audience: jwt.Audience{"kaas"}, Expiry: jwt.NewNumericDate(exp), IssuedAt: jwt.NewNumericDate(time.Now())}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestSASLMechanisms: franz-go authenticates with SCRAM-SHA-256/512, PLAIN
// and OAUTHBEARER over TLS; wrong passwords, unknown users, expired or
// foreign tokens and PLAIN without TLS are refused with
// SASL_AUTHENTICATION_FAILED (or UNSUPPORTED_SASL_MECHANISM) while the
// good clients keep working.
func TestSASLMechanisms(t *testing.T) {
	e := newSecureEnv(t)
	tlsOpt := kgo.DialTLSConfig(e.tlsClient(nil))
	good := map[string]ksasl.Mechanism{
		"SCRAM-SHA-256": scramMech("alice", "alice-secret", false),
		"SCRAM-SHA-512": scramMech("bob", "bob-secret", true),
		"PLAIN":         plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(),
		"OAUTHBEARER":   oauth.Auth{Token: e.token(t, "svc", time.Now().Add(time.Hour))}.AsMechanism(),
	}
	for name, m := range good {
		cl := secureClient(t, e.saslSSL, tlsOpt, kgo.SASL(m))
		if got := advertised(t, cl); len(got) != 1 || got[0] != e.saslSSL {
			t.Fatalf("%s: SASL_SSL listener advertises %v", name, got)
		}
		if err := roundTrip(t, cl, "sec-sasl"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, p := range []string{`"principal":"User:alice"`, `"principal":"User:bob"`, `"principal":"User:svc"`} {
		if !strings.Contains(e.logs.String(), p) {
			t.Fatalf("no authentication of %s logged", p)
		}
	}
	bad := map[string]struct {
		addr string
		m    ksasl.Mechanism
		code int16
	}{
		"wrong SCRAM password":   {e.saslSSL, scramMech("alice", "guess", false), kerr.SaslAuthenticationFailed.Code},
		"unknown SCRAM user":     {e.saslSSL, scramMech("carol", "x", true), kerr.SaslAuthenticationFailed.Code},
		"wrong PLAIN password":   {e.saslSSL, plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), kerr.SaslAuthenticationFailed.Code},
		"expired token":          {e.saslSSL, oauth.Auth{Token: e.token(t, "svc", time.Now().Add(-time.Minute))}.AsMechanism(), kerr.SaslAuthenticationFailed.Code},
		"PLAIN without TLS":      {e.saslPlaintext, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism(), kerr.UnsupportedSaslMechanism.Code},
		"token of a foreign key": {e.saslSSL, oauth.Auth{Token: foreignToken(t)}.AsMechanism(), kerr.SaslAuthenticationFailed.Code},
	}
	for name, c := range bad {
		opts := []kgo.Opt{kgo.SASL(c.m), kgo.RetryTimeout(time.Second), kgo.RequestRetries(0)}
		if c.addr == e.saslSSL {
			opts = append(opts, tlsOpt)
		}
		cl := secureClient(t, c.addr, opts...)
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), cl)
		var ke *kerr.Error
		if !errors.As(err, &ke) || ke.Code != c.code {
			t.Fatalf("%s: %v, want %s", name, err, kerr.ErrorForCode(c.code))
		}
	}
	if strings.Contains(e.logs.String(), "guess") || strings.Contains(e.logs.String(), "nope") {
		t.Fatal("a tried password is in the log")
	}
	// SCRAM works without TLS on the SASL_PLAINTEXT listener.
	if err := roundTrip(t, secureClient(t, e.saslPlaintext, kgo.SASL(scramMech("alice", "alice-secret", true))), "sec-sasl"); err != nil {
		t.Fatal(err)
	}
}

func foreignToken(t *testing.T) string {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: k}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	tok, err := jwt.Signed(s).Claims(jwt.Claims{Subject: "svc", Audience: jwt.Audience{"kaas"}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour)), IssuedAt: jwt.NewNumericDate(time.Now())}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// rawSASL speaks SaslHandshake v1 and SaslAuthenticate v1 (PLAIN) on c.
func rawSASL(t *testing.T, c net.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "PLAIN"
	if r := rawExchange(t, c, hs, 1, 1).(*kmsg.SASLHandshakeResponse); r.ErrorCode != 0 {
		t.Fatalf("SaslHandshake: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	return rawExchange(t, c, au, 1, 2).(*kmsg.SASLAuthenticateResponse)
}

func rawExchange(t testing.TB, c net.Conn, req kmsg.Request, version int16, corr int32) kmsg.Response {
	t.Helper()
	req.SetVersion(version)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw-test"))
	if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
		t.Fatal(err)
	}
	b, err := readFrame(t, c)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	body := b[4:]
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		body = body[1:] // empty header tag section
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	return resp
}

func tlsRaw(t *testing.T, e *secureEnv, addr string) net.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, e.tlsClient(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

// TestSASLGateAndReauthentication: requests before authentication close
// the connection; a session ends after --connections-max-reauth unless the
// client re-authenticates (franz-go does, KIP-368); a flood of failed
// logins from one address is refused unchecked while other addresses log
// in.
func TestSASLGateAndReauthentication(t *testing.T) {
	e := newSecureEnv(t, "--connections-max-reauth", "1500ms", "--sasl-max-failures", "5")
	// Clients that re-authenticate on a schedule of their own read the
	// session bound as Kafka's broker config.
	adm := newAdmin(t, e.plain)
	if v := brokerConfigValue(t, adm, "connections.max.reauth.ms"); v != "1500" {
		t.Fatalf("connections.max.reauth.ms described as %q, want 1500", v)
	}
	if v := brokerConfigValue(t, adm, "sasl.enabled.mechanisms"); v != "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER" {
		t.Fatalf("sasl.enabled.mechanisms described as %q", v)
	}
	// ApiVersions is served before authentication; Metadata closes.
	c := tlsRaw(t, e, e.saslSSL)
	if r := rawExchange(t, c, kmsg.NewPtrApiVersionsRequest(), 3, 1).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 || len(r.ApiKeys) == 0 {
		t.Fatalf("ApiVersions before SASL: %v", r.ErrorCode)
	}
	_, _ = c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 2))
	assertClosed(t, c, "Metadata before SASL")
	c = rawConn(t, e.saslPlaintext)
	_, _ = c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 2))
	assertClosed(t, c, "Metadata before SASL on SASL_PLAINTEXT")

	// A raw client that does not re-authenticate is cut off.
	c = tlsRaw(t, e, e.saslSSL)
	r := rawSASL(t, c, "alice", "alice-secret")
	if r.ErrorCode != 0 || r.SessionLifetimeMillis <= 0 || r.SessionLifetimeMillis > 1500 {
		t.Fatalf("SaslAuthenticate: error %d, session lifetime %d ms", r.ErrorCode, r.SessionLifetimeMillis)
	}
	if m := rawExchange(t, c, kmsg.NewPtrMetadataRequest(), 4, 3).(*kmsg.MetadataResponse); len(m.Brokers) != 1 {
		t.Fatalf("Metadata after SASL: %d brokers", len(m.Brokers))
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	time.Sleep(1600 * time.Millisecond)
	_, _ = c.Write(kmsg.NewRequestFormatter().AppendRequest(nil, kmsg.NewPtrMetadataRequest(), 4))
	assertClosed(t, c, "request after the session expired")

	// franz-go re-authenticates on its connection and keeps working.
	cl := secureClient(t, e.saslSSL, kgo.DialTLSConfig(e.tlsClient(nil)), kgo.SASL(scramMech("alice", "alice-secret", false)))
	if err := roundTrip(t, cl, "sec-reauth"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: "sec-reauth", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the session lifetime: %v", err)
	}
	if !strings.Contains(e.logs.String(), `"reauthentication":true`) {
		t.Fatal("franz-go did not re-authenticate")
	}

	// A flood of failed logins from 127.0.0.2: after 5 failures further
	// attempts are refused unchecked; 127.0.0.1 still logs in.
	floodDialer := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	for i := 0; i < 20; i++ {
		conn, err := tls.DialWithDialer(floodDialer, "tcp", e.saslSSL, e.tlsClient(nil))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		r := rawSASL(t, conn, "alice", fmt.Sprintf("guess-%d", i))
		_ = conn.Close()
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("attempt %d: error %d", i, r.ErrorCode)
		}
		if limited := r.ErrorMessage != nil && strings.Contains(*r.ErrorMessage, "too many"); limited != (i >= 5) {
			t.Fatalf("attempt %d: message %v", i, r.ErrorMessage)
		}
	}
	// The right password from the flooding address is refused too while
	// the window lasts; another address logs in.
	conn, err := tls.DialWithDialer(floodDialer, "tcp", e.saslSSL, e.tlsClient(nil))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if r := rawSASL(t, conn, "alice", "alice-secret"); r.ErrorCode != kerr.SaslAuthenticationFailed.Code {
		t.Fatalf("flooding address logged in during the window")
	}
	_ = conn.Close()
	if r := rawSASL(t, tlsRaw(t, e, e.saslSSL), "alice", "alice-secret"); r.ErrorCode != 0 {
		t.Fatalf("other address refused: %d", r.ErrorCode)
	}
}

// TestKcatSASLAndMTLS: librdkafka (kcat) produces and consumes over
// SASL_SSL with SCRAM-SHA-512 and over SSL with a client certificate, and
// is refused with a wrong password.
func TestKcatSASLAndMTLS(t *testing.T) {
	kcat := requireTool(t, "kcat")
	e := newSecureEnv(t)
	dir := t.TempDir()
	leaf := e.ca.Issue(t, pkix.Name{CommonName: "kcat-client"}, time.Time{})
	caFile, certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
	for f, b := range map[string][]byte{caFile: e.ca.CertPEM, certFile: leaf.CertPEM, keyFile: leaf.KeyPEM} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	saslArgs := func(pass string) []string {
		return []string{"-b", e.saslSSL, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=alice", "-X", "sasl.password=" + pass, "-X", "ssl.ca.location=" + caFile}
	}
	mtlsArgs := []string{"-b", e.ssl, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + caFile,
		"-X", "ssl.certificate.location=" + certFile, "-X", "ssl.key.location=" + keyFile}
	for name, args := range map[string][]string{"SASL_SSL SCRAM-SHA-512": saslArgs("alice-secret"), "SSL client certificate": mtlsArgs} {
		topic := "kcat-" + strings.ReplaceAll(strings.Fields(name)[0], "_", "-")
		runTool(t, 30*time.Second, "", "one\ntwo\n", kcat, append(args, "-P", "-t", topic)...)
		r := runTool(t, 30*time.Second, "", "", kcat, append(args, "-C", "-t", topic, "-o", "beginning", "-c", "2", "-e")...)
		if !strings.Contains(r.Stdout, "one") || !strings.Contains(r.Stdout, "two") {
			t.Fatalf("%s: kcat consumed %q", name, r.Stdout)
		}
	}
	r, err := runToolErr(30*time.Second, "", "", nil, kcat, append(saslArgs("wrong"), "-L", "-m", "5")...)
	if err == nil || !strings.Contains(strings.ToLower(r.Stderr), "authentication") {
		t.Fatalf("kcat with a wrong password: %v\n%s", err, r.Stderr)
	}
}

// TestHeartbeatMutualTLS: with --heartbeat-tls the heartbeat gRPC server
// the broker builds accepts only peers presenting a certificate of the
// same CA, and the heartbeat client's credentials get through it.
func TestHeartbeatMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "kaas test CA")
	dir := t.TempDir()
	ca.WriteDir(t, dir, ca.Issue(t, pkix.Name{CommonName: "kaas-0"}, time.Time{}))
	cfg, err := parseServe([]string{"--kafka-addr", freeAddr(t), "--heartbeat-tls", "--tls-dir", dir}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := openSecurity(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(sec.heartbeatServerOptions(cfg)...)
	healthpb.RegisterHealthServer(srv, grpchealth.NewServer())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	check := func(opts ...grpc.DialOption) error {
		cc, err := grpc.NewClient(ln.Addr().String(), opts...)
		if err != nil {
			return err
		}
		defer cc.Close()
		_, err = healthpb.NewHealthClient(cc).Check(ctxT(t, 5*time.Second), &healthpb.HealthCheckRequest{})
		return err
	}
	if err := check(sec.heartbeatDialOptions(cfg)...); err != nil {
		t.Fatalf("peer with the cluster's certificate: %v", err)
	}
	if err := check(grpc.WithTransportCredentials(insecure.NewCredentials())); err == nil {
		t.Fatal("plaintext peer accepted")
	}
	other := tlstest.NewCA(t, "other CA")
	mallory := other.Issue(t, pkix.Name{CommonName: "mallory"}, time.Time{}).TLS(t)
	if err := check(grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{mallory}}))); err == nil {
		t.Fatal("peer with another CA's certificate accepted")
	}
	if err := check(grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}))); err == nil {
		t.Fatal("peer without a certificate accepted")
	}
}

// TestPprofOnlyWithFlag: /debug/pprof/ is not served unless --debug-pprof.
func TestPprofOnlyWithFlag(t *testing.T) {
	for _, on := range []bool{false, true} {
		httpAddr := freeAddr(t)
		args := []string{"--http-addr", httpAddr}
		if on {
			args = append(args, "--debug-pprof")
		}
		_, _, stop := startTestBroker(t, args...)
		resp, err := http.Get("http://" + httpAddr + "/debug/pprof/")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if want := map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[on]; resp.StatusCode != want {
			t.Fatalf("--debug-pprof=%v: /debug/pprof/ answered %d, want %d", on, resp.StatusCode, want)
		}
		health, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil || health.StatusCode != http.StatusOK {
			t.Fatalf("/healthz: %v", err)
		}
		_ = health.Body.Close()
		stop()
	}
}

// TestKafkajsAndSaramaSASL: kafkajs (SCRAM-SHA-256 and PLAIN over TLS)
// and sarama (SCRAM-SHA-512 over TLS) produce; a wrong password fails
// their connect with an authentication error.
func TestKafkajsAndSaramaSASL(t *testing.T) {
	dir := kafkajsDir(t)
	e := newSecureEnv(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, e.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{"scram-sha-256", "plain"} {
		res := runNode(t, dir, 40*time.Second, "sasl-produce.js", e.saslSSL, "kafkajs-sasl", "5", caFile, mech, "alice", "alice-secret")
		if !strings.Contains(res.Stdout, `"produced":5`) {
			t.Fatalf("kafkajs %s: %q", mech, res.Stdout)
		}
	}
	res, err := runToolErr(40*time.Second, dir, "", nil, "node", "sasl-produce.js", e.saslSSL, "kafkajs-sasl", "1", caFile, "scram-sha-256", "alice", "wrong")
	if err == nil || !strings.Contains(res.Stderr, "SASL") {
		t.Fatalf("kafkajs with a wrong password: %v\n%s", err, res.Stderr)
	}

	saramaCfg := func(pass string) *sarama.Config {
		c := sarama.NewConfig()
		c.Net.TLS.Enable, c.Net.TLS.Config = true, e.tlsClient(nil)
		c.Net.SASL.Enable, c.Net.SASL.Handshake = true, true
		c.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		c.Net.SASL.User, c.Net.SASL.Password = "alice", pass
		c.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
		c.Producer.Return.Successes = true
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Metadata.Retry.Max = 1
		return c
	}
	p, err := sarama.NewSyncProducer([]string{e.saslSSL}, saramaCfg("alice-secret"))
	if err != nil {
		t.Fatalf("sarama SCRAM-SHA-512: %v", err)
	}
	if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sarama-sasl", Value: sarama.StringEncoder("hello")}); err != nil {
		t.Fatalf("sarama produce: %v", err)
	}
	_ = p.Close()
	if _, err := sarama.NewSyncProducer([]string{e.saslSSL}, saramaCfg("wrong")); err == nil {
		t.Fatal("sarama with a wrong password connected")
	}
}

// saramaSCRAM is sarama's SCRAM client (sarama leaves it to the
// application) over franz-go's SCRAM-SHA-512 client.
type saramaSCRAM struct {
	sess    ksasl.Session
	first   []byte
	started bool
	done    bool
}

func (s *saramaSCRAM) Begin(user, pass, _ string) error {
	sess, first, err := scram.Auth{User: user, Pass: pass}.AsSha512Mechanism().Authenticate(context.Background(), "")
	s.sess, s.first = sess, first
	return err
}

func (s *saramaSCRAM) Step(challenge string) (string, error) {
	if !s.started {
		s.started = true
		return string(s.first), nil
	}
	done, out, err := s.sess.Challenge([]byte(challenge))
	s.done = done
	return string(out), err
}

func (s *saramaSCRAM) Done() bool { return s.done }

// TestSessionReachesHandlers: every request carries the connection's
// session: the client certificate's subject on SSL, the SASL user on
// SASL_SSL, ANONYMOUS on PLAINTEXT, with the listener and its protocol.
// A probe handler (on DescribeAcls' key, in this test's broker only)
// echoes what it is given.
func TestSessionReachesHandlers(t *testing.T) {
	e := newSecureEnv(t)
	e.broker.srv.Register(conn.API{Key: kmsg.DescribeACLs.Int16(), MinVersion: 0, MaxVersion: 3, Handle: func(r *conn.Request) conn.Pending {
		resp := r.Body.ResponseKind().(*kmsg.DescribeACLsResponse)
		s := r.Session
		msg := strings.Join([]string{s.Principal, s.Listener, s.SecurityProtocol, s.ClientHost}, "|")
		resp.ErrorMessage = &msg
		return conn.Ready(resp)
	}})
	probe := func(cl *kgo.Client) string {
		t.Helper()
		resp, err := kmsg.NewPtrDescribeACLsRequest().RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil || resp.ErrorMessage == nil {
			t.Fatalf("probe: %v", err)
		}
		return *resp.ErrorMessage
	}
	for name, c := range map[string]struct {
		cl   *kgo.Client
		want string
	}{
		"PLAINTEXT": {secureClient(t, e.plain), "User:ANONYMOUS|PLAINTEXT|PLAINTEXT|127.0.0.1"},
		"SSL":       {secureClient(t, e.ssl, kgo.DialTLSConfig(e.tlsClient(&e.client))), "User:CN=alice,O=Example|SSL|SSL|127.0.0.1"},
		"SASL_SSL": {secureClient(t, e.saslSSL, kgo.DialTLSConfig(e.tlsClient(nil)), kgo.SASL(scramMech("bob", "bob-secret", true))),
			"User:bob|SASL_SSL|SASL_SSL|127.0.0.1"},
	} {
		if got := probe(c.cl); got != c.want {
			t.Errorf("%s: session %q, want %q", name, got, c.want)
		}
	}
}

// TestClusterHeartbeatMutualTLS: two cluster-mode brokers with
// --heartbeat-tls exchange heartbeats over mutual TLS (the follower's
// partitions are served, which needs unfenced heartbeats), and the
// controller's heartbeat port refuses a plaintext peer.
func TestClusterHeartbeatMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "kaas cluster CA")
	dir := t.TempDir()
	ca.WriteDir(t, dir, ca.Issue(t, pkix.Name{CommonName: "kaas"}, time.Time{}))
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append([]string{"--heartbeat-tls", "--tls-dir", dir}, clusterFlags...)...)
	for _, n := range []string{"kaas-0", "kaas-1"} {
		c.start(n)
	}
	waitUntil(t, 30*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	adm := kadm.NewClient(c.client())
	if resp, err := adm.CreateTopic(ctxFor(t, 30*time.Second), 4, 1, nil, "hb-tls"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}
	waitUntil(t, 30*time.Second, "4 partitions led, 2 per broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 2 && led["kaas-1"] == 2
	})
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceEverywhere(t, prod, "hb-tls", 4, "over-mtls")
	_, ctrl, _ := c.ledBy()
	cc, err := grpc.NewClient(c.brokers[ctrl].heartbeat, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	s, err := heartbeatpb.NewHeartbeatClient(cc).Stream(ctxT(t, 5*time.Second))
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("plaintext heartbeat stream: %v, want Unavailable (handshake refused)", err)
	}
}

// TestListenerCertificatesAndTLSPolicy: an EXTERNAL listener serves its own
// certificate (another CA's, as a public one would be) and its own client
// authentication (none) while the SSL listener keeps --tls-dir's and
// requires client certificates; every listener speaks only the TLS version
// and cipher suite the policy allows; DescribeConfigs reports the policy.
func TestListenerCertificatesAndTLSPolicy(t *testing.T) {
	cluster, public := tlstest.NewCA(t, "cluster CA"), tlstest.NewCA(t, "public CA")
	clusterDir, publicDir := t.TempDir(), t.TempDir()
	cluster.WriteDir(t, clusterDir, cluster.Issue(t, pkix.Name{CommonName: "kaas-0"}, time.Time{}))
	public.WriteDir(t, publicDir, public.Issue(t, pkix.Name{CommonName: "kafka.example.com"}, time.Time{}))
	alice := cluster.Issue(t, pkix.Name{CommonName: "alice"}, time.Time{}).TLS(t)
	const suite = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
	ssl, external := freeAddr(t), freeAddr(t)
	startLoggedBroker(t, []string{"--http-addr", "", "--log-format", "json",
		"--listeners", fmt.Sprintf("SSL://%s,EXTERNAL://%s", ssl, external),
		"--advertised-listeners", fmt.Sprintf("SSL://%s,EXTERNAL://%s", ssl, external),
		"--listener-security-protocol-map", "EXTERNAL:SSL",
		"--tls-dir", clusterDir, "--ssl-client-auth", "required",
		"--listener-tls-dir", "EXTERNAL=" + publicDir, "--listener-ssl-client-auth", "EXTERNAL=none",
		"--ssl-enabled-protocols", "TLSv1.2", "--ssl-cipher-suites", suite,
	})
	trusting := func(ca *tlstest.CA, cert *tls.Certificate) *tls.Config {
		c := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
		if cert != nil {
			c.Certificates = []tls.Certificate{*cert}
		}
		return c
	}
	for _, l := range []struct {
		name, addr string
		ca         *tlstest.CA
		cert       *tls.Certificate
		served     string
	}{{"SSL", ssl, cluster, &alice, "kaas-0"}, {"EXTERNAL", external, public, nil, "kafka.example.com"}} {
		c, err := tls.Dial("tcp", l.addr, trusting(l.ca, l.cert))
		if err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
		st := c.ConnectionState()
		_ = c.Close()
		if cn := st.PeerCertificates[0].Subject.CommonName; cn != l.served || st.Version != tls.VersionTLS12 || tls.CipherSuiteName(st.CipherSuite) != suite {
			t.Fatalf("%s serves %q over version %x, %s; want %q over TLS 1.2, %s", l.name, cn, st.Version, tls.CipherSuiteName(st.CipherSuite), l.served, suite)
		}
		cl := secureClient(t, l.addr, kgo.DialTLSConfig(trusting(l.ca, l.cert)))
		if got := advertised(t, cl); len(got) != 1 || got[0] != l.addr {
			t.Fatalf("%s advertises %v", l.name, got)
		}
		if err := roundTrip(t, cl, "per-listener-"+strings.ToLower(l.name)); err != nil {
			t.Fatalf("%s: %v", l.name, err)
		}
	}
	refused := map[string]struct {
		addr string
		cfg  *tls.Config
	}{
		"SSL without a client certificate":          {ssl, trusting(cluster, nil)},
		"EXTERNAL to a client trusting the cluster": {external, trusting(cluster, nil)},
		"SSL to a client trusting the public CA":    {ssl, trusting(public, &alice)},
		"TLS 1.3 only":                              {external, &tls.Config{RootCAs: public.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS13}},
		"another cipher suite":                      {external, &tls.Config{RootCAs: public.Pool(), ServerName: "localhost", CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}, MaxVersion: tls.VersionTLS12}},
	}
	for name, r := range refused {
		cl := secureClient(t, r.addr, kgo.DialTLSConfig(r.cfg), kgo.RetryTimeout(time.Second), kgo.RequestRetries(1))
		if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 5*time.Second), cl); err == nil {
			t.Errorf("%s: Metadata answered", name)
		}
	}
	adm := kadm.NewClient(secureClient(t, external, kgo.DialTLSConfig(trusting(public, nil))))
	rc, err := adm.DescribeBrokerConfigs(ctxT(t, 10*time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range rc[0].Configs {
		got[c.Key] = c.MaybeValue()
	}
	if got["ssl.enabled.protocols"] != "TLSv1.2" || got["ssl.cipher.suites"] != suite || got["ssl.client.auth"] != "required" {
		t.Fatalf("DescribeConfigs: ssl.enabled.protocols %q, ssl.cipher.suites %q, ssl.client.auth %q",
			got["ssl.enabled.protocols"], got["ssl.cipher.suites"], got["ssl.client.auth"])
	}
}
