package main

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	ksasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

// loginCode connects to addr alone as m and returns the Kafka error code
// of a Metadata request (0: logged in).
func loginCode(t *testing.T, addr string, tlsCfg *tls.Config, m ksasl.Mechanism) int16 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg.Clone()), kgo.SASL(m), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	_, err = kmsg.NewPtrMetadataRequest().RequestWith(ctxFor(t, 10*time.Second), cl)
	if err == nil {
		return 0
	}
	if code := kafkaCode(err); code != 0 {
		return code
	}
	return -1
}

// TestScramCredentialAPIsOnKubernetes: in cluster mode, users created with
// kadm's AlterUserScramCredentials become KafkaUser objects (salted, no
// password) and can log in on every broker; DescribeUserScramCredentials
// lists them with the credentials file's users; a KafkaUser applied with
// kubectl logs in too; deletion takes the login away everywhere; invalid
// changes and callers without ALTER/DESCRIBE on the cluster get Kafka's
// error codes.
func TestScramCredentialAPIsOnKubernetes(t *testing.T) {
	ca := tlstest.NewCA(t, "kaas cluster CA")
	tlsDir := t.TempDir()
	ca.WriteDir(t, tlsDir, ca.Issue(t, pkix.Name{CommonName: "kaas"}, time.Time{}))
	users := writeScramUsers(t, "admin", "reader")
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append([]string{
		"--tls-dir", tlsDir, "--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", "--sasl-credentials-file", users,
		"--authorizer", "acl", "--super-users", "User:admin",
	}, clusterFlags...)...)
	c.listener = "SASL_SSL"
	for _, n := range []string{"kaas-0", "kaas-1"} {
		c.start(n)
	}
	tlsCfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	as := func(user, pass string) *kadm.Client {
		return kadm.NewClient(c.client(kgo.DialTLSConfig(tlsCfg.Clone()), kgo.SASL(scramMech(user, pass, true)), kgo.RetryTimeout(10*time.Second)))
	}
	admin := as("admin", "admin-secret")
	ctx := ctxFor(t, 120*time.Second)
	waitUntil(t, 60*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})

	res, err := admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "newbie", Mechanism: kadm.ScramSha512, Iterations: 8192, Password: "newbie-pw"},
		{User: "newbie", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "newbie-pw"},
	})
	if err != nil || res["newbie"].Err != nil {
		t.Fatalf("AlterUserScramCredentials newbie: %v %+v", err, res)
	}
	out := api.kubectl(t, "-n", c.ns, "get", "kafkausers", "-o", "yaml")
	if !strings.Contains(out, "user: newbie") || strings.Contains(out, "newbie-pw") {
		t.Fatalf("KafkaUser of newbie missing, or holding the password:\n%s", out)
	}
	for _, b := range c.brokers {
		waitUntil(t, 30*time.Second, "newbie logs in on "+b.name, func() bool {
			return loginCode(t, b.kafka, tlsCfg, scramMech("newbie", "newbie-pw", true)) == 0 &&
				loginCode(t, b.kafka, tlsCfg, scramMech("newbie", "newbie-pw", false)) == 0
		})
		if code := loginCode(t, b.kafka, tlsCfg, scramMech("newbie", "wrong", true)); code != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("newbie with a wrong password on %s: code %d", b.name, code)
		}
	}

	described, err := admin.DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range described.Sorted() {
		for _, ci := range d.CredInfos {
			got = append(got, fmt.Sprintf("%s/%s/%d", d.User, ci.Mechanism, ci.Iterations))
		}
	}
	want := "admin/SCRAM-SHA-256/4096 admin/SCRAM-SHA-512/4096 newbie/SCRAM-SHA-256/4096 newbie/SCRAM-SHA-512/8192 reader/SCRAM-SHA-256/4096 reader/SCRAM-SHA-512/4096"
	if strings.Join(got, " ") != want {
		t.Fatalf("DescribeUserScramCredentials: %v, want %s", got, want)
	}
	if d, err := admin.DescribeUserSCRAMs(ctx, "nobody"); err != nil || !errors.Is(d["nobody"].Err, kerr.ResourceNotFound) {
		t.Fatalf("describe nobody: %v %+v", err, d)
	}

	// Kafka's refusals (a raw request: kadm refuses weak iterations itself).
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	del.Name, del.Mechanism = "ghost", 1
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "weak", 1, 1000, []byte("salt"), make([]byte, 32)
	alter.Deletions, alter.Upsertions = append(alter.Deletions, del), append(alter.Upsertions, up)
	ar, err := alter.RequestWith(ctx, c.client(kgo.DialTLSConfig(tlsCfg.Clone()), kgo.SASL(scramMech("admin", "admin-secret", true))))
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, r := range ar.Results {
		codes[r.User] = r.ErrorCode
	}
	if codes["ghost"] != kerr.ResourceNotFound.Code || codes["weak"] != kerr.UnacceptableCredential.Code || len(codes) != 2 {
		t.Fatalf("delete of a nonexistent credential, 1000 iterations: %v", codes)
	}
	reader := as("reader", "reader-secret")
	if _, err := reader.DescribeUserSCRAMs(ctx); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("DescribeUserScramCredentials without DESCRIBE on the cluster: %v", err)
	}
	if r, err := reader.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "reader", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "mine"}}); err == nil && !errors.Is(r["reader"].Err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("AlterUserScramCredentials without ALTER on the cluster: %+v", r)
	} else if err != nil && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("AlterUserScramCredentials without ALTER on the cluster: %v", err)
	}

	// A KafkaUser applied with kubectl.
	cred, err := sasl.NewScramCredential(sasl.ScramSHA512, "ops-pw", 4096)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString
	manifest := filepath.Join(t.TempDir(), "ops.yaml")
	y := fmt.Sprintf("apiVersion: kaas.dev/v1alpha1\nkind: KafkaUser\nmetadata:\n  name: ops\nspec:\n  user: ops\n  scramSha512:\n    salt: %s\n    iterations: 4096\n    storedKey: %s\n    serverKey: %s\n",
		b64(cred.Salt), b64(cred.StoredKey), b64(cred.ServerKey))
	if err := os.WriteFile(manifest, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	api.kubectl(t, "-n", c.ns, "apply", "-f", manifest)
	for _, b := range c.brokers {
		waitUntil(t, 30*time.Second, "ops (kubectl) logs in on "+b.name, func() bool {
			return loginCode(t, b.kafka, tlsCfg, scramMech("ops", "ops-pw", true)) == 0
		})
	}

	// Deleting newbie's credentials takes its login away everywhere.
	res, err = admin.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "newbie", Mechanism: kadm.ScramSha256}, {User: "newbie", Mechanism: kadm.ScramSha512}}, nil)
	if err != nil || res["newbie"].Err != nil {
		t.Fatalf("delete newbie: %v %+v", err, res)
	}
	for _, b := range c.brokers {
		waitUntil(t, 30*time.Second, "newbie refused on "+b.name, func() bool {
			return loginCode(t, b.kafka, tlsCfg, scramMech("newbie", "newbie-pw", true)) == kerr.SaslAuthenticationFailed.Code
		})
	}
	if strings.Contains(api.kubectl(t, "-n", c.ns, "get", "kafkausers", "-o", "jsonpath={.items[*].spec.user}"), "newbie") {
		t.Fatal("newbie's KafkaUser not deleted")
	}
}

// TestScramCredentialAPIsLocal: in local mode AlterUserScramCredentials
// rewrites the credentials file; the new user logs in at once. Without a
// credentials file both APIs answer SECURITY_DISABLED.
func TestScramCredentialAPIsLocal(t *testing.T) {
	_, addr := testBroker(t)
	plain := newClient(t, addr)
	if d, err := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest().RequestWith(ctxT(t, 5*time.Second), plain); err != nil || d.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeUserScramCredentials without a store: %v %+v", err, d)
	}
	if r, err := kadm.NewClient(plain).AlterUserSCRAMs(ctxT(t, 5*time.Second), nil, []kadm.UpsertSCRAM{{User: "x", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "p"}}); err != nil || !errors.Is(r["x"].Err, kerr.SecurityDisabled) {
		t.Fatalf("AlterUserScramCredentials without a store: %v %+v", err, r)
	}

	e := newSecureEnv(t)
	adm := kadm.NewClient(secureClient(t, e.plain))
	res, err := adm.AlterUserSCRAMs(ctxT(t, 10*time.Second), nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "carol-pw"}})
	if err != nil || res["carol"].Err != nil {
		t.Fatalf("AlterUserScramCredentials carol: %v %+v", err, res)
	}
	if code := loginCode(t, e.saslSSL, e.tlsClient(nil), scramMech("carol", "carol-pw", true)); code != 0 {
		t.Fatalf("carol login: code %d", code)
	}
	b, err := os.ReadFile(e.credsFile)
	if err != nil || !strings.Contains(string(b), `"carol"`) || strings.Contains(string(b), "carol-pw") || !strings.Contains(string(b), `"alice"`) {
		t.Fatalf("credentials file after the change: %v\n%s", err, b)
	}
}
