package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
)

// kerberosEnv is a KDC and a broker whose SASL_PLAINTEXT listener serves
// GSSAPI only, advertised as localhost (its service principal is
// kafka/localhost) and also reached as 127.0.0.1, whose keytab entry is
// stale.
type kerberosEnv struct {
	kdc        *testKDC
	addr       string // localhost:port
	ipAddr     string // 127.0.0.1:port
	logs       *lockedBuffer
	brokerKeys string
	args       []string // the broker's command line
}

// newKerberosEnv creates the principals alice, bob (password bob-pw),
// admin (a super user) and the services kafka/localhost,
// kafka/127.0.0.1 and other/localhost, and starts the broker with extra
// flags.
func newKerberosEnv(t *testing.T, k *testKDC, extra ...string) *kerberosEnv {
	t.Helper()
	e := &kerberosEnv{kdc: k, brokerKeys: k.keytab(fmt.Sprintf("broker-%d", time.Now().UnixNano()))}
	if _, err := os.Stat(k.keytab("alice")); err != nil {
		k.admin(t,
			"addprinc -pw alice-pw alice", "addprinc -pw bob-pw bob", "addprinc -randkey admin",
			"addprinc -randkey kafka/localhost", "addprinc -randkey kafka/127.0.0.1", "addprinc -randkey other/localhost",
			"ktadd -norandkey -k "+k.keytab("alice")+" alice",
			"ktadd -k "+k.keytab("admin")+" admin",
		)
	}
	// The broker's keytab holds kafka/localhost and an old key of
	// kafka/127.0.0.1 (changed after the export).
	k.admin(t, "ktadd -k "+e.brokerKeys+" kafka/localhost kafka/127.0.0.1", "cpw -randkey kafka/127.0.0.1")
	hostPort := freeAddr(t)
	port := hostPort[len("127.0.0.1:"):]
	e.addr, e.ipAddr = "localhost:"+port, hostPort
	args := append([]string{"--http-addr", "", "--log-level", "info", "--log-format", "json",
		"--listeners", "SASL_PLAINTEXT://" + hostPort, "--advertised-listeners", "SASL_PLAINTEXT://" + e.addr,
		"--sasl-enabled-mechanisms", "GSSAPI", "--sasl-kerberos-keytab", e.brokerKeys,
		"--data-dir", t.TempDir(), "--authorizer", "acl", "--super-users", "User:admin",
		"--group-initial-rebalance-delay", "0", "--sasl-max-failures", "0",
	}, extra...)
	e.args = args
	_, e.logs, _ = startLoggedBroker(t, args)
	return e
}

// mech is franz-go's GSSAPI client logged in from principal's keytab,
// asking for tickets of service.
func (e *kerberosEnv) mech(t *testing.T, principal, service string) ksasl.Mechanism {
	return e.kdc.mech(t, principal, service)
}

// passwordMech is franz-go's GSSAPI client logged in with a password.
func (e *kerberosEnv) passwordMech(t *testing.T, user, pass string) ksasl.Mechanism {
	t.Helper()
	cfg, err := krbconfig.Load(e.kdc.krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	cl := krbclient.NewWithPassword(user, e.kdc.realm, pass, cfg, krbclient.DisablePAFXFAST(true))
	t.Cleanup(cl.Destroy)
	return kerberos.Auth{Client: cl, Service: "kafka"}.AsMechanism()
}

// TestGSSAPIKerberos: against a real MIT KDC, franz-go (keytab and
// password logins), sarama (keytab) and kcat (librdkafka with Cyrus SASL,
// mutual authentication) authenticate with GSSAPI, produce and consume;
// the principal is the short name (ACLs for User:alice let alice in and
// keep bob out); a ticket under a key the broker's keytab does not hold
// and a ticket for another service are refused with
// SASL_AUTHENTICATION_FAILED while the broker keeps serving.
func TestGSSAPIKerberos(t *testing.T) {
	kcat := requireTool(t, "kcat")
	k := startKDC(t)
	e := newKerberosEnv(t, k)

	adm := kadm.NewClient(secureClient(t, e.addr, kgo.SASL(e.mech(t, "admin", "kafka"))))
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, "krb-franz", "krb-sarama", "krb-kcat", "krb-bob"); err != nil {
		t.Fatal(err)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("krb-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:alice").Operations(kadm.OpRead, kadm.OpWrite, kadm.OpDescribe))
	mustCreateACLs(t, adm, kadm.NewACLs().Groups("krb-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Allow("User:alice").Operations(kadm.OpRead, kadm.OpDescribe))

	t.Run("franz-go", func(t *testing.T) {
		alice := secureClient(t, e.addr, kgo.SASL(e.mech(t, "alice", "kafka")))
		if err := roundTrip(t, alice, "krb-franz"); err != nil {
			t.Fatalf("alice: %v", err)
		}
		if !strings.Contains(e.logs.String(), `"principal":"User:alice","mechanism":"GSSAPI"`) {
			t.Fatal("no GSSAPI authentication of User:alice logged")
		}
		// bob logs in with his password; he is User:bob, whom no ACL lets in.
		bob := secureClient(t, e.addr, kgo.SASL(e.passwordMech(t, "bob", "bob-pw")))
		err := bob.ProduceSync(ctxT(t, 15*time.Second), &kgo.Record{Topic: "krb-bob", Value: []byte("x")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("bob produced to krb-bob: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		if !strings.Contains(e.logs.String(), `"principal":"User:bob","mechanism":"GSSAPI"`) {
			t.Fatal("no GSSAPI authentication of User:bob logged")
		}
	})

	t.Run("refused tickets", func(t *testing.T) {
		for name, c := range map[string]struct {
			addr, service, reason string
		}{
			"key the broker's keytab lacks": {e.ipAddr, "kafka", "does not verify"},
			"ticket for another service":    {e.addr, "other", "ticket is for other/localhost"},
		} {
			cl := secureClient(t, c.addr, kgo.SASL(e.mech(t, "alice", c.service)))
			err := cl.Ping(ctxT(t, 15*time.Second))
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("%s: %v, want SASL_AUTHENTICATION_FAILED", name, err)
			}
			if !strings.Contains(e.logs.String(), c.reason) {
				t.Fatalf("%s: the broker's log does not say %q", name, c.reason)
			}
		}
		// The broker still serves.
		if err := secureClient(t, e.addr, kgo.SASL(e.mech(t, "alice", "kafka"))).Ping(ctxT(t, 15*time.Second)); err != nil {
			t.Fatalf("after the refusals: %v", err)
		}
	})

	t.Run("sarama", func(t *testing.T) {
		c := sarama.NewConfig()
		c.Net.SASL.Enable, c.Net.SASL.Handshake = true, true
		c.Net.SASL.Mechanism = sarama.SASLTypeGSSAPI
		c.Net.SASL.GSSAPI = sarama.GSSAPIConfig{AuthType: sarama.KRB5_KEYTAB_AUTH, KeyTabPath: k.keytab("alice"),
			KerberosConfigPath: k.krb5Conf, ServiceName: "kafka", Username: "alice", Realm: k.realm, DisablePAFXFAST: true}
		c.Producer.Return.Successes = true
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Metadata.Retry.Max = 1
		p, err := sarama.NewSyncProducer([]string{e.addr}, c)
		if err != nil {
			t.Fatalf("sarama GSSAPI: %v", err)
		}
		part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: "krb-sarama", Value: sarama.StringEncoder("from sarama")})
		_ = p.Close()
		if err != nil {
			t.Fatalf("sarama produce: %v", err)
		}
		cons, err := sarama.NewConsumer([]string{e.addr}, c)
		if err != nil {
			t.Fatal(err)
		}
		defer cons.Close()
		pc, err := cons.ConsumePartition("krb-sarama", part, off)
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		select {
		case m := <-pc.Messages():
			if string(m.Value) != "from sarama" {
				t.Fatalf("sarama consumed %q", m.Value)
			}
		case err := <-pc.Errors():
			t.Fatalf("sarama consume: %v", err)
		case <-ctxT(t, 20*time.Second).Done():
			t.Fatal("sarama consumed nothing")
		}
	})

	t.Run("kcat", func(t *testing.T) {
		// librdkafka runs kinit with the keytab into KRB5CCNAME.
		t.Setenv("KRB5_CONFIG", k.krb5Conf)
		t.Setenv("KRB5CCNAME", "FILE:"+k.dir+"/kcat-ccache")
		args := func(service string) []string {
			return []string{"-b", e.addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=GSSAPI",
				"-X", "sasl.kerberos.service.name=" + service, "-X", "sasl.kerberos.keytab=" + k.keytab("alice"),
				"-X", "sasl.kerberos.principal=alice"}
		}
		runTool(t, 30*time.Second, "", "one\ntwo\n", kcat, append(args("kafka"), "-P", "-t", "krb-kcat")...)
		r := runTool(t, 30*time.Second, "", "", kcat, append(args("kafka"), "-C", "-t", "krb-kcat", "-o", "beginning", "-c", "2", "-e")...)
		if !strings.Contains(r.Stdout, "one") || !strings.Contains(r.Stdout, "two") {
			t.Fatalf("kcat consumed %q", r.Stdout)
		}
		res, err := runToolErr(30*time.Second, "", "", nil, kcat, append(args("other"), "-L", "-m", "5")...)
		if err == nil || !strings.Contains(strings.ToLower(res.Stderr), "authentication") {
			t.Fatalf("kcat with a ticket for another service: %v\n%s", err, res.Stderr)
		}
	})
}

// TestGSSAPIReauthentication: with --connections-max-reauth franz-go
// re-authenticates with a new GSSAPI exchange on its connection and keeps
// producing past the session's end.
func TestGSSAPIReauthentication(t *testing.T) {
	k := startKDC(t)
	e := newKerberosEnv(t, k, "--connections-max-reauth", "1500ms")
	adm := kadm.NewClient(secureClient(t, e.addr, kgo.SASL(e.mech(t, "admin", "kafka"))))
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("krb-reauth").Allow("User:alice").Operations(kadm.OpAll))
	if _, err := adm.CreateTopics(ctxT(t, 10*time.Second), 1, 1, nil, "krb-reauth"); err != nil {
		t.Fatal(err)
	}
	cl := secureClient(t, e.addr, kgo.SASL(e.mech(t, "alice", "kafka")))
	if err := roundTrip(t, cl, "krb-reauth"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: "krb-reauth", Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after the session lifetime: %v", err)
	}
	if !strings.Contains(e.logs.String(), `"principal":"User:alice","mechanism":"GSSAPI","reauthentication":true`) {
		t.Fatal("franz-go did not re-authenticate with GSSAPI")
	}
}

// TestGSSAPIBetweenBrokers: with --inter-broker-sasl-mechanism GSSAPI the
// Kafka client a broker opens to another (transaction markers) logs in as
// kafka/<its advertised host> with the broker's keytab and the KDCs of
// --inter-broker-krb5-conf, and is User:kafka on the peer; a principal
// of the realm whose key the keytab lacks fails the login at the KDC
// (before any request reaches the peer).
func TestGSSAPIBetweenBrokers(t *testing.T) {
	k := startKDC(t)
	e := newKerberosEnv(t, k, "--inter-broker-sasl-mechanism", "GSSAPI", "--inter-broker-krb5-conf", k.krb5Conf)
	cfg, err := parseServe(e.args, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cl := secureClient(t, e.addr, (&security{}).interBrokerClientOpts(cfg)...)
	if err := cl.Ping(ctxT(t, 15*time.Second)); err != nil {
		t.Fatalf("inter-broker client: %v", err)
	}
	if !strings.Contains(e.logs.String(), `"principal":"User:kafka","mechanism":"GSSAPI"`) {
		t.Fatal("the inter-broker client did not authenticate as User:kafka")
	}
	cfg.InterBrokerKrbName = "other/localhost"
	bad := secureClient(t, e.addr, (&security{}).interBrokerClientOpts(cfg)...)
	if err := bad.Ping(ctxT(t, 15*time.Second)); err == nil || !strings.Contains(err.Error(), "keytab") {
		t.Fatalf("login as a principal without a key in the keytab: %v, want a keytab error", err)
	}
}
