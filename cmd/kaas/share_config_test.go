package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// alterGroupConfigs sends one IncrementalAlterConfigs SET of kvs on the
// GROUP resource group and returns its error code and message.
func alterGroupConfigs(t *testing.T, cl *kgo.Client, group string, kvs ...string) (int16, string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = kvs[i], kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Resources[0]
	msg := ""
	if r.ErrorMessage != nil {
		msg = *r.ErrorMessage
	}
	return r.ErrorCode, msg
}

// describeGroupConfigs returns the group's configs by name.
func describeGroupConfigs(t *testing.T, cl *kgo.Client, group string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("describe group configs: %v", err)
	}
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, c := range resp.Resources[0].Configs {
		out[c.Name] = c
	}
	return out
}

// TestShareGroupConfigsAppliedAndDurable: share-group configs set through
// IncrementalAlterConfigs on the GROUP resource are validated, described,
// kept across a restart on the data dir, and override the broker's
// settings: with the broker at latest, a group set to earliest reads the
// records produced before it joined.
func TestShareGroupConfigsAppliedAndDurable(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--data-dir", dir, "--share-auto-offset-reset", "latest"}
	_, addr, stop := startTestBroker(t, args...)
	const topic, group, n = "share-cfg", "sg-cfg", 5
	createTopic(t, addr, topic, 1, nil)
	produceKeys(t, addr, topic, 0, n)
	cl := newClient(t, addr)

	for _, bad := range [][]string{
		{"share.record.lock.duration.ms", "1000"},
		{"share.record.lock.duration.ms", "soon"},
		{"share.auto.offset.reset", "sometime"},
		{"retention.ms", "1000"},
	} {
		if code, msg := alterGroupConfigs(t, cl, group, bad...); code != kerr.InvalidConfig.Code || msg == "" {
			t.Fatalf("SET %v: code %d %q, want INVALID_CONFIG with a reason", bad, code, msg)
		}
	}
	if code, msg := alterGroupConfigs(t, cl, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "15000"); code != 0 {
		t.Fatalf("SET: code %d %q", code, msg)
	}
	got := describeGroupConfigs(t, cl, group)
	for name, want := range map[string]string{"share.auto.offset.reset": "earliest", "share.record.lock.duration.ms": "15000"} {
		c := got[name]
		if c.Value == nil || *c.Value != want || c.Source != 8 {
			t.Fatalf("%s described as %+v, want %s from GROUP_CONFIG", name, c, want)
		}
	}
	if c := got["share.delivery.count.limit"]; c.Value == nil || *c.Value != "5" || c.Source != 5 {
		t.Fatalf("share.delivery.count.limit described as %+v, want the default 5", c)
	}

	sc := shareConsumer(t, addr, group, topic)
	ctx := ctxT(t, 60*time.Second)
	seen := map[string]bool{}
	for len(seen) < n {
		fs := sc.PollRecords(ctx, 100)
		if ctx.Err() != nil {
			t.Fatalf("group at earliest saw %d of the %d records produced before it joined: %v", len(seen), n, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
		sc.MarkAcks(kgo.AckAccept)
	}
	sc.Close()
	stop()

	_, addr2, _ := startTestBroker(t, args...)
	cl2 := newClient(t, addr2)
	got = describeGroupConfigs(t, cl2, group)
	if c := got["share.auto.offset.reset"]; c.Value == nil || *c.Value != "earliest" || c.Source != 8 {
		t.Fatalf("after a restart share.auto.offset.reset is %+v, want earliest from GROUP_CONFIG", c)
	}

	// The legacy AlterConfigs replaces the group's whole set.
	req := kmsg.NewPtrAlterConfigsRequest()
	res := kmsg.NewAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.delivery.count.limit", kmsg.StringPtr("3")
	res.Configs = append(res.Configs, c)
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl2)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("AlterConfigs: %v %+v", err, resp)
	}
	got = describeGroupConfigs(t, cl2, group)
	if c := got["share.delivery.count.limit"]; c.Value == nil || *c.Value != "3" || c.Source != 8 {
		t.Fatalf("after AlterConfigs share.delivery.count.limit is %+v, want 3", c)
	}
	if c := got["share.auto.offset.reset"]; c.Value == nil || *c.Value != "latest" || c.Source != 5 {
		t.Fatalf("after AlterConfigs share.auto.offset.reset is %+v, want the broker's latest", c)
	}
}

// TestGroupConfigsNeedGroupACLs: with --authorizer=acl, describing a
// group's configs needs DESCRIBE_CONFIGS on the group (implied by
// ALTER_CONFIGS), altering them ALTER_CONFIGS; a refusal is
// GROUP_AUTHORIZATION_FAILED.
func TestGroupConfigsNeedGroupACLs(t *testing.T) {
	addr, _ := aclBroker(t)
	adm := newAdmin(t, addr)
	cl := newClient(t, addr)
	describe := func() int16 {
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg-acl"
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Resources[0].ErrorCode
	}
	if code := describe(); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("describe without an ACL: code %d, want GROUP_AUTHORIZATION_FAILED", code)
	}
	if code, _ := alterGroupConfigs(t, cl, "sg-acl", "share.auto.offset.reset", "earliest"); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter without an ACL: code %d, want GROUP_AUTHORIZATION_FAILED", code)
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Groups("sg-acl").Allow(anon).Operations(kadm.OpAlterConfigs))
	if code, msg := alterGroupConfigs(t, cl, "sg-acl", "share.auto.offset.reset", "earliest"); code != 0 {
		t.Fatalf("alter with ALTER_CONFIGS: code %d %q", code, msg)
	}
	if code := describe(); code != 0 {
		t.Fatalf("describe with ALTER_CONFIGS: code %d", code)
	}
	if code, _ := alterGroupConfigs(t, cl, "sg-other", "share.auto.offset.reset", "earliest"); code != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alter another group: code %d, want GROUP_AUTHORIZATION_FAILED", code)
	}
}
