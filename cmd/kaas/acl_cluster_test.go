package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestKafkaAclObjects: KafkaAcl objects applied with kubectl reach every
// broker's authorizer (DescribeAcls on each, requests allowed then refused
// once the object is deleted); CreateAcls and DeleteAcls over the Kafka
// protocol create and delete the objects; the CRD refuses invalid ACLs.
func TestKafkaAclObjects(t *testing.T) {
	api := startAPIServer(t)
	c := newKaasCluster(t, api, append(clusterFlags, "--authorizer", "acl", "--super-users", "User:admin")...)
	for _, n := range []string{"kaas-0", "kaas-1"} {
		c.start(n)
	}
	manifest := func(name, body string) string {
		f := filepath.Join(t.TempDir(), name+".yaml")
		y := "apiVersion: kaas.dev/v1alpha1\nkind: KafkaAcl\nmetadata:\n  name: " + name + "\nspec:\n" + body
		if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	api.kubectl(t, "-n", c.ns, "apply", "-f", manifest("ops-alter", "  resourceType: Cluster\n  resourceName: kafka-cluster\n  principal: User:ANONYMOUS\n  operation: Alter\n"))
	api.kubectl(t, "-n", c.ns, "apply", "-f", manifest("k-topics", "  resourceType: Topic\n  resourceName: k-\n  patternType: Prefixed\n  principal: User:*\n  host: 127.0.0.0/8\n  operation: All\n"))

	// Every broker serves them from its own cache.
	cl := c.client(kgo.DisableIdempotentWrite(), kgo.RetryTimeout(5*time.Second))
	for _, id := range []int32{0, 1} {
		waitUntil(t, 30*time.Second, "KafkaAcls visible to DescribeAcls on each broker", func() bool {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r, err := cl.Broker(int(id)).Request(ctxFor(t, 5*time.Second), req)
			if err != nil {
				return false
			}
			resp := r.(*kmsg.DescribeACLsResponse)
			return resp.ErrorCode == 0 && len(resp.Resources) == 2
		})
	}

	ctx := ctxFor(t, 60*time.Second)
	adm := kadm.NewClient(c.client())
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "k-orders"); err != nil || r.Err != nil {
		t.Fatalf("CreateTopics k-orders under the KafkaAcl: %v %v", err, r.Err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "k-orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce allowed by a KafkaAcl: %v", err)
	}
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "other"); err == nil && r.Err == nil {
		t.Fatal("CreateTopics other: allowed with no ACL")
	}

	// CreateAcls writes a KafkaAcl; DeleteAcls removes it.
	mustCreateACLs(t, adm, kadm.NewACLs().Groups("gg").Allow("User:carol").AllowHosts("10.0.0.0/24").Operations(kadm.OpRead))
	out := api.kubectl(t, "-n", c.ns, "get", "kafkaacls", "-o",
		`jsonpath={range .items[*]}{.spec.resourceType}/{.spec.resourceName}/{.spec.principal}/{.spec.host}/{.spec.operation}/{.spec.permission}{"\n"}{end}`)
	if !strings.Contains(out, "Group/gg/User:carol/10.0.0.0/24/Read/Allow") {
		t.Fatalf("CreateAcls made no KafkaAcl; objects:\n%s", out)
	}
	// KIP-373's user resource, named by a principal, is a KafkaAcl too.
	userACL := kmsg.NewPtrCreateACLsRequest()
	cr := kmsg.NewCreateACLsRequestCreation()
	cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeUser, "User:dave", kmsg.ACLResourcePatternTypeLiteral
	cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:erin", "*", kmsg.ACLOperationCreateTokens, kmsg.ACLPermissionTypeAllow
	userACL.Creations = append(userACL.Creations, cr)
	if resp, err := userACL.RequestWith(ctx, c.client()); err != nil || resp.Results[0].ErrorCode != 0 {
		t.Fatalf("CreateAcls of a User resource: %v %+v", err, resp)
	}
	if out := api.kubectl(t, "-n", c.ns, "get", "kafkaacls", "-o",
		`jsonpath={range .items[*]}{.spec.resourceType}/{.spec.resourceName}/{.spec.principal}/{.spec.operation}{"\n"}{end}`); !strings.Contains(out, "User/User:dave/User:erin/CreateTokens") {
		t.Fatalf("no KafkaAcl of the User resource; objects:\n%s", out)
	}
	if n := mustDeleteACLs(t, adm, kadm.NewACLs().Groups("gg").Allow().AllowHosts().Operations().ResourcePatternType(kadm.ACLPatternAny)); n != 1 {
		t.Fatalf("DeleteAcls removed %d ACLs, want 1", n)
	}
	waitUntil(t, 10*time.Second, "KafkaAcl of the deleted ACL gone", func() bool {
		return !strings.Contains(api.kubectlMaybe("-n", c.ns, "get", "kafkaacls", "-o", "jsonpath={.items[*].spec.principal}"), "User:carol")
	})

	// Deleting the KafkaAcl with kubectl takes the permission away.
	api.kubectl(t, "-n", c.ns, "delete", "kafkaacl", "k-topics")
	waitUntil(t, 20*time.Second, "produce refused once its KafkaAcl is deleted", func() bool {
		p := c.client(kgo.DisableIdempotentWrite(), kgo.RetryTimeout(time.Second))
		defer p.Close()
		return errorsIs(p.ProduceSync(ctxFor(t, 10*time.Second), &kgo.Record{Topic: "k-orders", Value: []byte("v")}).FirstErr(), kerr.TopicAuthorizationFailed)
	})

	// The CRD refuses what Kafka would.
	bad := manifest("bad", "  resourceType: Cluster\n  resourceName: not-kafka-cluster\n  principal: User:x\n  operation: Alter\n")
	if out, err := kubectlErr(api, "-n", c.ns, "apply", "-f", bad); err == nil || !strings.Contains(out, "kafka-cluster") {
		t.Fatalf("kubectl accepted a Cluster ACL not named kafka-cluster: %v\n%s", err, out)
	}
}

func errorsIs(err error, target *kerr.Error) bool { return errors.Is(err, target) }

// kubectlErr runs kubectl and returns its combined output and error.
func kubectlErr(a *apiserver, args ...string) (string, error) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", a.kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
