package conn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFeatureLevels pins the reported levels: each makes clients use
// protocols kaas serves (transaction.version 2: KIP-890 part 2, whose
// Produce v12 is served here; share.version 2: share groups with their
// dead-letter queue, served by actors/share, TestFeatures checks; streams.version 1: streams groups,
// served by actors/group and actors/streams), and changing a level means raising
// the epoch.
func TestFeatureLevels(t *testing.T) {
	want := map[string]int16{"metadata.version": 29, "group.version": 1, "share.version": 2, "streams.version": 1, "transaction.version": 2}
	if a, ok := coreAPIs[kmsg.Produce.Int16()]; !ok || a.MaxVersion < 12 {
		t.Errorf("transaction.version 2 without Produce v12")
	}
	if len(features) != len(want) {
		t.Fatalf("%d features, want %d", len(features), len(want))
	}
	for name, level := range want {
		if got, ok := featureLevel(name); !ok || got != level {
			t.Errorf("%s at %d (known %v), want %d", name, got, ok, level)
		}
	}
	if finalizedFeaturesEpoch != 5 {
		t.Errorf("epoch %d: the levels above are those of epoch 5", finalizedFeaturesEpoch)
	}
}

func TestApiVersionsFeatures(t *testing.T) {
	type feat struct{ min, max int16 }
	for _, tc := range []struct {
		version   int16
		supported map[string]feat
		finalized map[string]int16
		epoch     int64
	}{
		{version: 0, epoch: -1},
		{version: 2, epoch: -1},
		{
			version:   3,
			supported: map[string]feat{"metadata.version": {29, 29}, "group.version": {1, 1}, "share.version": {2, 2}, "streams.version": {1, 1}, "transaction.version": {2, 2}},
			finalized: map[string]int16{"metadata.version": 29, "group.version": 1, "share.version": 2, "streams.version": 1, "transaction.version": 2},
			epoch:     5,
		},
		{
			version:   4,
			supported: map[string]feat{"metadata.version": {29, 29}, "group.version": {1, 1}, "share.version": {2, 2}, "streams.version": {1, 1}, "transaction.version": {2, 2}},
			finalized: map[string]int16{"metadata.version": 29, "group.version": 1, "share.version": 2, "streams.version": 1, "transaction.version": 2},
			epoch:     5,
		},
	} {
		t.Run(fmt.Sprintf("v%d", tc.version), func(t *testing.T) {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = tc.version
			addFeatures(resp, tc.version)
			if resp.FinalizedFeaturesEpoch != tc.epoch {
				t.Errorf("epoch %d, want %d", resp.FinalizedFeaturesEpoch, tc.epoch)
			}
			if len(resp.SupportedFeatures) != len(tc.supported) {
				t.Errorf("supported %+v, want %v", resp.SupportedFeatures, tc.supported)
			}
			for _, f := range resp.SupportedFeatures {
				if w, ok := tc.supported[f.Name]; !ok || w != (feat{f.MinVersion, f.MaxVersion}) {
					t.Errorf("supported %s %d-%d, want %v (listed %v)", f.Name, f.MinVersion, f.MaxVersion, w, ok)
				}
			}
			if len(resp.FinalizedFeatures) != len(tc.finalized) {
				t.Errorf("finalized %+v, want %v", resp.FinalizedFeatures, tc.finalized)
			}
			for _, f := range resp.FinalizedFeatures {
				if w, ok := tc.finalized[f.Name]; !ok || f.MaxVersionLevel != w || f.MinVersionLevel != w {
					t.Errorf("finalized %s %d-%d, want %d (listed %v)", f.Name, f.MinVersionLevel, f.MaxVersionLevel, w, ok)
				}
			}
			// The fields survive the wire at this version.
			var back kmsg.ApiVersionsResponse
			back.Version = tc.version
			if err := back.ReadFrom(resp.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if len(back.FinalizedFeatures) != len(tc.finalized) || back.FinalizedFeaturesEpoch != tc.epoch {
				t.Errorf("decoded %+v", back)
			}
		})
	}
}

func TestUpdateFeatures(t *testing.T) {
	type upd struct {
		name      string
		level     int16
		upgrade   int8
		downgrade bool // v0 AllowDowngrade
	}
	ok := int16(0)
	for _, tc := range []struct {
		name    string
		version int16
		updates []upd
		code    int16
		msg     string // in the top-level message
	}{
		{name: "finalized level is a no-op", version: 1, updates: []upd{{"metadata.version", 29, 1, false}, {"group.version", 1, 1, false}}, code: ok},
		{name: "transaction.version stays 2", version: 1, updates: []upd{{"transaction.version", 2, 1, false}}, code: ok},
		{name: "unknown feature at 0", version: 1, updates: []upd{{"kraft.version", 0, 1, false}}, code: ok},
		{name: "v0 same level", version: 0, updates: []upd{{"group.version", 1, 0, false}}, code: ok},
		{name: "v2 same level", version: 2, updates: []upd{{"metadata.version", 29, 1, false}}, code: ok},
		{name: "transaction protocol v1", version: 1, updates: []upd{{"transaction.version", 1, 2, false}}, code: kerr.InvalidUpdateVersion.Code, msg: "transaction.version at level 2 only"},
		{name: "metadata.version upgrade", version: 2, updates: []upd{{"metadata.version", 30, 1, false}}, code: kerr.InvalidUpdateVersion.Code, msg: "metadata.version at level 29"},
		{name: "group.version downgrade", version: 1, updates: []upd{{"group.version", 0, 2, false}}, code: kerr.InvalidUpdateVersion.Code, msg: "group.version"},
		{name: "v0 delete", version: 0, updates: []upd{{"group.version", 0, 0, true}}, code: kerr.InvalidUpdateVersion.Code, msg: "group.version"},
		{name: "unknown feature above 0", version: 1, updates: []upd{{"kraft.version", 1, 1, false}}, code: kerr.InvalidUpdateVersion.Code, msg: "kraft.version at level 0"},
		{name: "negative level", version: 1, updates: []upd{{"transaction.version", -1, 3, false}}, code: kerr.InvalidUpdateVersion.Code, msg: "less than 0"},
		{name: "unknown upgrade type", version: 1, updates: []upd{{"metadata.version", 28, 0, false}}, code: kerr.InvalidUpdateVersion.Code, msg: "Upgrade type 0"},
		{name: "one refusal fails all", version: 1, updates: []upd{{"group.version", 1, 1, false}, {"metadata.version", 24, 2, false}}, code: kerr.InvalidUpdateVersion.Code, msg: "version 24 for feature metadata.version"},
		{name: "duplicate", version: 1, updates: []upd{{"group.version", 1, 1, false}, {"group.version", 1, 1, false}}, code: kerr.InvalidRequest.Code, msg: "twice"},
	} {
		for _, validateOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/validate=%v", tc.name, validateOnly), func(t *testing.T) {
				req := kmsg.NewPtrUpdateFeaturesRequest()
				req.Version, req.ValidateOnly = tc.version, validateOnly
				for _, u := range tc.updates {
					fu := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
					fu.Feature, fu.MaxVersionLevel, fu.UpgradeType, fu.AllowDowngrade = u.name, u.level, u.upgrade, u.downgrade
					req.FeatureUpdates = append(req.FeatureUpdates, fu)
				}
				resp := updateFeatures(req)
				if resp.ErrorCode != tc.code {
					t.Fatalf("error %d (%v), want %d", resp.ErrorCode, resp.ErrorMessage, tc.code)
				}
				if tc.code != ok {
					if resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, tc.msg) {
						t.Errorf("message %v, want it to mention %q", resp.ErrorMessage, tc.msg)
					}
					if len(resp.Results) != 0 {
						t.Errorf("results %+v with a top-level error", resp.Results)
					}
					return
				}
				wantResults := len(tc.updates)
				if tc.version >= 2 {
					wantResults = 0 // v2 has no per-feature results
				}
				if len(resp.Results) != wantResults {
					t.Fatalf("%d results, want %d", len(resp.Results), wantResults)
				}
				for i, r := range resp.Results {
					if r.Feature != tc.updates[i].name || r.ErrorCode != 0 {
						t.Errorf("result %+v", r)
					}
				}
			})
		}
	}
	// Nothing any request asked changed the levels.
	if l, _ := featureLevel("transaction.version"); l != 2 {
		t.Errorf("transaction.version now %d", l)
	}
}
