package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/cmd/kaas/internal/kafkacli"
)

// aclsToolBindings is every ACL on the broker, one "TYPE name PATTERN
// principal host OPERATION PERMISSION" line each, sorted, read with kadm
// rather than with the tool under test.
func aclsToolBindings(t *testing.T, adm *kadm.Client) []string {
	t.Helper()
	var out []string
	for _, d := range describeAll(t, adm) {
		out = append(out, fmt.Sprintf("%s %s %s %s %s %s %s", d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission))
	}
	sort.Strings(out)
	return out
}

// aclsToolOf keeps the bindings naming s (a principal or resource name).
func aclsToolOf(bindings []string, s string) []string {
	var out []string
	for _, b := range bindings {
		if slices.Contains(strings.Fields(b), s) {
			out = append(out, b)
		}
	}
	return out
}

func aclsToolSorted(lines ...string) []string {
	sort.Strings(lines)
	return lines
}

// aclsToolWithStdin runs the tool with input on standard input, where
// --remove reads its confirmation.
func aclsToolWithStdin(t *testing.T, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if args[0] != "acls" {
		t.Fatalf("not an acls command: %v", args)
	}
	tool, _ := kafkacli.Lookup("acls")
	var out, errb bytes.Buffer
	if err := tool.Run(context.Background(), args[1:], strings.NewReader(input), &out, &errb); err != nil {
		fmt.Fprintf(&errb, "kaas: %v\n", err)
		code = 2
	}
	return out.String(), errb.String(), code
}

// TestACLsTool: `kaas acls` adds, lists and removes ACLs as kafka-acls.sh
// does, on a broker with --authorizer=acl where the tool's principal
// (User:ANONYMOUS on the plaintext listener) holds Alter on the cluster
// from acls.json; an ACL it adds is enforced on a SASL user.
func TestACLsTool(t *testing.T) {
	dir := t.TempDir()
	file := `[{"resourceType":"Cluster","resourceName":"kafka-cluster","principal":"User:ANONYMOUS","operation":"Alter"}]`
	if err := os.WriteFile(filepath.Join(dir, "acls.json"), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newSecureEnv(t, "--data-dir", dir, "--authorizer", "acl")
	adm := newAdmin(t, e.plain)
	acls := func(args ...string) []string { return append([]string{"acls", "--bootstrap-server", e.plain}, args...) }
	const anonAlter = "CLUSTER kafka-cluster LITERAL User:ANONYMOUS * ALTER ALLOW"

	t.Run("add", func(t *testing.T) {
		out := mustTool(t, acls("--add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
			"--operation", "Read", "--operation", "describe", "--topic", "orders", "--group", "billing")...)
		want := "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n" +
			" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n" +
			"\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n" +
			"\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n" +
			"\t(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n" +
			"Adding ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, patternType=LITERAL)`: \n" +
			" \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n" +
			"\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n" +
			"\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n" +
			"\t(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"
		if out != want {
			t.Fatalf("got\n%q\nwant\n%q", out, want)
		}
		mustTool(t, acls("--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.0/8", "--operation", "Read",
			"--topic", "ord", "--resource-pattern-type", "prefixed")...)
		mustTool(t, acls("--add", "--allow-principal", "User:ops", "--operation", "DescribeConfigs", "--operation", "ALTERCONFIGS", "--cluster")...)
		mustTool(t, acls("--add", "--allow-principal", "User:alice", "--operation", "Write", "--transactional-id", "tx-", "--resource-pattern-type", "PREFIXED")...)
		mustTool(t, acls("--add", "--allow-principal", "User:bob", "--operation", "CreateTokens", "--user-principal", "User:alice")...)
		mustTool(t, acls("--add", "--allow-principal", "User:bob", "--operation", "Describe", "--delegation-token", "token-1")...)
		got := aclsToolBindings(t, adm)
		want2 := aclsToolSorted(anonAlter,
			"TOPIC orders LITERAL User:alice * READ ALLOW", "TOPIC orders LITERAL User:alice * DESCRIBE ALLOW",
			"TOPIC orders LITERAL User:bob * READ ALLOW", "TOPIC orders LITERAL User:bob * DESCRIBE ALLOW",
			"GROUP billing LITERAL User:alice * READ ALLOW", "GROUP billing LITERAL User:alice * DESCRIBE ALLOW",
			"GROUP billing LITERAL User:bob * READ ALLOW", "GROUP billing LITERAL User:bob * DESCRIBE ALLOW",
			"TOPIC ord PREFIXED User:mallory 10.0.0.0/8 READ DENY",
			"CLUSTER kafka-cluster LITERAL User:ops * DESCRIBE_CONFIGS ALLOW", "CLUSTER kafka-cluster LITERAL User:ops * ALTER_CONFIGS ALLOW",
			"TRANSACTIONAL_ID tx- PREFIXED User:alice * WRITE ALLOW",
			"USER User:alice LITERAL User:bob * CREATE_TOKENS ALLOW",
			"DELEGATION_TOKEN token-1 LITERAL User:bob * DESCRIBE ALLOW")
		if !slices.Equal(got, want2) {
			t.Fatalf("the broker holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want2, "\n"))
		}

		// Adding again: each existing ACL is named and nothing is added.
		out = mustTool(t, acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Write", "--topic", "orders")...)
		want = "Acl (pattern=ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL), entry=(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)) already exists.\n" +
			"Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`: \n" +
			" \t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n\n"
		if out != want {
			t.Fatalf("got\n%q\nwant\n%q", out, want)
		}
		if n := len(aclsToolBindings(t, adm)); n != len(want2)+1 {
			t.Fatalf("%d ACLs after adding one, want %d", n, len(want2)+1)
		}
	})

	t.Run("producer and consumer", func(t *testing.T) {
		mustTool(t, acls("--add", "--producer", "--idempotent", "--topic", "p1", "--transactional-id", "ptx", "--allow-principal", "User:prod")...)
		mustTool(t, acls("--add", "--consumer", "--topic", "c1", "--group", "cg", "--allow-principal", "User:cons", "--allow-host", "192.0.2.7")...)
		all := aclsToolBindings(t, adm)
		if got, want := aclsToolOf(all, "User:prod"), aclsToolSorted(
			"TOPIC p1 LITERAL User:prod * WRITE ALLOW", "TOPIC p1 LITERAL User:prod * DESCRIBE ALLOW", "TOPIC p1 LITERAL User:prod * CREATE ALLOW",
			"TRANSACTIONAL_ID ptx LITERAL User:prod * WRITE ALLOW", "TRANSACTIONAL_ID ptx LITERAL User:prod * DESCRIBE ALLOW",
			"CLUSTER kafka-cluster LITERAL User:prod * IDEMPOTENT_WRITE ALLOW"); !slices.Equal(got, want) {
			t.Fatalf("--producer made\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got, want := aclsToolOf(all, "User:cons"), aclsToolSorted(
			"TOPIC c1 LITERAL User:cons 192.0.2.7 READ ALLOW", "TOPIC c1 LITERAL User:cons 192.0.2.7 DESCRIBE ALLOW",
			"GROUP cg LITERAL User:cons 192.0.2.7 READ ALLOW"); !slices.Equal(got, want) {
			t.Fatalf("--consumer made\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})

	t.Run("list", func(t *testing.T) {
		out := mustTool(t, acls("--list", "--topic", "orders")...)
		want := "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`:\n" +
			"\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n" +
			"\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n" +
			"\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n" +
			"\t(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)\n" +
			"\t(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)\n\n"
		if out != want {
			t.Fatalf("got\n%q\nwant\n%q", out, want)
		}
		// match: every pattern that applies to the topic orders.
		out = mustTool(t, acls("--list", "--topic", "orders", "--resource-pattern-type", "match")...)
		if !strings.HasPrefix(out, want) || !strings.Contains(out, "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=ord, patternType=PREFIXED)`:\n"+
			"\t(principal=User:mallory, host=10.0.0.0/8, operation=READ, permissionType=DENY)\n\n") || strings.Count(out, "Current ACLs") != 2 {
			t.Fatalf("--resource-pattern-type match:\n%s", out)
		}
		out = mustTool(t, acls("--list", "--principal", "User:cons")...)
		want = "ACLs for principal `User:cons`\n" +
			"Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=c1, patternType=LITERAL)`:\n" +
			"\t(principal=User:cons, host=192.0.2.7, operation=READ, permissionType=ALLOW)\n" +
			"\t(principal=User:cons, host=192.0.2.7, operation=DESCRIBE, permissionType=ALLOW)\n\n" +
			"Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=cg, patternType=LITERAL)`:\n" +
			"\t(principal=User:cons, host=192.0.2.7, operation=READ, permissionType=ALLOW)\n\n"
		if out != want {
			t.Fatalf("got\n%q\nwant\n%q", out, want)
		}
		out = mustTool(t, acls("--list", "--cluster")...)
		want = "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`:\n" +
			"\t(principal=User:ANONYMOUS, host=*, operation=ALTER, permissionType=ALLOW)\n" +
			"\t(principal=User:ops, host=*, operation=DESCRIBE_CONFIGS, permissionType=ALLOW)\n" +
			"\t(principal=User:ops, host=*, operation=ALTER_CONFIGS, permissionType=ALLOW)\n" +
			"\t(principal=User:prod, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)\n\n"
		if out != want {
			t.Fatalf("got\n%q\nwant\n%q", out, want)
		}
		// Without a resource: every ACL, one block per resource pattern.
		out = mustTool(t, acls("--list")...)
		if n, want := strings.Count(out, "Current ACLs for resource"), 11; n != want {
			t.Fatalf("--list printed %d resources, want %d:\n%s", n, want, out)
		}
		if n, want := strings.Count(out, "\t(principal="), len(aclsToolBindings(t, adm)); n != want {
			t.Fatalf("--list printed %d ACLs, the broker holds %d:\n%s", n, want, out)
		}
	})

	t.Run("remove", func(t *testing.T) {
		before := aclsToolBindings(t, adm)
		if out := mustTool(t, acls("--remove", "--force", "--allow-principal", "User:bob", "--operation", "Describe", "--topic", "orders")...); out != "" {
			t.Fatalf("--remove --force printed %q", out)
		}
		after := aclsToolBindings(t, adm)
		if gone := slices.DeleteFunc(slices.Clone(before), func(b string) bool { return slices.Contains(after, b) }); !slices.Equal(gone, []string{"TOPIC orders LITERAL User:bob * DESCRIBE ALLOW"}) || len(after) != len(before)-1 {
			t.Fatalf("removed %v", gone)
		}
		mustTool(t, acls("--remove", "--force", "--topic", "orders")...)
		if left := aclsToolOf(aclsToolBindings(t, adm), "orders"); len(left) != 0 {
			t.Fatalf("after removing every ACL of orders: %v", left)
		}
		if left := aclsToolOf(aclsToolBindings(t, adm), "ord"); len(left) != 1 {
			t.Fatalf("the prefixed ord ACL went with the literal orders: %v", left)
		}
		// match removes every pattern that applies to the name.
		mustTool(t, acls("--remove", "--force", "--topic", "order-x", "--resource-pattern-type", "match")...)
		if left := aclsToolOf(aclsToolBindings(t, adm), "ord"); len(left) != 0 {
			t.Fatalf("--resource-pattern-type match left %v", left)
		}
	})

	t.Run("remove asks", func(t *testing.T) {
		prompt := "Are you sure you want to delete all ACLs for resource filter `ResourcePattern(resourceType=TOPIC, name=c1, patternType=LITERAL)`? (y/n)\n"
		out, _, code := aclsToolWithStdin(t, "n\n", acls("--remove", "--topic", "c1")...)
		if code != 0 || out != prompt || len(aclsToolOf(aclsToolBindings(t, adm), "c1")) != 2 {
			t.Fatalf("answered n: exit %d, %q, c1 has %v", code, out, aclsToolOf(aclsToolBindings(t, adm), "c1"))
		}
		_, errOut, code := aclsToolWithStdin(t, "", acls("--remove", "--topic", "c1")...)
		if code != 2 || !strings.Contains(errOut, "pass --force") || len(aclsToolOf(aclsToolBindings(t, adm), "c1")) != 2 {
			t.Fatalf("no answer: exit %d, %q", code, errOut)
		}
		out, _, code = aclsToolWithStdin(t, "Y\n", acls("--remove", "--allow-principal", "User:cons", "--allow-host", "192.0.2.7", "--operation", "Read", "--topic", "c1")...)
		prompt = "Are you sure you want to remove ACLs: \n \t(principal=User:cons, host=192.0.2.7, operation=READ, permissionType=ALLOW)\n" +
			" from resource filter `ResourcePattern(resourceType=TOPIC, name=c1, patternType=LITERAL)`? (y/n)\n"
		if left := aclsToolOf(aclsToolBindings(t, adm), "c1"); code != 0 || out != prompt || !slices.Equal(left, []string{"TOPIC c1 LITERAL User:cons 192.0.2.7 DESCRIBE ALLOW"}) {
			t.Fatalf("answered Y: exit %d, %q, c1 has %v", code, out, left)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		before := aclsToolBindings(t, adm)
		for _, c := range []struct {
			args []string
			want string
		}{
			{acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--cluster"), "ResourceType CLUSTER only supports operations [ALL, CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE]"},
			{acls("--add", "--operation", "Read", "--topic", "orders"), "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."},
			{acls("--topic", "orders"), "Command must include exactly one action: --list, --add, --remove."},
			{acls("--add", "--remove", "--topic", "orders"), "Command must include exactly one action"},
			{acls("--add", "--producer", "--allow-principal", "User:alice"), "With --producer you must specify a --topic"},
			{acls("--add", "--consumer", "--topic", "orders", "--allow-principal", "User:alice"), "With --consumer you must specify a --topic and a --group"},
			{acls("--add", "--allow-principal", "User:alice", "--topic", "orders", "--resource-pattern-type", "any"), "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls."},
			{acls("--add", "--allow-principal", "alice", "--topic", "orders"), "--allow-principal alice: expected a string in format principalType:principalName"},
			{acls("--add", "--allow-principal", "User:alice", "--operation", "Reed", "--topic", "orders"), "--operation Reed: unknown operation"},
			{acls("--list", "--authorizer-properties", "zookeeper.connect=zk:2181"), "--authorizer-properties is a ZooKeeper-era flag"},
			{[]string{"acls", "--list"}, "missing required argument --bootstrap-server"},
			// The broker refuses a block that does not parse; the tool says so.
			{acls("--add", "--allow-principal", "User:alice", "--allow-host", "10.0.0.0/33", "--topic", "orders"), "INVALID_REQUEST"},
		} {
			out, errOut, code := runKaas(t, c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %q", c.args[1:], code, errOut, out, c.want)
			}
		}
		if after := aclsToolBindings(t, adm); !slices.Equal(before, after) {
			t.Fatalf("refused commands changed the ACLs:\nbefore %v\nafter %v", before, after)
		}
	})

	t.Run("enforced", func(t *testing.T) {
		mustTool(t, acls("--add", "--allow-principal", "User:ANONYMOUS", "--operation", "Create", "--topic", "guarded")...)
		if _, err := adm.CreateTopic(ctxT(t, 10*time.Second), 1, 1, nil, "guarded"); err != nil {
			t.Fatal(err)
		}
		mustTool(t, acls("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "guarded")...)
		alice := newClient(t, e.saslPlaintext, kgo.SASL(scramMech("alice", "alice-secret", true)), kgo.DisableIdempotentWrite())
		err := alice.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: "guarded", Value: []byte("v")}).FirstErr()
		if !errors.Is(err, kerr.TopicAuthorizationFailed) {
			t.Fatalf("alice, allowed Read only, produced: %v; want TOPIC_AUTHORIZATION_FAILED", err)
		}
		mustTool(t, acls("--add", "--producer", "--topic", "guarded", "--allow-principal", "User:alice")...)
		if err := alice.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: "guarded", Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatalf("alice with --producer ACLs: %v", err)
		}
	})
}
