package conn

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateFeatures (key 57): v0-2. kaas's feature levels are fixed by its
// build (features.go): asking for the level already finalized succeeds and
// changes nothing, any other level is INVALID_UPDATE_VERSION, as Kafka
// answers a level its controller does not support. Errors go in the
// top-level ErrorCode (no ErrorResponse).
func init() {
	serve(API{Key: kmsg.UpdateFeatures.Int16(), MinVersion: 0, MaxVersion: 2, Handle: handleUpdateFeatures})
}

// Upgrade types of UpdateFeatures v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	upgradeTypeUpgrade         int8 = 1
	upgradeTypeSafeDowngrade   int8 = 2
	upgradeTypeUnsafeDowngrade int8 = 3
)

// handleUpdateFeatures answers from the fixed feature table; the request
// changes nothing, so ValidateOnly gets the same answer.
func handleUpdateFeatures(r *Request) Pending {
	return Ready(updateFeatures(r.Body.(*kmsg.UpdateFeaturesRequest)))
}

// updateFeatures validates every update; the request is all or nothing, as
// Kafka 4's: the first refused update is the top-level error (with no
// per-feature results), else v0-1 list every feature as updated.
func updateFeatures(req *kmsg.UpdateFeaturesRequest) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	seen := make(map[string]bool, len(req.FeatureUpdates))
	for _, u := range req.FeatureUpdates {
		if seen[u.Feature] {
			resp.ErrorCode = kerr.InvalidRequest.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("feature %s is updated twice", u.Feature))
			return resp
		}
		seen[u.Feature] = true
		if msg := featureUpdateRefusal(req.Version, u); msg != "" {
			resp.ErrorCode = kerr.InvalidUpdateVersion.Code
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Invalid update version %d for feature %s. %s", u.MaxVersionLevel, u.Feature, msg))
			return resp
		}
	}
	if req.Version < 2 {
		for _, u := range req.FeatureUpdates {
			res := kmsg.NewUpdateFeaturesResponseResult()
			res.Feature = u.Feature
			resp.Results = append(resp.Results, res)
		}
	}
	return resp
}

// featureUpdateRefusal is why u cannot be applied, or "" when it asks for
// the level already finalized. A feature kaas does not know is at level 0,
// as in Kafka, so setting it to 0 changes nothing.
func featureUpdateRefusal(version int16, u kmsg.UpdateFeaturesRequestFeatureUpdate) string {
	upgradeType := u.UpgradeType
	if version == 0 {
		upgradeType = upgradeTypeUpgrade
		if u.AllowDowngrade {
			upgradeType = upgradeTypeSafeDowngrade
		}
	}
	if upgradeType < upgradeTypeUpgrade || upgradeType > upgradeTypeUnsafeDowngrade {
		return fmt.Sprintf("Upgrade type %d is not one of 1 (upgrade), 2 (safe downgrade), 3 (unsafe downgrade).", upgradeType)
	}
	if u.MaxVersionLevel < 0 {
		return "A feature version cannot be less than 0."
	}
	level, _ := featureLevel(u.Feature)
	if u.MaxVersionLevel != level {
		return fmt.Sprintf("kaas runs %s at level %d only; its feature levels are fixed by the build.", u.Feature, level)
	}
	return ""
}
