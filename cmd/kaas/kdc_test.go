package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
)

// testKDC is an MIT Kerberos KDC of its own realm, run as this user in a
// temporary directory on a loopback port.
type testKDC struct {
	realm, dir string
	krb5Conf   string // client configuration (KRB5_CONFIG)
	env        []string
	tools      map[string]string // tool name -> its path
}

// kerberosTool finds an MIT Kerberos tool: the KDC and admin tools live in
// /usr/sbin, which a non-root user's PATH may lack.
func kerberosTool(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	return requireTool(t, name)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// startKDC creates a realm with kdb5_util, starts krb5kdc on a free
// loopback port (UDP and TCP) and stops it at cleanup.
func startKDC(t *testing.T) *testKDC {
	t.Helper()
	k := &testKDC{realm: "KAAS.TEST", dir: t.TempDir(), tools: map[string]string{}}
	for _, tool := range []string{"krb5kdc", "kdb5_util", "kadmin.local", "kinit"} {
		k.tools[tool] = kerberosTool(t, tool)
	}
	port := freeAddr(t)[len("127.0.0.1:"):]
	kdcConf := filepath.Join(k.dir, "kdc.conf")
	k.krb5Conf = filepath.Join(k.dir, "krb5.conf")
	files := map[string]string{
		kdcConf: fmt.Sprintf(`[kdcdefaults]
 kdc_listen = 127.0.0.1:%[2]s
 kdc_tcp_listen = 127.0.0.1:%[2]s
[realms]
 %[1]s = {
  database_name = %[3]s/principal
  key_stash_file = %[3]s/stash
  acl_file = %[3]s/kadm5.acl
  kdc_listen = 127.0.0.1:%[2]s
  kdc_tcp_listen = 127.0.0.1:%[2]s
  max_life = 1h
  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal
 }
[logging]
 kdc = FILE:%[3]s/kdc.log
`, k.realm, port, k.dir),
		// Host names are used as given (no DNS canonicalisation or
		// qualification), so a client of localhost asks for
		// kafka/localhost; TCP always.
		k.krb5Conf: fmt.Sprintf(`[libdefaults]
 default_realm = %[1]s
 dns_lookup_kdc = false
 dns_lookup_realm = false
 dns_canonicalize_hostname = false
 rdns = false
 qualify_shortname = ""
 udp_preference_limit = 1
 default_ccache_name = FILE:%[3]s/ccache
[realms]
 %[1]s = {
  kdc = 127.0.0.1:%[2]s
 }
[domain_realm]
 localhost = %[1]s
`, k.realm, port, k.dir),
		filepath.Join(k.dir, "kadm5.acl"): "",
	}
	for f, s := range files {
		if err := os.WriteFile(f, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k.env = append(os.Environ(), "KRB5_CONFIG="+k.krb5Conf, "KRB5_KDC_PROFILE="+kdcConf, "KRB5CCNAME=FILE:"+filepath.Join(k.dir, "ccache"))
	k.run(t, "", "kdb5_util", "create", "-s", "-r", k.realm, "-P", "kaas-test-master")

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, k.tools["krb5kdc"], "-n", "-r", k.realm)
	cmd.Env = k.env
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
	})
	// Wait until the KDC accepts TCP connections.
	deadline := time.After(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			_ = c.Close()
			return k
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(k.dir, "kdc.log"))
			t.Fatalf("krb5kdc exited: %s\n%s", out.String(), log)
		case <-deadline:
			log, _ := os.ReadFile(filepath.Join(k.dir, "kdc.log"))
			t.Fatalf("krb5kdc does not accept connections after 30 s: %s\n%s", out.String(), log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// run runs a Kerberos tool with the realm's configuration.
func (k *testKDC) run(t *testing.T, stdin, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p, ok := k.tools[name]; ok {
		name = p
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = k.env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// admin runs kadmin.local commands, one a line.
func (k *testKDC) admin(t *testing.T, cmds ...string) {
	t.Helper()
	out := k.run(t, strings.Join(cmds, "\n")+"\n", "kadmin.local", "-r", k.realm)
	// kadmin.local reports a failed command on its output and goes on.
	for _, bad := range []string{"while ", "not found", "Unknown request"} {
		if strings.Contains(out, bad) {
			t.Fatalf("kadmin.local: %s", out)
		}
	}
}

// keytab is a path for a keytab file in the realm's directory.
func (k *testKDC) keytab(name string) string { return filepath.Join(k.dir, name+".keytab") }

// mech is franz-go's GSSAPI client logged in from principal's keytab,
// asking for tickets of service.
func (k *testKDC) mech(t *testing.T, principal, service string) ksasl.Mechanism {
	t.Helper()
	cfg, err := krbconfig.Load(k.krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	kt, err := keytab.Load(k.keytab(principal))
	if err != nil {
		t.Fatal(err)
	}
	cl := krbclient.NewWithKeytab(principal, k.realm, kt, cfg, krbclient.DisablePAFXFAST(true))
	t.Cleanup(cl.Destroy)
	return kerberos.Auth{Client: cl, Service: service}.AsMechanism()
}
