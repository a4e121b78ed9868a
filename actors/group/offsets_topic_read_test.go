package group

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/groupstore"
)

func TestFoldOffsetsRecords(t *testing.T) {
	offset := func(group, topic string, p int32, at int64) offsetsKV {
		k := kmsg.NewOffsetCommitKey()
		k.Version, k.Group, k.Topic, k.Partition = 1, group, topic, p
		kv := offsetsKV{key: k.AppendTo(nil)}
		if at >= 0 {
			v := kmsg.NewOffsetCommitValue()
			v.Version, v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = 3, at, 2, "m", 1000+at
			kv.value = v.AppendTo(nil)
		}
		return kv
	}
	tombstone := func(group, topic string, p int32) offsetsKV { return offset(group, topic, p, -1) }
	meta := func(group, value string) offsetsKV {
		kv := offsetsKV{key: groupMetadataKey(group)}
		if value != "" {
			kv.value = []byte(value)
		}
		return kv
	}
	v0 := func() offsetsKV { // Kafka's key version 0, value version 1
		k := kmsg.NewOffsetCommitKey()
		k.Version, k.Group, k.Topic, k.Partition = 0, "old", "t", 0
		v := kmsg.NewOffsetCommitValue()
		v.Version, v.Offset, v.CommitTimestamp = 1, 9, 5
		return offsetsKV{key: k.AppendTo(nil), value: v.AppendTo(nil)}
	}
	other := func() offsetsKV { // a KIP-848 group's metadata key (version 3)
		return offsetsKV{key: []byte{0, 3, 0, 1, 'k'}, value: []byte{0, 0}}
	}
	show := func(live map[string]*topicGroup) []string {
		var out []string
		for group, g := range live {
			for tp, c := range g.offsets {
				out = append(out, fmt.Sprintf("%s/%s/%d=%d/%d/%s/%d", group, tp.Topic, tp.Partition, c.Offset, c.LeaderEpoch, c.Metadata, c.CommitTime))
			}
			if g.meta != nil {
				out = append(out, fmt.Sprintf("%s=%s", group, g.meta))
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		name string
		recs []offsetsKV
		want []string
	}{
		{"nothing", nil, nil},
		{"the last value wins", []offsetsKV{offset("g", "t", 0, 1), offset("g", "t", 1, 2), offset("g", "t", 0, 3)},
			[]string{"g/t/0=3/2/m/1003", "g/t/1=2/2/m/1002"}},
		{"a tombstone removes", []offsetsKV{offset("g", "t", 0, 1), offset("g", "t", 1, 2), tombstone("g", "t", 0)},
			[]string{"g/t/1=2/2/m/1002"}},
		{"a value after a tombstone", []offsetsKV{offset("g", "t", 0, 1), tombstone("g", "t", 0), offset("g", "t", 0, 4)},
			[]string{"g/t/0=4/2/m/1004"}},
		{"a group with every key tombstoned is gone", []offsetsKV{offset("g", "t", 0, 1), meta("g", "v1"), tombstone("g", "t", 0), meta("g", "")},
			nil},
		{"group metadata: the last value", []offsetsKV{meta("g", "v1"), meta("h", "x"), meta("g", "v2")},
			[]string{"g=v2", "h=x"}},
		{"group metadata tombstoned, offsets kept", []offsetsKV{offset("g", "t", 0, 1), meta("g", "v1"), meta("g", "")},
			[]string{"g/t/0=1/2/m/1001"}},
		{"Kafka's older versions", []offsetsKV{v0()}, []string{"old/t/0=9/-1//5"}},
		{"other record kinds and broken keys skipped", []offsetsKV{other(), {key: []byte{0}}, {key: []byte{0, 1, 0xff}}},
			nil},
		{"an unreadable value is live, equal to no commit", []offsetsKV{{key: offset("g", "t", 0, 1).key, value: []byte{0, 3}}},
			[]string{fmt.Sprintf("g/t/0=%d/0//0", int64(unreadableOffset))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(foldOffsetsRecords(tc.recs)); !slices.Equal(got, tc.want) {
				t.Fatalf("live %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOffsetsFoldKeepsNoRecord: the fold keeps what it decoded, not the
// fetched bytes (which a kept slice would hold in memory, a fetch's worth
// each): a GroupMetadata value is copied.
func TestOffsetsFoldKeepsNoRecord(t *testing.T) {
	f := offsetsFold{}
	value := []byte("value")
	f.add(offsetsKV{key: groupMetadataKey("g"), value: value})
	copy(value, "XXXXX")
	if got := string(f.live()["g"].meta); got != "value" {
		t.Fatalf("GroupMetadata value %q after the fetched bytes changed, want %q", got, "value")
	}
}

func TestSplitSlotRead(t *testing.T) {
	g := func(offsets int) *topicGroup {
		tg := &topicGroup{offsets: map[groupstore.TP]groupstore.Commit{}}
		for p := range int32(offsets) {
			tg.offsets[groupstore.TP{Topic: "t", Partition: p}] = groupstore.Commit{Offset: 1}
		}
		return tg
	}
	live := map[string]*topicGroup{"loaded": g(1), "stored": g(2), "deleted": g(3), "deleted-too": g(1)}
	for _, tc := range []struct {
		name    string
		actors  []string
		stored  []string
		idle    []string
		hand    map[string]int // group -> offsets handed (-1: nothing)
		orphans []string
		keep    []string
	}{
		{"every group stored, one loaded", []string{"loaded"}, []string{"loaded", "stored", "deleted", "deleted-too"}, nil,
			map[string]int{"loaded": 1}, nil, []string{"deleted", "deleted-too", "stored"}},
		{"groups deleted before the read are orphans", []string{"loaded"}, []string{"loaded", "stored"}, nil,
			map[string]int{"loaded": 1}, []string{"deleted", "deleted-too"}, []string{"deleted", "deleted-too", "stored"}},
		{"a group whose actor went idle is an orphan, even if listed", []string{"loaded"}, []string{"loaded", "stored", "deleted", "deleted-too"}, []string{"deleted"},
			map[string]int{"loaded": 1}, []string{"deleted"}, []string{"deleted", "deleted-too", "stored"}},
		{"an actor of a group the topic does not hold is handed nothing", []string{"new", "stored"}, []string{"stored"}, nil,
			map[string]int{"new": -1, "stored": 2}, []string{"deleted", "deleted-too", "loaded"}, []string{"deleted", "deleted-too", "loaded"}},
		{"an actor of a group no longer stored (deleted since) is handed its keys", []string{"deleted"}, nil, nil,
			map[string]int{"deleted": 3}, []string{"deleted-too", "loaded", "stored"}, []string{"deleted-too", "loaded", "stored"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := func(names []string) map[string]bool {
				m := map[string]bool{}
				for _, n := range names {
					m[n] = true
				}
				return m
			}
			hand, orphans, keep := splitSlotRead(live, tc.actors, set(tc.stored), set(tc.idle))
			got := map[string]int{}
			for name, h := range hand {
				got[name] = -1
				if h != nil {
					got[name] = len(h.offsets)
				}
			}
			if !maps.Equal(got, tc.hand) {
				t.Errorf("handed %v, want %v", got, tc.hand)
			}
			if !slices.Equal(orphans, tc.orphans) {
				t.Errorf("orphans %v, want %v", orphans, tc.orphans)
			}
			if k := slices.Sorted(maps.Keys(keep)); !slices.Equal(k, tc.keep) {
				t.Errorf("kept %v, want %v", k, tc.keep)
			}
		})
	}
}
