package assignment

import (
	"errors"
	"strings"
	"testing"
)

// sample is DESIGN.md's example document, made consistent.
const sample = `{
  "format": 1,
  "controller_epoch": 7,
  "assignment_version": 42,
  "controller": "kaas-0",
  "controller_heartbeat": "kaas-0.kaas.ns.svc:9094",
  "brokers": [ {"id": 0, "name": "kaas-0", "host": "kaas-0.kaas.ns.svc", "port": 9092, "state": "alive"},
               {"id": 1, "name": "kaas-1", "host": "kaas-1.kaas.ns.svc", "port": 9092, "rack": "zone-b", "state": "alive"},
               {"id": 2, "name": "kaas-2", "host": "kaas-2.kaas.ns.svc", "port": 9092, "listeners": "EXTERNAL://ext-2.example.com:9094", "state": "dead"} ],
  "topics": { "orders": {"id": "0b6e4b8e-6a8f-4a57-9d53-0f3d1e0c1a2b", "config": {"retention.ms": "604800000"},
              "partitions": [ {"leader": 0, "leader_epoch": 3}, {"leader": 1, "leader_epoch": 1} ] } },
  "consumer_groups": { "slots": ["kaas-0", "kaas-1", "kaas-2"] }
}`

func sampleAssignment(t testing.TB) *Assignment {
	t.Helper()
	a, err := Decode([]byte(sample))
	if err != nil {
		t.Fatalf("decode sample: %v", err)
	}
	return a
}

func TestDecodeSample(t *testing.T) {
	a := sampleAssignment(t)
	if a.ControllerEpoch != 7 || a.AssignmentVersion != 42 || a.Controller != "kaas-0" || len(a.Brokers) != 3 ||
		a.Brokers[2].State != Dead || a.Brokers[1].Rack != "zone-b" || a.Brokers[0].Rack != "" ||
		a.Brokers[2].Listeners != "EXTERNAL://ext-2.example.com:9094" || a.Brokers[1].Listeners != "" || a.Topics["orders"].Partitions[0] != (Partition{0, 3}) ||
		a.Topics["orders"].Config["retention.ms"] != "604800000" || len(a.ConsumerGroups.Slots) != 3 {
		t.Fatalf("decoded %+v", a)
	}
}

func TestEncodeRoundTripAndDeterminism(t *testing.T) {
	a := sampleAssignment(t)
	b1, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b1)
	if err != nil {
		t.Fatalf("decode encoded: %v\n%s", err, b1)
	}
	if !Equal(a, back) {
		t.Fatalf("round trip changed the document")
	}
	b2, _ := Encode(back)
	if string(b1) != string(b2) {
		t.Fatalf("encoding not stable:\n%s\n%s", b1, b2)
	}
	want := `{
  "format": 1,
  "controller_epoch": 7,
  "assignment_version": 42,
  "controller": "kaas-0",
  "controller_heartbeat": "kaas-0.kaas.ns.svc:9094",
  "brokers": [
    {"id": 0, "name": "kaas-0", "host": "kaas-0.kaas.ns.svc", "port": 9092, "state": "alive"},
    {"id": 1, "name": "kaas-1", "host": "kaas-1.kaas.ns.svc", "port": 9092, "rack": "zone-b", "state": "alive"},
    {"id": 2, "name": "kaas-2", "host": "kaas-2.kaas.ns.svc", "port": 9092, "listeners": "EXTERNAL://ext-2.example.com:9094", "state": "dead"}
  ],
  "topics": {
    "orders": {
      "id": "0b6e4b8e-6a8f-4a57-9d53-0f3d1e0c1a2b",
      "config": {"retention.ms": "604800000"},
      "partitions": [
        {"leader": 0, "leader_epoch": 3},
        {"leader": 1, "leader_epoch": 1}
      ]
    }
  },
  "consumer_groups": {"slots": ["kaas-0", "kaas-1", "kaas-2"]}
}
`
	if string(b1) != want {
		t.Fatalf("encoding:\n%s\nwant:\n%s", b1, want)
	}
}

func TestEncodeEmptyAndEscaping(t *testing.T) {
	a := &Assignment{Format: 1, Controller: "kaas-0", Brokers: []Broker{{ID: 0, Name: "kaas-0", Host: "h\"<&>\u00e9\n", State: Alive}}}
	b, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if back.Brokers[0].Host != a.Brokers[0].Host || len(back.Topics) != 0 || back.Topics == nil {
		t.Fatalf("back %+v", back)
	}
	if !strings.Contains(string(b), `"topics": {}`) || !strings.Contains(string(b), `"slots": []`) {
		t.Fatalf("empty collections: %s", b)
	}
}

func TestEncodeRejectsInvalid(t *testing.T) {
	a := sampleAssignment(t)
	a.Format = 2
	if _, err := Encode(a); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"garbage", sample, "\x00\x01garbage", "decode assignment"},
		{"empty", sample, "", "truncated"},
		{"trailing data", `}` + "\n}", `}` + "\n}{}", "trailing data"},
		{"unknown field", `"format": 1,`, `"format": 1, "colour": "blue",`, "unknown field"},
		{"unknown format", `"format": 1,`, `"format": 2,`, "unknown format 2"},
		{"missing format", `"format": 1,`, ``, "missing format"},
		{"missing epoch", `"controller_epoch": 7,`, ``, "missing controller_epoch"},
		{"missing version", `"assignment_version": 42,`, ``, "missing assignment_version"},
		{"negative epoch", `"controller_epoch": 7,`, `"controller_epoch": -7,`, "negative controller_epoch"},
		{"negative version", `"assignment_version": 42,`, `"assignment_version": -1,`, "negative assignment_version"},
		{"duplicate broker id", `{"id": 1, "name": "kaas-1"`, `{"id": 0, "name": "kaas-1"`, "duplicate broker id 0"},
		{"duplicate broker name", `{"id": 1, "name": "kaas-1"`, `{"id": 1, "name": "kaas-0"`, "duplicate broker name"},
		{"negative broker id", `{"id": 2, "name": "kaas-2"`, `{"id": -2, "name": "kaas-2"`, "negative id"},
		{"unknown state", `"state": "dead"`, `"state": "zombie"`, "unknown state"},
		{"bad port", `"kaas-2.kaas.ns.svc", "port": 9092`, `"kaas-2.kaas.ns.svc", "port": 99999`, "port 99999"},
		{"missing broker name", `"id": 2, "name": "kaas-2", `, `"id": 2, `, "missing name"},
		{"leader dead", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 2, "leader_epoch": 1}`, "leader 2 (kaas-2) is dead"},
		{"leader unknown", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 9, "leader_epoch": 1}`, "leader 9 is not a registered broker"},
		{"leader -2", `{"leader": 1, "leader_epoch": 1}`, `{"leader": -2, "leader_epoch": 1}`, "leader -2"},
		{"negative leader epoch", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 1, "leader_epoch": -1}`, "negative leader_epoch"},
		{"missing leader", `{"leader": 1, "leader_epoch": 1}`, `{"leader_epoch": 1}`, "missing leader"},
		{"null leader", `{"leader": 1, "leader_epoch": 1}`, `{"leader": null, "leader_epoch": 1}`, "32-bit integer"},
		{"missing leader epoch", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 1}`, "missing leader_epoch"},
		{"leader overflow", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 1, "leader_epoch": 4294967296}`, "32-bit integer"},
		{"unknown partition field", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 1, "leader_epoch": 1, "isr": [1]}`, `unknown field "isr"`},
		{"duplicate partition field", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 1, "leader": 0, "leader_epoch": 1}`, `duplicate field "leader"`},
		{"float leader", `{"leader": 1, "leader_epoch": 1}`, `{"leader": 1.0, "leader_epoch": 1}`, "32-bit integer"},
		{"string leader", `{"leader": 1, "leader_epoch": 1}`, `{"leader": "1", "leader_epoch": 1}`, "32-bit integer"},
		{"partition not an object", `{"leader": 1, "leader_epoch": 1}`, `[1, 1]`, "want an object"},
		{"partitions null", `"partitions": [ {"leader": 0, "leader_epoch": 3}, {"leader": 1, "leader_epoch": 1} ]`, `"partitions": null`, "null"},
		{"no partitions", `"partitions": [ {"leader": 0, "leader_epoch": 3}, {"leader": 1, "leader_epoch": 1} ]`, `"partitions": []`, "no partitions"},
		{"empty topic id", `"id": "0b6e4b8e-6a8f-4a57-9d53-0f3d1e0c1a2b"`, `"id": ""`, "empty id"},
		{"missing topic id", `"id": "0b6e4b8e-6a8f-4a57-9d53-0f3d1e0c1a2b",`, ``, "missing id"},
		{"bad topic name", `"orders": {`, `"or/ders": {`, "'or/ders' contains one or more characters"},
		{"topic name dot", `"orders": {`, `".": {`, "not allowed"},
		{"slot unknown", `["kaas-0", "kaas-1", "kaas-2"]`, `["kaas-0", "kaas-1", "kaas-9"]`, `"kaas-9" is not a registered broker`},
		{"controller unknown", `"controller": "kaas-0"`, `"controller": "kaas-9"`, "controller \"kaas-9\" is not a registered broker"},
		{"controller dead", `"controller": "kaas-0"`, `"controller": "kaas-2"`, "always counts itself alive"},
		{"string epoch", `"controller_epoch": 7,`, `"controller_epoch": "7",`, "decode assignment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(sample, tc.from, tc.to, 1)
			if doc == sample && tc.from != tc.to {
				t.Fatalf("test case did not change the document")
			}
			if tc.name == "empty" {
				doc = ""
			}
			_, err := Decode([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDecodeSemanticErrorsWrapErrInvalid(t *testing.T) {
	_, err := Decode([]byte(strings.Replace(sample, `"format": 1,`, `"format": 3,`, 1)))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeRejectsEveryTruncation(t *testing.T) {
	b, _ := Encode(sampleAssignment(t))
	// Every strict prefix that still holds the closing brace of the
	// document is truncated; so is every shorter one.
	for i := 0; i < len(b)-2; i++ {
		if _, err := Decode(b[:i]); err == nil {
			t.Fatalf("prefix of %d/%d bytes accepted", i, len(b))
		}
	}
}

func TestDecodePartitionsAnyOrderAndSpacing(t *testing.T) {
	doc := strings.Replace(sample, `[ {"leader": 0, "leader_epoch": 3}, {"leader": 1, "leader_epoch": 1} ]`,
		"[\n\t{ \"leader_epoch\" :3 ,\"leader\":0}\r\n,{\"leader\": 1,\n\"leader_epoch\": 2147483647} ]", 1)
	a, err := Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Topics["orders"].Partitions; len(got) != 2 || got[0] != (Partition{0, 3}) || got[1] != (Partition{1, 2147483647}) {
		t.Fatalf("partitions %+v", got)
	}
}

func TestLeaderMinusOneAllowed(t *testing.T) {
	doc := strings.Replace(sample, `{"leader": 1, "leader_epoch": 1}`, `{"leader": -1, "leader_epoch": 2}`, 1)
	a, err := Decode([]byte(doc))
	if err != nil || a.Topics["orders"].Partitions[1].Leader != NoLeader {
		t.Fatalf("a %+v err %v", a, err)
	}
}

func TestValidateDuplicateTopicIDs(t *testing.T) {
	a := sampleAssignment(t)
	a.Topics["copy"] = a.Topics["orders"]
	if err := a.Validate(); err == nil || !strings.Contains(err.Error(), "share id") {
		t.Fatalf("err = %v", err)
	}
}

func TestSameContentIgnoresVersionAndNilMaps(t *testing.T) {
	a := sampleAssignment(t)
	b := sampleAssignment(t)
	b.AssignmentVersion++
	if Equal(a, b) || !SameContent(a, b) {
		t.Fatal("version handling")
	}
	tp := b.Topics["orders"]
	tp.Config = nil
	a.Topics["orders"] = withConfig(a.Topics["orders"], map[string]string{})
	b.Topics["orders"] = tp
	if !SameContent(a, b) {
		t.Fatal("nil and empty config differ")
	}
	b.Topics["orders"].Partitions[1] = Partition{Leader: 0, LeaderEpoch: 2}
	if SameContent(a, b) {
		t.Fatal("leader change not seen")
	}
}

func withConfig(t Topic, cfg map[string]string) Topic {
	t.Config = cfg
	return t
}

// A draining broker still leads what the controller has not moved yet
// (moves run in waves); a dead one never leads.
func TestDrainingBrokerMayLead(t *testing.T) {
	doc := strings.Replace(sample, `"name": "kaas-1", "host": "kaas-1.kaas.ns.svc", "port": 9092, "rack": "zone-b", "state": "alive"`,
		`"name": "kaas-1", "host": "kaas-1.kaas.ns.svc", "port": 9092, "rack": "zone-b", "state": "draining"`, 1)
	if doc == sample {
		t.Fatal("test case did not change the document")
	}
	a, err := Decode([]byte(doc))
	if err != nil {
		t.Fatalf("a draining leader was refused: %v", err)
	}
	if b, _ := a.BrokerByID(a.Topics["orders"].Partitions[1].Leader); b.State != Draining {
		t.Fatalf("partition 1 led by %+v, want the draining kaas-1", b)
	}
}
