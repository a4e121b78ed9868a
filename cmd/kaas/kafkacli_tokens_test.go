package main

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// tokensRefused runs a tool that must fail with exit status 2 and a message
// containing want.
func tokensRefused(t *testing.T, want string, args ...string) {
	t.Helper()
	out, errOut, code := runKaas(t, args...)
	if code != 2 || !strings.Contains(errOut, want) {
		t.Fatalf("kaas %s: exit %d, want 2 with %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errOut)
	}
}

// tokensRow is one row of Kafka's delegation token table.
type tokensRow struct {
	id, hmac, owner, requester, renewers, issue, expiry, max string
}

// tokensTable parses the token rows printed after the TOKENID header.
func tokensTable(t *testing.T, out string) []tokensRow {
	t.Helper()
	_, table, ok := strings.Cut(out, "\nTOKENID")
	if !ok {
		t.Fatalf("no TOKENID header in:\n%s", out)
	}
	header, rest, _ := strings.Cut(table, "\n")
	if h := strings.Fields("TOKENID" + header); strings.Join(h, " ") != "TOKENID HMAC OWNER REQUESTER RENEWERS ISSUEDATE EXPIRYDATE MAXDATE" {
		t.Fatalf("header %q", h)
	}
	var rows []tokensRow
	for _, line := range strings.Split(rest, "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 8 {
			t.Fatalf("token row %q: %d fields", line, len(f))
		}
		rows = append(rows, tokensRow{f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]})
	}
	return rows
}

// tokensOf is what the broker holds, by token id, as kadm describes it.
func tokensOf(t *testing.T, adm *kadm.Client) map[string]kadm.DelegationToken {
	t.Helper()
	toks, err := adm.DescribeDelegationTokens(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]kadm.DelegationToken{}
	for _, tok := range toks {
		m[tok.TokenID] = tok
	}
	return m
}

// TestDelegationTokensTool: kaas delegation-tokens, logged in with SCRAM,
// creates a token (printed as Kafka's table, seen by kadm) that logs in,
// creates one for another owner, describes, renews and expires them, and
// refuses bad flags and requests the broker refuses without changing any
// token.
func TestDelegationTokensTool(t *testing.T) {
	e := newSecureEnv(t, "--delegation-token-secret-key", "tool-secret")
	cfg := writeProperties(t, "security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-512",
		`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`)
	base := []string{"delegation-tokens", "--bootstrap-server", e.saslPlaintext, "--command-config", cfg}
	tool := func(args ...string) string {
		t.Helper()
		return mustTool(t, append(append([]string{}, base...), args...)...)
	}
	alice := kadm.NewClient(secureClient(t, e.saslPlaintext, kgo.SASL(scramMech("alice", "alice-secret", true))))
	date := func(ts time.Time) string { return ts.Local().Format("2006-01-02T15:04") }

	var id, hmac string
	t.Run("create", func(t *testing.T) {
		out := tool("--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob")
		lines := strings.Split(out, "\n")
		if lines[0] != "Calling create token operation with renewers :[User:bob] , max-life-time-period :-1" ||
			!strings.HasPrefix(lines[1], "Created delegation token with tokenId : ") || lines[2] != "" || lines[4] != "" {
			t.Fatalf("create output:\n%s", out)
		}
		rows := tokensTable(t, out)
		if len(rows) != 1 {
			t.Fatalf("rows %+v", rows)
		}
		r := rows[0]
		id, hmac = r.id, r.hmac
		if lines[1] != "Created delegation token with tokenId : "+id || r.owner != "User:alice" || r.requester != "User:alice" || r.renewers != "[User:bob]" {
			t.Fatalf("row %+v\n%s", r, out)
		}
		tok, ok := tokensOf(t, alice)[id]
		if !ok || base64.StdEncoding.EncodeToString(tok.HMAC) != hmac || len(tok.Renewers) != 1 || tok.Renewers[0].Name != "bob" {
			t.Fatalf("broker's token %+v (found %v), printed %+v", tok, ok, r)
		}
		if r.issue != date(tok.IssueTimestamp) || r.expiry != date(tok.ExpiryTimestamp) || r.max != date(tok.MaxTimestamp) ||
			tok.MaxTimestamp.Sub(tok.IssueTimestamp) != 7*24*time.Hour {
			t.Fatalf("dates %+v, broker's %v %v %v", r, tok.IssueTimestamp, tok.ExpiryTimestamp, tok.MaxTimestamp)
		}
		// The printed id and HMAC log in (SCRAM with tokenauth) as alice.
		mac, _ := base64.StdEncoding.DecodeString(hmac)
		auth := scram.Auth{User: id, Pass: base64.StdEncoding.EncodeToString(mac), IsToken: true}
		if err := roundTrip(t, secureClient(t, e.saslPlaintext, kgo.SASL(auth.AsSha256Mechanism())), "tokens-tool"); err != nil {
			t.Fatalf("log in with the created token: %v", err)
		}
	})

	t.Run("create for another owner and describe", func(t *testing.T) {
		out := tool("--create", "--max-life-time-period", "3600000", "--owner-principal", "User:bob")
		r := tokensTable(t, out)[0]
		if r.owner != "User:bob" || r.requester != "User:alice" || r.renewers != "[]" {
			t.Fatalf("row %+v", r)
		}
		tok := tokensOf(t, alice)[r.id]
		if tok.Owner.Name != "bob" || tok.MaxTimestamp.Sub(tok.IssueTimestamp) != time.Hour {
			t.Fatalf("broker's token %+v", tok)
		}
		out = tool("--describe")
		if !strings.HasPrefix(out, "Calling describe token operation for current user.\nTotal number of tokens : 2\n") {
			t.Fatalf("describe:\n%s", out)
		}
		var ids []string
		for _, row := range tokensTable(t, out) {
			ids = append(ids, row.id)
		}
		want := []string{id, r.id}
		sort.Strings(ids)
		sort.Strings(want)
		if fmt.Sprint(ids) != fmt.Sprint(want) {
			t.Fatalf("described %v, want %v", ids, want)
		}
		// As on Kafka, an --owner-principal filter matches owners,
		// requesters and renewers: bob owns one token and renews the other.
		out = tool("--describe", "--owner-principal", "User:bob")
		rows := tokensTable(t, out)
		if !strings.HasPrefix(out, "Calling describe token operation for owners: [User:bob]\nTotal number of tokens : 2\n") || len(rows) != 2 {
			t.Fatalf("describe bob's:\n%s", out)
		}
		out = tool("--describe", "--owner-principal", "User:carol", "--owner-principal", "User:dave")
		if !strings.HasPrefix(out, "Calling describe token operation for owners: [User:carol, User:dave]\nTotal number of tokens : 0\n") || len(tokensTable(t, out)) != 0 {
			t.Fatalf("describe carol's and dave's:\n%s", out)
		}
	})

	t.Run("renew", func(t *testing.T) {
		before := time.Now()
		out := tool("--renew", "--hmac", hmac, "--renew-time-period", "7200000")
		tok := tokensOf(t, alice)[id]
		if exp := tok.ExpiryTimestamp.Sub(before); exp < 2*time.Hour-time.Second || exp > 2*time.Hour+10*time.Second {
			t.Fatalf("expiry %v after the renewal, want 2h", exp)
		}
		want := "Calling renew token operation with hmac :" + hmac + " , renew-time-period :7200000\nCompleted renew operation. New expiry date : " + date(tok.ExpiryTimestamp) + "\n"
		if out != want {
			t.Fatalf("renew output %q, want %q", out, want)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		before := tokensOf(t, alice)
		bs := []string{"delegation-tokens", "--bootstrap-server", e.saslPlaintext}
		for _, c := range []struct {
			want string
			args []string
		}{
			{"exactly one action: --create, --renew, --expire or --describe", append(append([]string{}, base...), "--max-life-time-period", "1")},
			{"exactly one action", append(append([]string{}, base...), "--create", "--describe")},
			{`Missing required argument "[command-config]"`, append(append([]string{}, bs...), "--describe")},
			{`Missing required argument "[max-life-time-period]"`, append(append([]string{}, base...), "--create")},
			{`Missing required argument "[hmac]"`, append(append([]string{}, base...), "--renew", "--renew-time-period", "1")},
			{`Missing required argument "[expiry-time-period]"`, append(append([]string{}, base...), "--expire", "--hmac", hmac)},
			{`Option "[create]" can't be used with option "[hmac]"`, append(append([]string{}, base...), "--create", "--max-life-time-period", "-1", "--hmac", hmac)},
			{`Option "[expire]" can't be used with option "[owner-principal]"`, append(append([]string{}, base...), "--expire", "--hmac", hmac, "--expiry-time-period", "-1", "--owner-principal", "User:alice")},
			{"--renewer-principal: expected a string in format principalType:principalName but got bob", append(append([]string{}, base...), "--create", "--max-life-time-period", "-1", "--renewer-principal", "bob")},
			{"--owner-principal: a token has one owner", append(append([]string{}, base...), "--create", "--max-life-time-period", "-1", "--owner-principal", "User:a", "--owner-principal", "User:b")},
			{`--hmac "%%%": not a token's HMAC in base64`, append(append([]string{}, base...), "--expire", "--hmac", "%%%", "--expiry-time-period", "-1")},
			{`invalid value "soon" for flag -max-life-time-period`, append(append([]string{}, base...), "--create", "--max-life-time-period", "soon")},
			{"DELEGATION_TOKEN_NOT_FOUND", append(append([]string{}, base...), "--renew", "--hmac", base64.StdEncoding.EncodeToString([]byte("no such token")), "--renew-time-period", "1000")},
			{"DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", []string{"delegation-tokens", "--bootstrap-server", e.plain, "--command-config", writeProperties(t, "security.protocol=PLAINTEXT"), "--create", "--max-life-time-period", "-1"}},
		} {
			tokensRefused(t, c.want, c.args...)
		}
		after := tokensOf(t, alice)
		if len(after) != len(before) {
			t.Fatalf("refused commands changed the tokens: %d before, %d after", len(before), len(after))
		}
		for tid, tok := range before {
			if !after[tid].ExpiryTimestamp.Equal(tok.ExpiryTimestamp) {
				t.Fatalf("refused commands changed token %s", tid)
			}
		}
	})

	t.Run("expire", func(t *testing.T) {
		out := tool("--expire", "--hmac", hmac, "--expiry-time-period", "-1")
		if !strings.HasPrefix(out, "Calling expire token operation with hmac :"+hmac+" , expire-time-period :-1\nCompleted expire operation. New expiry date : ") {
			t.Fatalf("expire output %q", out)
		}
		if _, ok := tokensOf(t, alice)[id]; ok {
			t.Fatal("the token expired with a negative period is still described")
		}
		mac, _ := base64.StdEncoding.DecodeString(hmac)
		auth := scram.Auth{User: id, Pass: base64.StdEncoding.EncodeToString(mac), IsToken: true}
		if err := secureClient(t, e.saslPlaintext, kgo.SASL(auth.AsSha256Mechanism())).Ping(ctxT(t, 10*time.Second)); err == nil {
			t.Fatal("the expired token still logs in")
		}
		out = tool("--describe")
		if !strings.Contains(out, "Total number of tokens : 1\n") || len(tokensTable(t, out)) != 1 {
			t.Fatalf("describe after the expiry:\n%s", out)
		}
	})
}

// TestClientMetricsTool: kaas client-metrics creates, lists, describes,
// alters and deletes CLIENT_METRICS subscriptions, each step cross-checked
// with a raw DescribeConfigs, and refuses bad flags and configs the broker
// refuses without changing the subscriptions.
func TestClientMetricsTool(t *testing.T) {
	_, addr := testBroker(t)
	cl := newClient(t, addr)
	base := []string{"client-metrics", "--bootstrap-server", addr}
	tool := func(args ...string) string {
		t.Helper()
		return mustTool(t, append(append([]string{}, base...), args...)...)
	}
	configs := func(name string) map[string]string {
		t.Helper()
		v, _ := configsResource(t, cl, kmsg.ConfigResourceTypeClientMetrics, name)
		return v
	}

	if out := tool("--alter", "--name", "producers", "--metrics", "org.apache.kafka.producer.,org.apache.kafka.consumer.",
		"--interval", "60000", "--match", "client_id=orders-.*,client_software_name=apache-kafka-java"); out != "Altered client metrics config for producers.\n" {
		t.Fatalf("alter output %q", out)
	}
	if v := configs("producers"); v["metrics"] != "org.apache.kafka.producer.,org.apache.kafka.consumer." || v["interval.ms"] != "60000" ||
		v["match"] != "client_id=orders-.*,client_software_name=apache-kafka-java" {
		t.Fatalf("broker's configs %v", v)
	}
	out := tool("--alter", "--generate-name", "--metrics", "*")
	generated := strings.TrimSuffix(strings.TrimPrefix(out, "Altered client metrics config for "), ".\n")
	if len(generated) != 22 || strings.ContainsAny(generated, " \n") {
		t.Fatalf("generated name %q from %q", generated, out)
	}
	if v := configs(generated); v["metrics"] != "*" {
		t.Fatalf("generated subscription's configs %v", v)
	}
	names := []string{"producers", generated}
	sort.Strings(names)
	if out := tool("--list"); out != strings.Join(names, "\n")+"\n" {
		t.Fatalf("list %q, want %v", out, names)
	}

	describe := func(out string) map[string]map[string]string {
		t.Helper()
		got := map[string]map[string]string{}
		var cur map[string]string
		for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if n, ok := strings.CutPrefix(line, "Client metrics configs for "); ok {
				cur = map[string]string{}
				got[strings.TrimSuffix(n, " are:")] = cur
				continue
			}
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "  "), "=")
			if cur == nil || !ok || !strings.HasPrefix(line, "  ") {
				t.Fatalf("describe line %q in:\n%s", line, out)
			}
			cur[k] = v
		}
		return got
	}
	d := describe(tool("--describe", "--name", "producers"))
	if len(d) != 1 || fmt.Sprint(d["producers"]) != fmt.Sprint(configs("producers")) {
		t.Fatalf("describe producers %v, broker %v", d, configs("producers"))
	}
	if d := describe(tool("--describe")); len(d) != 2 || d[generated]["metrics"] != "*" || d["producers"]["interval.ms"] != "60000" {
		t.Fatalf("describe all %v", d)
	}

	// An empty value removes a config, as Kafka's tool does.
	tool("--alter", "--name", "producers", "--match", "", "--interval", "30000")
	if v := configs("producers"); v["match"] != "" || v["interval.ms"] != "30000" || v["metrics"] != "org.apache.kafka.producer.,org.apache.kafka.consumer." {
		t.Fatalf("after removing match: %v", v)
	}

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			want string
			args []string
		}{
			{"exactly one action: --alter, --delete, --describe or --list.", append(append([]string{}, base...), "--name", "x")},
			{"exactly one action", append(append([]string{}, base...), "--list", "--describe")},
			{"--bootstrap-server must be specified.", []string{"client-metrics", "--list"}},
			{"One of --name or --generate-name must be specified with --alter.", append(append([]string{}, base...), "--alter", "--metrics", "a")},
			{"One of --name or --generate-name must be specified with --alter.", append(append([]string{}, base...), "--alter", "--name", "producers", "--generate-name")},
			{"A client metrics resource name must be specified with --delete.", append(append([]string{}, base...), "--delete")},
			{`Option "[list]" can't be used with option "[name]"`, append(append([]string{}, base...), "--list", "--name", "producers")},
			{`Option "[describe]" can't be used with option "[metrics]"`, append(append([]string{}, base...), "--describe", "--metrics", "a")},
			{`Option "[delete]" can't be used with option "[interval]"`, append(append([]string{}, base...), "--delete", "--name", "producers", "--interval", "100")},
			{`--match "client_id": want selector=regex pairs`, append(append([]string{}, base...), "--alter", "--name", "producers", "--match", "client_id")},
			{`invalid value "fast" for flag -interval`, append(append([]string{}, base...), "--alter", "--name", "producers", "--interval", "fast")},
			{"Error while executing client metrics command : INVALID_CONFIG", append(append([]string{}, base...), "--alter", "--name", "producers", "--interval", "5", "--metrics", "x.")},
			{"Error while executing client metrics command : INVALID_CONFIG", append(append([]string{}, base...), "--alter", "--name", "producers", "--match", "no_such_selector=x")},
		} {
			tokensRefused(t, c.want, c.args...)
		}
		if v := configs("producers"); v["interval.ms"] != "30000" || v["metrics"] != "org.apache.kafka.producer.,org.apache.kafka.consumer." || v["match"] != "" {
			t.Fatalf("refused commands changed producers: %v", v)
		}
	})

	if out := tool("--delete", "--name", "producers"); out != "Deleted client metrics config for producers.\n" {
		t.Fatalf("delete output %q", out)
	}
	if out := tool("--list"); out != generated+"\n" {
		t.Fatalf("list after the delete %q", out)
	}
	if d := describe(tool("--describe")); len(d) != 1 || d[generated] == nil {
		t.Fatalf("describe after the delete %v", d)
	}
}
