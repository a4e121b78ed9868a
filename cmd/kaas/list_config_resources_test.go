package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// listConfigResources sends ListConfigResources for types; v is the
// version cl is pinned to (kgo sends the highest both sides support).
func listConfigResources(t *testing.T, cl *kgo.Client, v int16, types ...kmsg.ConfigResourceType) *kmsg.ListConfigResourcesResponse {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.Version = v
	for _, rt := range types {
		req.ResourceTypes = append(req.ResourceTypes, int8(rt))
	}
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// resourcesOf returns the response's resources of type rt, in order.
func resourcesOf(resp *kmsg.ListConfigResourcesResponse, rt kmsg.ConfigResourceType) []string {
	var out []string
	for _, r := range resp.ConfigResources {
		if r.Type == int8(rt) {
			out = append(out, r.Name)
		}
	}
	return out
}

// TestListConfigResources: ListConfigResources (KIP-1142) lists every
// topic (the internal one included), the live broker and the groups with
// GROUP config overrides, each of which DescribeConfigs then describes; a
// type filter narrows the list; the groups are still listed after a
// restart on the data dir; a type kaas does not serve answers
// UNSUPPORTED_VERSION; v0 (client metrics only) lists nothing.
func TestListConfigResources(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := startTestBroker(t, "--data-dir", dir)
	createTopic(t, addr, "lcr-b", 1, nil)
	createTopic(t, addr, "lcr-a", 2, nil)
	cl := newClient(t, addr)
	long := strings.Repeat("a-long-group-id-", 20) // its directory name is a hash
	for _, g := range []string{"lcr-g", long} {
		if code, msg := alterGroupConfigs(t, cl, g, "consumer.session.timeout.ms", "50000"); code != 0 {
			t.Fatalf("SET on %s: code %d %q", g, code, msg)
		}
	}

	resp := listConfigResources(t, cl, 1)
	if resp.ErrorCode != 0 {
		t.Fatalf("list all: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if got, want := resourcesOf(resp, kmsg.ConfigResourceTypeTopic), []string{"__consumer_offsets", "lcr-a", "lcr-b"}; !slices.Equal(got, want) {
		t.Fatalf("topics %q, want %q", got, want)
	}
	if got := resourcesOf(resp, kmsg.ConfigResourceTypeBroker); len(got) != 1 {
		t.Fatalf("brokers %q, want this one", got)
	}
	if got, want := resourcesOf(resp, kmsg.ConfigResourceTypeBrokerLogger), resourcesOf(resp, kmsg.ConfigResourceTypeBroker); !slices.Equal(got, want) {
		t.Fatalf("broker loggers %q, want this broker's %q", got, want)
	}
	if got, want := resourcesOf(resp, kmsg.ConfigResourceTypeGroupConfig), []string{long, "lcr-g"}; !slices.Equal(got, want) {
		t.Fatalf("groups %q, want %q", got, want)
	}
	if got := resourcesOf(resp, kmsg.ConfigResourceTypeClientMetrics); len(got) != 0 {
		t.Fatalf("client metrics %q, want none", got)
	}
	// Every listed resource is one DescribeConfigs describes.
	describe := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range resp.ConfigResources {
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceType(r.Type), r.Name
		describe.Resources = append(describe.Resources, res)
	}
	dresp, err := describe.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range dresp.Resources {
		if r.ErrorCode != 0 || len(r.Configs) == 0 {
			t.Fatalf("listed %v %q does not describe: %v, %d configs", r.ResourceType, r.ResourceName, kerr.ErrorForCode(r.ErrorCode), len(r.Configs))
		}
	}

	only := listConfigResources(t, cl, 1, kmsg.ConfigResourceTypeGroupConfig)
	if only.ErrorCode != 0 || len(only.ConfigResources) != 2 || len(resourcesOf(only, kmsg.ConfigResourceTypeGroupConfig)) != 2 {
		t.Fatalf("groups only: %+v", only)
	}
	if r := listConfigResources(t, cl, 1, kmsg.ConfigResourceTypeTopic, kmsg.ConfigResourceType(99)); r.ErrorCode != kerr.UnsupportedVersion.Code || len(r.ConfigResources) != 0 {
		t.Fatalf("with an unknown type: code %d, %d resources; want UNSUPPORTED_VERSION and none", r.ErrorCode, len(r.ConfigResources))
	}
	v0 := kversion.Stable()
	v0.SetMaxKeyVersion(kmsg.ListConfigResources.Int16(), 0)
	if r := listConfigResources(t, newClient(t, addr, kgo.MaxVersions(v0)), 0); r.ErrorCode != 0 || len(r.ConfigResources) != 0 {
		t.Fatalf("v0: code %d, %d resources; want no client-metrics resources", r.ErrorCode, len(r.ConfigResources))
	}

	cl.Close()
	stop()
	_, addr2, _ := startTestBroker(t, "--data-dir", dir)
	after := listConfigResources(t, newClient(t, addr2), 1, kmsg.ConfigResourceTypeGroupConfig)
	if got, want := resourcesOf(after, kmsg.ConfigResourceTypeGroupConfig), []string{long, "lcr-g"}; !slices.Equal(got, want) {
		t.Fatalf("after a restart groups %q, want %q", got, want)
	}
}

// TestListConfigResourcesNeedsDescribeConfigs: with --authorizer=acl the
// list needs DESCRIBE_CONFIGS on the cluster (implied by ALTER_CONFIGS),
// as Kafka's; without it the answer is CLUSTER_AUTHORIZATION_FAILED.
func TestListConfigResourcesNeedsDescribeConfigs(t *testing.T) {
	addr, _ := aclBroker(t)
	cl := newClient(t, addr)
	if r := listConfigResources(t, cl, 1); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || len(r.ConfigResources) != 0 {
		t.Fatalf("without an ACL: code %d, %d resources; want CLUSTER_AUTHORIZATION_FAILED", r.ErrorCode, len(r.ConfigResources))
	}
	mustCreateACLs(t, newAdmin(t, addr), kadm.NewACLs().Clusters().Allow(anon).Operations(kadm.OpAlterConfigs))
	if r := listConfigResources(t, cl, 1, kmsg.ConfigResourceTypeBroker); r.ErrorCode != 0 || len(r.ConfigResources) != 1 {
		t.Fatalf("with ALTER_CONFIGS: code %d, %d resources", r.ErrorCode, len(r.ConfigResources))
	}
}
