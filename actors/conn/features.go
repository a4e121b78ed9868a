package conn

import "github.com/twmb/franz-go/pkg/kmsg"

// feature is one KIP-584 feature at the single level this build runs. kaas
// has no feature-upgrade machinery: what a level would switch on is what the
// API table (ApiVersions) serves, so each level is fixed by the build and
// reported both as the supported range (level-level) and as the finalized
// level.
type feature struct {
	Name  string
	Level int16
}

// features are the levels kaas reports, named and numbered as Apache Kafka
// 4.2 does (MetadataVersion, GroupVersion, ShareVersion, StreamsVersion,
// TransactionVersion), chosen so that no client switches to a protocol kaas
// does not serve:
//   - metadata.version 29 (4.2-IV1), Kafka 4.2's latest level, whose
//     defaults switch on share groups and streams groups. Clients do not
//     key behaviour on it; kaas's API versions are those of Kafka 4.2.
//   - group.version 1: KIP-848 consumer groups are served
//     (ConsumerGroupHeartbeat and ConsumerGroupDescribe).
//   - share.version 2: share groups (KIP-932) are served (ShareGroupHeartbeat,
//     ShareFetch, ShareAcknowledge and their admin APIs) with their
//     dead-letter queue (KIP-1191), which level 2 adds.
//   - streams.version 1: streams groups (KIP-1071) are served
//     (StreamsGroupHeartbeat and StreamsGroupDescribe), as Kafka 4.2 serves
//     them from 4.2-IV1.
//   - transaction.version 2: the transaction protocol v2 of KIP-890 part 2
//     (Produce v12 adds partitions to a transaction, TxnOffsetCommit v5
//     adds the group, EndTxn v5 bumps the epoch), which Kafka 4 clients
//     (the Java producer, franz-go) use at this level. Clients that do not
//     know the feature keep the classic protocol, also served.
//
// kraft.version and eligible.leader.replicas.version are not reported: kaas
// has no KRaft quorum and keeps one copy of each partition.
var features = []feature{
	{Name: "group.version", Level: 1},
	{Name: "metadata.version", Level: 29},
	{Name: "share.version", Level: 2},
	{Name: "streams.version", Level: 1},
	{Name: "transaction.version", Level: 2},
}

// finalizedFeaturesEpoch is the epoch ApiVersions reports the finalized
// levels under. The levels change only with the build, so the epoch is a
// constant, raised whenever a level in features changes (clients keep the
// levels of the highest epoch they have seen).
const finalizedFeaturesEpoch = 5

// featureLevel is the level this build runs name at; false for a feature
// kaas does not know.
func featureLevel(name string) (int16, bool) {
	for _, f := range features {
		if f.Name == name {
			return f.Level, true
		}
	}
	return 0, false
}

// addFeatures fills an ApiVersions response's KIP-584 fields (tagged fields
// of v3+) as Kafka 4 does: supported ranges, leaving out before v4 those
// starting at level 0 (older clients reject them, KAFKA-17011), and the
// finalized levels above 0, each with its min and max at the level.
func addFeatures(resp *kmsg.ApiVersionsResponse, version int16) {
	if version < 3 {
		return
	}
	for _, f := range features {
		if f.Level > 0 || version >= 4 {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Level, f.Level
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		}
		if f.Level > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.Name, f.Level, f.Level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	resp.FinalizedFeaturesEpoch = finalizedFeaturesEpoch
}
