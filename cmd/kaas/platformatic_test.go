package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The @platformatic/kafka client (npm, a Kafka client written from scratch
// in JavaScript, with its own KIP-848 consumer and transactions), driven by
// the scripts in testdata/platformatic against the kaas binary.

func platformaticDir(t *testing.T) string {
	t.Helper()
	return npmProject(t, "platformatic", "@platformatic/kafka")
}

// runPlatformatic runs script and decodes its result line into out.
func runPlatformatic(t *testing.T, timeout time.Duration, script string, out any, args ...string) {
	t.Helper()
	res := runNode(t, platformaticDir(t), timeout, script, args...)
	if err := json.Unmarshal([]byte(res.Stdout), out); err != nil {
		t.Fatalf("%s output: %v\n%s", script, err, res.Stdout)
	}
}

// TestExternalPlatformaticProduceConsume: an idempotent acks=all producer
// with each codec the client has on this Node.js (zstd needs Node.js 22),
// a consumer group committing every record: all records read once, in
// order per partition, keys kept to one partition, headers intact, and
// the group's committed offsets cover them all.
func TestExternalPlatformaticProduceConsume(t *testing.T) {
	k := startKaas(t)
	const n = 300
	for _, codec := range []string{"none", "gzip", "snappy", "lz4"} {
		t.Run(codec, func(t *testing.T) {
			topic := "platformatic-" + codec
			var out struct {
				Created []struct {
					Name       string `json:"name"`
					Partitions int    `json:"partitions"`
				} `json:"created"`
				Sent     int `json:"sent"`
				Consumed []struct {
					Partition int32  `json:"partition"`
					Offset    int64  `json:"offset"`
					Key       string `json:"key"`
					Value     string `json:"value"`
					Seq       string `json:"seq"`
				} `json:"consumed"`
				Committed string `json:"committed"`
			}
			runPlatformatic(t, 60*time.Second, "produce-consume.mjs", &out, k.Addr, topic, strconv.Itoa(n), codec)
			if len(out.Created) != 1 || out.Created[0].Name != topic || out.Created[0].Partitions != 3 {
				t.Errorf("createTopics: %+v", out.Created)
			}
			got := make([]consumed, len(out.Consumed))
			for i, c := range out.Consumed {
				got[i] = consumed{Partition: c.Partition, Offset: c.Offset, Key: c.Key, Value: c.Value}
				if want := fmt.Sprintf("value-%05s", c.Seq); c.Value != want {
					t.Errorf("record %q carries header seq=%q", c.Value, c.Seq)
				}
			}
			checkConsumed(t, keyedMessages("value", n, 10, ""), got, 3)
			if out.Committed != strconv.Itoa(n) {
				t.Errorf("committed offsets sum to %s, want %d", out.Committed, n)
			}
		})
	}
}

// TestExternalPlatformaticKIP848: four KIP-848 consumers of the client's own
// implementation (groupProtocol "consumer") join and leave one group while
// records are produced, the last staying until it has all; every record is
// processed (at least once: a member may process a record it fetched just
// before its partition moved), and the group ends empty, listed as a
// consumer group.
func TestExternalPlatformaticKIP848(t *testing.T) {
	k := startKaas(t)
	const n = 400
	var out struct {
		Counts   map[string]int `json:"counts"`
		Assigned map[string][]struct {
			Topic      string  `json:"topic"`
			Partitions []int32 `json:"partitions"`
		} `json:"assigned"`
		Group struct {
			State     string `json:"state"`
			GroupType string `json:"groupType"`
		} `json:"group"`
	}
	runPlatformatic(t, 90*time.Second, "kip848-churn.mjs", &out, k.Addr, "platformatic-848", strconv.Itoa(n))
	missing, again := 0, 0
	for i := range n {
		switch c := out.Counts[fmt.Sprintf("v%d", i)]; {
		case c == 0:
			missing++
		case c > 1:
			again++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d records never processed", missing, n)
	}
	t.Logf("%d of %d records processed more than once", again, n)
	if len(out.Assigned) != 4 {
		t.Errorf("members that ran: %v, want 4", out.Assigned)
	}
	if out.Group.State != "EMPTY" || out.Group.GroupType != "consumer" {
		t.Errorf("group after every member left: %+v, want an EMPTY consumer group", out.Group)
	}
}

// TestExternalPlatformaticTransactions: the client's consume-transform-produce
// transaction with the group's offsets added, then an aborted one:
// read_committed reads only the committed records, read_uncommitted the
// aborted one too, and the group's offsets moved with the commit.
func TestExternalPlatformaticTransactions(t *testing.T) {
	k := startKaas(t)
	var out struct {
		ReadCommitted   []string `json:"readCommitted"`
		ReadUncommitted []string `json:"readUncommitted"`
		Committed       string   `json:"committed"`
	}
	runPlatformatic(t, 60*time.Second, "transactions.mjs", &out, k.Addr, "platformatic-txn")
	if want := []string{"out1", "out2", "out3", "out4"}; !slices.Equal(out.ReadCommitted, want) {
		t.Errorf("read_committed: %q, want %q", out.ReadCommitted, want)
	}
	if want := []string{"aborted", "out1", "out2", "out3", "out4"}; !slices.Equal(out.ReadUncommitted, want) {
		t.Errorf("read_uncommitted: %q, want %q", out.ReadUncommitted, want)
	}
	if out.Committed != "4" {
		t.Errorf("group offsets committed by the transaction sum to %s, want 4", out.Committed)
	}
}

// platformaticStep is one admin call's result: its value, or the broker's
// error names.
type platformaticStep struct {
	Value json.RawMessage `json:"value"`
	Error []string        `json:"error"`
}

// TestExternalPlatformaticAdmin: the client's Admin calls, each checked for
// the answer a Kafka broker gives.
func TestExternalPlatformaticAdmin(t *testing.T) {
	k := startKaas(t)
	const topic = "platformatic-admin"
	var steps map[string]platformaticStep
	runPlatformatic(t, 60*time.Second, "admin.mjs", &steps, k.Addr, topic)
	value := func(name string, into any) {
		t.Helper()
		s, ok := steps[name]
		if !ok || s.Error != nil {
			t.Fatalf("%s: ran %v, errors %v", name, ok, s.Error)
		}
		if into != nil {
			if err := json.Unmarshal(s.Value, into); err != nil {
				t.Fatalf("%s: %v in %s", name, err, s.Value)
			}
		}
	}
	refused := func(name, code string) {
		t.Helper()
		if s := steps[name]; !slices.Equal(s.Error, []string{code}) {
			t.Errorf("%s: errors %v, want [%s]", name, s.Error, code)
		}
	}
	type offsetsOut []struct {
		Partitions []struct {
			PartitionIndex int32  `json:"partitionIndex"`
			Offset         string `json:"offset"`
		} `json:"partitions"`
	}
	offsets := func(name string) map[int32]string {
		var o offsetsOut
		value(name, &o)
		m := map[int32]string{}
		for _, t := range o {
			for _, p := range t.Partitions {
				m[p.PartitionIndex] = p.Offset
			}
		}
		return m
	}
	type configsOut []struct {
		Configs []struct {
			Name         string `json:"name"`
			Value        string `json:"value"`
			ConfigSource int    `json:"configSource"`
		} `json:"configs"`
	}
	configs := func(name string) map[string]string {
		var c configsOut
		value(name, &c)
		m := map[string]string{}
		for _, r := range c {
			for _, e := range r.Configs {
				m[e.Name] = fmt.Sprintf("%s (source %d)", e.Value, e.ConfigSource)
			}
		}
		return m
	}
	type groupOffsetsOut []struct {
		Topics []struct {
			Partitions []struct {
				PartitionIndex  int32  `json:"partitionIndex"`
				CommittedOffset string `json:"committedOffset"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	groupOffsets := func(name string) map[int32]string {
		var g groupOffsetsOut
		value(name, &g)
		m := map[int32]string{}
		for _, gr := range g {
			for _, t := range gr.Topics {
				for _, p := range t.Partitions {
					m[p.PartitionIndex] = p.CommittedOffset
				}
			}
		}
		return m
	}
	groups := func(name string) []string {
		var g map[string]json.RawMessage
		value(name, &g)
		var ids []string
		for id := range g {
			ids = append(ids, id)
		}
		return ids
	}

	value("createTopics", nil)
	refused("createTopicsAgain", "TOPIC_ALREADY_EXISTS")
	value("createPartitions", nil)
	var meta struct {
		Topics map[string]struct {
			Partitions []struct {
				Leader int32 `json:"leader"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	value("metadata", &meta)
	if p := meta.Topics[topic].Partitions; len(p) != 4 {
		t.Errorf("metadata after createPartitions: %d partitions, want 4", len(p))
	}
	if got := offsets("latestOffsets"); !maps4(got, "2", "2", "2", "2") {
		t.Errorf("latest offsets %v, want 2 in each of 4 partitions", got)
	}
	value("deleteRecords", nil)
	if got := offsets("earliestOffsets"); !maps4(got, "1", "0", "0", "0") {
		t.Errorf("earliest offsets after deleteRecords %v, want 1 0 0 0", got)
	}
	// Source 1 is a topic's own setting, 5 the broker's default.
	if got := configs("describeConfigs"); got["retention.ms"] != "3600000 (source 1)" || got["cleanup.policy"] != "delete (source 5)" {
		t.Errorf("describeConfigs: %v", got)
	}
	value("incrementalAlterConfigs", nil)
	if got := configs("afterIncrementalAlter"); got["retention.ms"] != "7200000 (source 1)" {
		t.Errorf("after incrementalAlterConfigs: %v", got)
	}
	// AlterConfigs replaces the topic's settings: retention.ms, not named,
	// is back to the default.
	value("alterConfigs", nil)
	if got := configs("afterAlter"); got["segment.ms"] != "600000 (source 1)" || got["retention.ms"] != "604800000 (source 5)" {
		t.Errorf("after alterConfigs: %v", got)
	}
	var dirs []struct {
		Results []struct {
			Topics []struct {
				Name       string `json:"name"`
				Partitions []struct {
					PartitionIndex int32 `json:"partitionIndex"`
				} `json:"partitions"`
			} `json:"topics"`
		} `json:"results"`
	}
	value("describeLogDirs", &dirs)
	if len(dirs) != 1 || len(dirs[0].Results) != 1 || len(dirs[0].Results[0].Topics) != 1 || len(dirs[0].Results[0].Topics[0].Partitions) != 2 {
		t.Errorf("describeLogDirs of partitions 0 and 1: %+v", dirs)
	}
	value("alterGroupOffsets", nil)
	if got := groupOffsets("groupOffsets"); len(got) != 2 || got[0] != "1" || got[1] != "2" {
		t.Errorf("group offsets %v, want 0:1 1:2", got)
	}
	value("deleteGroupOffsets", nil)
	if got := groupOffsets("groupOffsetsAfterDelete"); len(got) != 1 || got[1] != "2" {
		t.Errorf("group offsets after deleting partition 0's: %v, want 1:2", got)
	}
	if ids := groups("listGroups"); !slices.Contains(ids, "g-"+topic) {
		t.Errorf("listGroups %v lacks the group", ids)
	}
	value("deleteGroups", nil)
	if ids := groups("listGroupsAfterDelete"); slices.Contains(ids, "g-"+topic) {
		t.Errorf("listGroups after deleteGroups still has the group: %v", ids)
	}
	value("alterClientQuotas", nil)
	var quotas []struct {
		Values []struct {
			Key   string  `json:"key"`
			Value float64 `json:"value"`
		} `json:"values"`
	}
	value("describeClientQuotas", &quotas)
	if len(quotas) != 1 || len(quotas[0].Values) != 1 || quotas[0].Values[0].Key != "producer_byte_rate" || quotas[0].Values[0].Value != 1048576 {
		t.Errorf("describeClientQuotas: %+v", quotas)
	}
	refused("createAcls", "SECURITY_DISABLED")
	value("deleteTopics", nil)
	var topics []string
	value("listTopicsAfterDelete", &topics)
	if slices.Contains(topics, topic) {
		t.Errorf("listTopics after deleteTopics: %v", topics)
	}
}

// maps4 reports whether m holds exactly partitions 0-3 with the values.
func maps4(m map[int32]string, v0, v1, v2, v3 string) bool {
	return len(m) == 4 && m[0] == v0 && m[1] == v1 && m[2] == v2 && m[3] == v3
}

// TestPlatformaticSASL: the client's SCRAM-SHA-512, PLAIN and OAUTHBEARER
// (a JWT the broker checks against its JWKS) over TLS produce and consume
// through a SASL_SSL listener; a wrong password fails with the broker's
// SASL_AUTHENTICATION_FAILED, an expired token with Kafka's error
// challenge, which the client's validator reads as an invalid token.
func TestPlatformaticSASL(t *testing.T) {
	dir := platformaticDir(t)
	e := newSecureEnv(t)
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, e.ca.CertPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	for mech, secret := range map[string]string{"SCRAM-SHA-512": "alice-secret", "PLAIN": "alice-secret", "OAUTHBEARER": e.token(t, "svc", time.Now().Add(time.Hour))} {
		topic := "platformatic-sasl-" + strings.ToLower(mech)
		var out struct {
			Read []string `json:"read"`
		}
		runPlatformatic(t, 60*time.Second, "sasl-produce.mjs", &out, e.saslSSL, topic, "5", caFile, mech, "alice", secret)
		if want := []string{"v-0", "v-1", "v-2", "v-3", "v-4"}; !slices.Equal(out.Read, want) {
			t.Errorf("%s: read %q, want %q", mech, out.Read, want)
		}
	}
	for mech, c := range map[string]struct{ secret, want string }{
		"SCRAM-SHA-512": {"wrong", "SASL_AUTHENTICATION_FAILED"},
		"OAUTHBEARER":   {e.token(t, "svc", time.Now().Add(-time.Minute)), "Invalid SASL/OAUTHBEARER token."},
	} {
		res, err := runToolErr(40*time.Second, dir, "", nil, "node", "sasl-produce.mjs", e.saslSSL, "platformatic-sasl-refused", "1", caFile, mech, "alice", c.secret)
		if err == nil || !strings.Contains(res.Stderr, c.want) {
			t.Fatalf("%s with a wrong secret: %v, want %q in\n%s", mech, err, c.want, res.Stderr)
		}
	}
}
