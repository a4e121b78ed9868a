package main

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestFeatures: kadm reads the KIP-584 features from ApiVersions (what
// `kafka-features.sh describe` shows) and UpdateFeatures accepts the
// finalized levels only; with the ACL authorizer it needs ALTER on the
// cluster.
func TestFeatures(t *testing.T) {
	_, addr := testBroker(t)
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 30*time.Second)

	vs, err := adm.ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 {
		t.Fatalf("%d brokers answered ApiVersions", len(vs))
	}
	for _, v := range vs {
		if v.Err != nil {
			t.Fatal(v.Err)
		}
		raw := v.Raw()
		if raw.FinalizedFeaturesEpoch < 0 {
			t.Fatalf("finalized features epoch %d: no finalized features", raw.FinalizedFeaturesEpoch)
		}
		finalized := map[string]int16{}
		kversion.FromApiVersionsResponse(raw).EachFinalizedFeature(func(name string, level int16) { finalized[name] = level })
		want := map[string]int16{"metadata.version": 29, "group.version": 1, "share.version": 2, "streams.version": 1, "transaction.version": 2}
		if len(finalized) != len(want) {
			t.Errorf("finalized %v, want %v", finalized, want)
		}
		for name, level := range want {
			if finalized[name] != level {
				t.Errorf("finalized %s = %d, want %d", name, finalized[name], level)
			}
		}
		// share.version 2 says share groups are served (with their dead-letter queue).
		served := map[int16]bool{}
		for _, k := range raw.ApiKeys {
			served[k.ApiKey] = true
		}
		for _, k := range []kmsg.Key{kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe, kmsg.ShareFetch, kmsg.ShareAcknowledge} {
			if !served[k.Int16()] {
				t.Errorf("share.version 2 without %s in ApiVersions", kmsg.NameForKey(k.Int16()))
			}
		}
		// streams.version 1 says streams groups are served.
		for _, k := range []kmsg.Key{kmsg.StreamsGroupHeartbeat, kmsg.StreamsGroupDescribe} {
			if !served[k.Int16()] {
				t.Errorf("streams.version 1 without %s in ApiVersions", kmsg.NameForKey(k.Int16()))
			}
		}
		supported := map[string][2]int16{}
		kversion.FromApiVersionsResponse(raw).EachSupportedFeature(func(name string, min, max int16) { supported[name] = [2]int16{min, max} })
		if r := supported["transaction.version"]; r != [2]int16{2, 2} {
			t.Errorf("transaction.version supported %v, want 2-2 (all supported: %v)", r, supported)
		}
	}

	for _, validateOnly := range []bool{true, false} {
		res, err := adm.UpdateFeatures(ctx, validateOnly,
			kadm.FeatureUpdate{Feature: "metadata.version", MaxVersionLevel: 29, UpgradeType: 1},
			kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1},
			kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 2, UpgradeType: 1})
		if err != nil || res.Error() != nil || len(res) != 3 {
			t.Fatalf("validateOnly=%v: updating to the finalized levels: %v %+v", validateOnly, err, res)
		}
		// A downgrade to the classic transaction protocol is refused.
		res, err = adm.UpdateFeatures(ctx, validateOnly,
			kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: 0, UpgradeType: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := res["transaction.version"].Err; !errors.Is(got, kerr.InvalidUpdateVersion) {
			t.Fatalf("validateOnly=%v: transaction.version 0: %v, want INVALID_UPDATE_VERSION", validateOnly, got)
		}
	}

	// With the ACL authorizer and no ACL, ApiVersions still answers and
	// UpdateFeatures is CLUSTER_AUTHORIZATION_FAILED.
	_, aclAddr := testBroker(t, "--authorizer", "acl")
	aclAdm := newAdmin(t, aclAddr)
	if _, err := aclAdm.ApiVersions(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = aclAdm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1})
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("UpdateFeatures without ALTER on the cluster: %v", err)
	}
}
