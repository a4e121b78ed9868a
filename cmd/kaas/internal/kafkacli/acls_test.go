package kafkacli

import (
	"io"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// planText prints a plan one binding a line, as Kafka prints them.
func planText(plan []aclResourceEntries) string {
	var b strings.Builder
	for _, re := range plan {
		if len(re.Entries) == 0 {
			b.WriteString(re.Resource.String() + " *\n")
		}
		for _, e := range re.Entries {
			b.WriteString(re.Resource.String() + " " + e.String() + "\n")
		}
	}
	return b.String()
}

// TestACLPlan: the bindings kafka-acls.sh's flags stand for, as Kafka's
// AclCommand builds them.
func TestACLPlan(t *testing.T) {
	const bs = "--bootstrap-server=x:1"
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"operations times principals times hosts", []string{"--add", "--topic", "t", "--allow-principal", "User:a", "--allow-host", "10.0.0.0/8",
			"--allow-host", "1.2.3.4", "--operation", "read", "--operation", "DESCRIBE", "--deny-principal", "User:b", "--operation", "Write"},
			[]string{
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=1.2.3.4, operation=READ, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=10.0.0.0/8, operation=READ, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=1.2.3.4, operation=WRITE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=10.0.0.0/8, operation=WRITE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=1.2.3.4, operation=DESCRIBE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=10.0.0.0/8, operation=DESCRIBE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:b, host=*, operation=READ, permissionType=DENY)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:b, host=*, operation=WRITE, permissionType=DENY)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:b, host=*, operation=DESCRIBE, permissionType=DENY)",
			}},
		{"no --operation is All; every resource kind", []string{"--add", "--allow-principal", "User:a", "--cluster", "--group", "g", "--transactional-id", "x",
			"--delegation-token", "d", "--topic", " t "},
			[]string{
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=*, operation=ALL, permissionType=ALLOW)",
				"ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL) (principal=User:a, host=*, operation=ALL, permissionType=ALLOW)",
				"ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL) (principal=User:a, host=*, operation=ALL, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TRANSACTIONAL_ID, name=x, patternType=LITERAL) (principal=User:a, host=*, operation=ALL, permissionType=ALLOW)",
				"ResourcePattern(resourceType=DELEGATION_TOKEN, name=d, patternType=LITERAL) (principal=User:a, host=*, operation=ALL, permissionType=ALLOW)",
			}},
		{"user principal resource", []string{"--add", "--allow-principal", "User:a", "--user-principal", "User:b", "--operation", "CreateTokens"},
			[]string{"ResourcePattern(resourceType=USER, name=User:b, patternType=LITERAL) (principal=User:a, host=*, operation=CREATE_TOKENS, permissionType=ALLOW)"}},
		{"producer, idempotent, transactional, prefixed", []string{"--add", "--producer", "--idempotent", "--topic", "p", "--transactional-id", "tx",
			"--resource-pattern-type", "PREFIXED", "--allow-principal", "User:a"},
			[]string{
				"ResourcePattern(resourceType=TOPIC, name=p, patternType=PREFIXED) (principal=User:a, host=*, operation=WRITE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=p, patternType=PREFIXED) (principal=User:a, host=*, operation=CREATE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=p, patternType=PREFIXED) (principal=User:a, host=*, operation=DESCRIBE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL) (principal=User:a, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=PREFIXED) (principal=User:a, host=*, operation=WRITE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, patternType=PREFIXED) (principal=User:a, host=*, operation=DESCRIBE, permissionType=ALLOW)",
			}},
		{"producer and consumer together", []string{"--add", "--producer", "--consumer", "--topic", "t", "--group", "g", "--allow-principal", "User:a"},
			[]string{
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=*, operation=READ, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=*, operation=WRITE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=*, operation=CREATE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL) (principal=User:a, host=*, operation=DESCRIBE, permissionType=ALLOW)",
				"ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL) (principal=User:a, host=*, operation=READ, permissionType=ALLOW)",
			}},
		{"remove without principals removes everything of the filter", []string{"--remove", "--topic", "t", "--resource-pattern-type", "match"},
			[]string{"ResourcePattern(resourceType=TOPIC, name=t, patternType=MATCH) *"}},
		{"--cluster counts only with literal", []string{"--remove", "--cluster", "--topic", "t", "--resource-pattern-type", "any"},
			[]string{"ResourcePattern(resourceType=TOPIC, name=t, patternType=ANY) *"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := parseACLFlags(append([]string{bs}, c.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := f.plan()
			if f.add && err == nil {
				plan, err = f.addPlan()
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := planText(plan), strings.Join(c.want, "\n")+"\n"; got != want {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestACLRefusals: what Kafka's AclCommand refuses, with its message, and
// what kaas refuses by name.
func TestACLRefusals(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--list"}, "missing required argument --bootstrap-server"},
		{[]string{"--bootstrap-server=x:1"}, "exactly one action: --list, --add, --remove"},
		{[]string{"--bootstrap-server=x:1", "--add", "--list"}, "exactly one action"},
		{[]string{"--bootstrap-server=x:1", "--list", "--allow-principal", "User:a"}, `Option "[list]" can't be used with option "[allow-principal]"`},
		{[]string{"--bootstrap-server=x:1", "--add", "--producer", "--topic", "t", "--operation", "Read"}, `Option "[producer]" can't be used with option "[operation]"`},
		{[]string{"--bootstrap-server=x:1", "--add", "--consumer", "--topic", "t", "--group", "g", "--deny-principal", "User:a"}, `Option "[consumer]" can't be used with option "[deny-principal]"`},
		{[]string{"--bootstrap-server=x:1", "--add", "--principal", "User:a"}, "The --principal option is only available if --list is set"},
		{[]string{"--bootstrap-server=x:1", "--add", "--producer", "--group", "g"}, "With --producer you must specify a --topic"},
		{[]string{"--bootstrap-server=x:1", "--add", "--idempotent", "--topic", "t"}, "The --idempotent option is only available if --producer is set"},
		{[]string{"--bootstrap-server=x:1", "--add", "--consumer", "--topic", "t"}, "With --consumer you must specify a --topic and a --group"},
		{[]string{"--bootstrap-server=x:1", "--add", "--consumer", "--topic", "t", "--group", "g", "--cluster"}, "With --consumer you must specify"},
		{[]string{"--bootstrap-server=x:1", "--add", "--authorizer-properties", "zookeeper.connect=zk:2181"}, "--authorizer-properties is a ZooKeeper-era flag"},
		{[]string{"--bootstrap-controller=x:1", "--list"}, "--bootstrap-controller is not supported"},
		{[]string{"--bootstrap-server=x:1", "--list", "extra"}, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		if _, err := parseACLFlags(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	plans := []struct {
		args []string
		want string
	}{
		{[]string{"--add", "--allow-principal", "User:a", "--operation", "Read", "--cluster"},
			"ResourceType CLUSTER only supports operations [ALL, CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE]"},
		{[]string{"--add", "--allow-principal", "User:a", "--operation", "Write", "--group", "g"}, "ResourceType GROUP only supports operations"},
		{[]string{"--add", "--allow-principal", "User:a", "--operation", "Read", "--user-principal", "User:b"}, "ResourceType USER only supports operations [ALL, CREATE_TOKENS, DESCRIBE_TOKENS]"},
		{[]string{"--add", "--operation", "Read", "--topic", "t"}, "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."},
		{[]string{"--add", "--allow-principal", "User:a", "--operation", "Read"}, "You must provide at least one resource"},
		{[]string{"--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"}, "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."},
		{[]string{"--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "wild"}, "--resource-pattern-type wild"},
		{[]string{"--add", "--allow-principal", "alice", "--topic", "t"}, "--allow-principal alice: expected a string in format principalType:principalName"},
		{[]string{"--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "cluster_action"}, "--operation cluster_action: unknown operation"},
		{[]string{"--remove", "--allow-principal", "User:a"}, "You must provide at least one resource"},
	}
	for _, c := range plans {
		f, err := parseACLFlags(append([]string{"--bootstrap-server=x:1"}, c.args...), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if f.add {
			_, err = f.addPlan()
		} else {
			_, err = f.plan()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

func TestACLOperationNames(t *testing.T) {
	for s, want := range map[string]kmsg.ACLOperation{"ClusterAction": kmsg.ACLOperationClusterAction, "CLUSTERACTION": kmsg.ACLOperationClusterAction,
		"describeconfigs": kmsg.ACLOperationDescribeConfigs, "All": kmsg.ACLOperationAll, " idempotentWrite ": kmsg.ACLOperationIdempotentWrite} {
		if got, err := parseACLOperation(s); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, err, want)
		}
	}
	if _, err := parseACLOperation("Any"); err == nil {
		t.Error("Any, a filter value, was taken as an operation")
	}
}
