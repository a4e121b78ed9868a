package assignment

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
)

// randomAssignment builds a valid document from r: brokers in every state,
// topics with configs whose keys and values need JSON escapes, pins and held
// slots.
func randomAssignment(r *rand.Rand) *Assignment {
	odd := []string{"plain", `quote"d`, `back\slash`, "tab\tnew\nline", "<html>&amp;", "héllo wörld", "日本語", "emoji 🚀", "\u2028sep", "ctl\x01"}
	pick := func() string { return odd[r.IntN(len(odd))] }
	a := &Assignment{Format: FormatV1, ControllerEpoch: r.Int64N(1 << 40), AssignmentVersion: r.Int64N(1 << 40),
		ControllerHeartbeat: "kaas-0.kaas.ns.svc:" + pick(), Topics: map[string]Topic{}}
	nb := 1 + r.IntN(8)
	var alive []int32
	for i := 0; i < nb; i++ {
		st := []BrokerState{Alive, Draining, Dead}[r.IntN(3)]
		if i == 0 {
			st = Alive
		}
		if st == Alive {
			alive = append(alive, int32(i))
		}
		name := fmt.Sprintf("kaas-%d", i)
		b := Broker{ID: int32(i), Name: name, Host: name + "." + pick(), Port: int32(r.IntN(65536)), State: st}
		if r.IntN(2) == 0 {
			b.Listeners = "EXTERNAL://" + pick() + ":9094"
		}
		a.Brokers = append(a.Brokers, b)
		a.ConsumerGroups.Slots = append(a.ConsumerGroups.Slots, name)
	}
	a.Controller = "kaas-0"
	if r.IntN(2) == 0 {
		a.ConsumerGroups.Held = []int{r.IntN(nb)}
	}
	for i := r.IntN(6); i > 0; i-- {
		t := Topic{ID: fmt.Sprintf("id-%d-%s", i, pick()), Config: map[string]string{}}
		for j := r.IntN(3); j > 0; j-- {
			t.Config[pick()+fmt.Sprint(j)] = pick()
		}
		for p := 1 + r.IntN(20); p > 0; p-- {
			leader := NoLeader
			if r.IntN(5) > 0 {
				leader = alive[r.IntN(len(alive))]
			}
			t.Partitions = append(t.Partitions, Partition{Leader: leader, LeaderEpoch: r.Int32()})
		}
		for p := range t.Partitions {
			if r.IntN(4) == 0 {
				t.Pins = append(t.Pins, Pin{Partition: int32(p), Broker: r.Int32N(int32(nb))})
			}
		}
		a.Topics[fmt.Sprintf("topic-%d.%c_x", i, 'a'+r.IntN(26))] = t
	}
	return a
}

func TestDecodeRoundTripsRandomAssignments(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 5))
	for i := 0; i < 500; i++ {
		a := randomAssignment(r)
		data, err := Encode(a)
		if err != nil {
			t.Fatalf("case %d: encode: %v", i, err)
		}
		got, err := Decode(data)
		if err != nil {
			t.Fatalf("case %d: decode: %v\n%s", i, err, data)
		}
		if !Equal(a, got) {
			t.Fatalf("case %d: decoded %+v\nwant %+v", i, got, a)
		}
		ref, err := decodeWithEncodingJSON(data)
		if err != nil {
			t.Fatalf("case %d: encoding/json decode: %v", i, err)
		}
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("case %d: Decode %+v\nencoding/json %+v", i, got, ref)
		}
		again, err := Encode(got)
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("case %d: re-encoding differs (err %v)", i, err)
		}
	}
}

// The golden file is what the encoder writes for a document with every
// optional part (pins, held slots, escaped strings): files already on
// brokers' volumes must keep decoding to the same document.
func TestDecodeGoldenFile(t *testing.T) {
	data, err := os.ReadFile("testdata/assignment-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := decodeWithEncodingJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ref) {
		t.Fatalf("Decode %+v\nencoding/json %+v", got, ref)
	}
	if len(got.Topics["orders"].Pins) != 2 || got.ConsumerGroups.Held[0] != 1 || got.Brokers[1].Rack != "zone-b" ||
		got.Brokers[1].Listeners != "EXTERNAL://ext-1.example.com:9094,INTERNAL://kaas-1.kaas.ns.svc:9095" || got.Topics["payments"].Config["message.format"] != "<v2> & \"quoted\"" {
		t.Fatalf("golden content lost: %+v", got)
	}
	again, err := Encode(got)
	if err != nil || !bytes.Equal(again, data) {
		t.Fatalf("re-encoding the golden file differs (err %v):\n%s", err, again)
	}
}

// decodeAgreementCases are hand-written documents (other spacing, field
// order, escapes, nulls for optional fields) both decoders accept.
var decodeAgreementCases = []struct{ name, from, to string }{
	{"sample", "", ""},
	{"compact", "\n", ""},
	{"field order", `"format": 1,
  "controller_epoch": 7,`, `"controller_epoch": 7, "format": 1,`},
	{"escaped name", `"host": "kaas-0.kaas.ns.svc"`, `"host": "kaas-0\u002ekaas\/ns.svc"`},
	{"escaped key", `"format": 1`, `"\u0066ormat": 1`},
	{"null heartbeat", `"controller_heartbeat": "kaas-0.kaas.ns.svc:9094"`, `"controller_heartbeat": null`},
	{"null config", `"config": {"retention.ms": "604800000"}`, `"config": null`},
	{"no config", `"config": {"retention.ms": "604800000"},`, ``},
	{"empty pins", `"partitions": [`, `"pins": [], "partitions": [`},
	{"pins", `"partitions": [`, `"pins": [{"broker": 1, "partition": 1}], "partitions": [`},
	{"held", `"slots": [`, `"held": [2], "slots": [`},
	{"negative zero", `"leader_epoch": 3`, `"leader_epoch": -0`},
	{"no port", `, "port": 9092, "listeners"`, `, "listeners"`},
	{"null listeners", `"listeners": "EXTERNAL://ext-2.example.com:9094"`, `"listeners": null`},
	{"invalid utf8", `"kaas-0.kaas.ns.svc:9094"`, "\"kaas-0\xff\""},
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, tc := range decodeAgreementCases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.ReplaceAll(sample, tc.from, tc.to)
			if doc == sample && tc.from != tc.to {
				t.Fatalf("test case did not change the document")
			}
			got, err := Decode([]byte(doc))
			if err != nil {
				t.Fatalf("Decode: %v\n%s", err, doc)
			}
			ref, err := decodeWithEncodingJSON([]byte(doc))
			if err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if !reflect.DeepEqual(got, ref) {
				t.Fatalf("Decode %+v\nencoding/json %+v", got, ref)
			}
		})
	}
}

func TestDecodeRejectsDuplicatesAndMalformed(t *testing.T) {
	for _, tc := range []struct{ name, from, to, want string }{
		{"field", `"format": 1,`, `"format": 1, "format": 1,`, `duplicate field "format"`},
		{"field after all others", `"kaas-2"] }` + "\n}", `"kaas-2"] }, "format": 1` + "\n}", `duplicate field "format"`},
		{"topic", `"orders": {"id": "0b6e4b8e-6a8f-4a57-9d53-0f3d1e0c1a2b", "config": {"retention.ms": "604800000"},
              "partitions": [ {"leader": 0, "leader_epoch": 3}, {"leader": 1, "leader_epoch": 1} ] }`,
			`"orders": {"id": "x", "partitions": [{"leader": 0, "leader_epoch": 3}]}, "orders": {"id": "y", "partitions": [{"leader": 0, "leader_epoch": 3}]}`,
			`duplicate field "orders"`},
		{"config", `{"retention.ms": "604800000"}`, `{"retention.ms": "1", "retention.ms": "2"}`, `config: duplicate field "retention.ms"`},
		{"unknown null field", `"format": 1,`, `"format": 1, "colour": null,`, `unknown field "colour"`},
		{"leading zero", `"leader_epoch": 3`, `"leader_epoch": 03`, "32-bit integer"},
		{"control character", `"kaas-0.kaas.ns.svc:9094"`, "\"kaas-0\x01\"", "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(sample, tc.from, tc.to, 1)
			if doc == sample {
				t.Fatalf("test case did not change the document")
			}
			if _, err := Decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Past the first few fields of an object, duplicate topics and config keys
// are still caught.
func TestDecodeRejectsLateDuplicates(t *testing.T) {
	var topics, config []string
	for i := 0; i < 10; i++ {
		topics = append(topics, fmt.Sprintf(`"t%d": {"id": "x", "partitions": [{"leader": 0, "leader_epoch": 0}]}`, i%9))
		config = append(config, fmt.Sprintf(`"k%d": "v"`, i%9))
	}
	for _, tc := range []struct{ name, to, want string }{
		{"topic", strings.Join(topics, ", "), `duplicate topic "t0"`},
		{"config", `"orders": {"id": "x", "config": {` + strings.Join(config, ", ") + `}, "partitions": [{"leader": 0, "leader_epoch": 0}]}`, `duplicate config "k0"`},
	} {
		doc := `{"format": 1, "controller_epoch": 1, "assignment_version": 1, "controller": "kaas-0",
		"brokers": [{"id": 0, "name": "kaas-0", "state": "alive"}], "topics": {` + tc.to + `}}`
		if _, err := Decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecode checks that no input panics Decode, and that whatever Decode
// accepts encoding/json accepts as the same document and re-encodes to
// bytes that decode back equal.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sample))
	if golden, err := os.ReadFile("testdata/assignment-v1.json"); err == nil {
		f.Add(golden)
	}
	for _, tc := range decodeAgreementCases {
		f.Add([]byte(strings.ReplaceAll(sample, tc.from, tc.to)))
	}
	f.Add([]byte(`{"format": 1, "controller_epoch": -9223372036854775808, "topics": {"a": {"partitions": [{"leader": 1e3}]}}}`))
	f.Add([]byte(`{"brokers": [{"id": 99999999999, "name": "\ud800"}], "consumer_groups": {"held": [1.5]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Decode(data)
		if err != nil {
			return
		}
		ref, err := decodeWithEncodingJSON(data)
		if err != nil {
			t.Fatalf("Decode accepted what encoding/json refuses (%v)", err)
		}
		if !reflect.DeepEqual(got, ref) {
			t.Fatalf("Decode %+v\nencoding/json %+v", got, ref)
		}
		enc, err := Encode(got)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := Decode(enc)
		if err != nil || !Equal(back, got) {
			t.Fatalf("re-encoded document decodes to %+v (err %v)", back, err)
		}
	})
}
