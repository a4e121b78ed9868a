package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// Parsers of `kaas metadata-quorum` and `kaas cluster` output, for the
// cluster tests that run them against several brokers
// (TestUnregisterBrokerAfterScaleDown).

// clustertoolsEndpoint is one row of `kaas cluster list-endpoints`.
type clustertoolsEndpoint struct {
	host, rack, state string
	port              int32
}

// clustertoolsEndpoints parses list-endpoints' table by broker id,
// failing the test on a header or row not in Kafka's shape.
func clustertoolsEndpoints(t *testing.T, out string) map[int32]clustertoolsEndpoint {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "ID HOST PORT RACK STATE ENDPOINT_TYPE" {
		t.Fatalf("list-endpoints header:\n%s", out)
	}
	rows := map[int32]clustertoolsEndpoint{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 6 || f[5] != "broker" || (f[4] != "fenced" && f[4] != "unfenced") {
			t.Fatalf("list-endpoints row %q:\n%s", l, out)
		}
		id, err1 := strconv.ParseInt(f[0], 10, 32)
		port, err2 := strconv.ParseInt(f[2], 10, 32)
		if err1 != nil || err2 != nil {
			t.Fatalf("list-endpoints row %q: %v %v", l, err1, err2)
		}
		if _, dup := rows[int32(id)]; dup {
			t.Fatalf("list-endpoints lists broker %d twice:\n%s", id, out)
		}
		rows[int32(id)] = clustertoolsEndpoint{host: f[1], port: int32(port), rack: f[3], state: f[4]}
	}
	return rows
}

// clustertoolsReplica is an entry of --status's CurrentVoters or
// CurrentObservers, which Kafka prints as JSON.
type clustertoolsReplica struct {
	ID          int32    `json:"id"`
	DirectoryID *string  `json:"directoryId"`
	Endpoints   []string `json:"endpoints"`
}

// clustertoolsQuorumStatus is `metadata-quorum describe --status`.
type clustertoolsQuorumStatus struct {
	clusterID                                                  string
	leaderID, leaderEpoch, highWatermark, maxLag, maxLagTimeMs int64
	voters, observers                                          []clustertoolsReplica
}

func clustertoolsParseStatus(t *testing.T, out string) clustertoolsQuorumStatus {
	t.Helper()
	var s clustertoolsQuorumStatus
	keys := []string{"ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag", "MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers"}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != len(keys) {
		t.Fatalf("--status: %d lines, want %d:\n%s", len(lines), len(keys), out)
	}
	ints := []*int64{nil, &s.leaderID, &s.leaderEpoch, &s.highWatermark, &s.maxLag, &s.maxLagTimeMs}
	for i, k := range keys {
		// Kafka pads each name with its colon to 24 columns.
		prefix := k + ":" + strings.Repeat(" ", 23-len(k))
		v, ok := strings.CutPrefix(lines[i], prefix)
		if !ok {
			t.Fatalf("--status line %d %q, want %q first:\n%s", i, lines[i], prefix, out)
		}
		var err error
		switch {
		case k == "ClusterId":
			s.clusterID = v
		case k == "CurrentVoters":
			err = json.Unmarshal([]byte(v), &s.voters)
		case k == "CurrentObservers":
			err = json.Unmarshal([]byte(v), &s.observers)
		default:
			*ints[i], err = strconv.ParseInt(v, 10, 64)
		}
		if err != nil {
			t.Fatalf("--status line %q: %v", lines[i], err)
		}
	}
	return s
}

// clustertoolsReplicationRow is a row of `metadata-quorum describe
// --replication`.
type clustertoolsReplicationRow struct {
	logEndOffset, lag, lastFetch, lastCaughtUp int64
	status                                     string
}

// clustertoolsParseReplication parses --replication's table by node id:
// each cell padded to its column and followed by a tab.
func clustertoolsParseReplication(t *testing.T, out string) map[int32]clustertoolsReplicationRow {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	cells := func(l string) []string {
		if !strings.HasSuffix(l, "\t") {
			t.Fatalf("--replication line %q does not end with a tab:\n%s", l, out)
		}
		c := strings.Split(strings.TrimSuffix(l, "\t"), "\t")
		for i := range c {
			c[i] = strings.TrimRight(c[i], " ")
		}
		return c
	}
	if h := strings.Join(cells(lines[0]), ","); h != "NodeId,DirectoryId,LogEndOffset,Lag,LastFetchTimestamp,LastCaughtUpTimestamp,Status" {
		t.Fatalf("--replication header %q", h)
	}
	rows := map[int32]clustertoolsReplicationRow{}
	for _, l := range lines[1:] {
		c := cells(l)
		if len(c) != 7 {
			t.Fatalf("--replication row %q:\n%s", l, out)
		}
		var n [5]int64
		for i, j := range []int{0, 2, 3, 4, 5} {
			v, err := strconv.ParseInt(c[j], 10, 64)
			if err != nil {
				t.Fatalf("--replication row %q: %v", l, err)
			}
			n[i] = v
		}
		rows[int32(n[0])] = clustertoolsReplicationRow{logEndOffset: n[1], lag: n[2], lastFetch: n[3], lastCaughtUp: n[4], status: c[6]}
	}
	return rows
}

// clustertoolsReplicaIDs are the ids of a --status replica list, in order.
func clustertoolsReplicaIDs(rs []clustertoolsReplica) []int32 {
	ids := make([]int32, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}
