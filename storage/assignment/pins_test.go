package assignment

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Pins round-trip through the file; a file without them (the sample) decodes
// with none and encodes without the key.
func TestPinsRoundTrip(t *testing.T) {
	a := sampleAssignment(t)
	if a.Topics["orders"].Pins != nil {
		t.Fatalf("sample has pins %v", a.Topics["orders"].Pins)
	}
	plain, err := Encode(a)
	if err != nil || strings.Contains(string(plain), "pins") {
		t.Fatalf("encode without pins: %v\n%s", err, plain)
	}
	o := a.Topics["orders"]
	o.Pins = []Pin{{Partition: 0, Broker: 1}, {Partition: 1, Broker: 0}}
	a.Topics["orders"] = o
	b, err := Encode(a)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(b)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, b)
	}
	if !slices.Equal(back.Topics["orders"].Pins, o.Pins) || !Equal(a, back) {
		t.Fatalf("pins after round trip: %v", back.Topics["orders"].Pins)
	}
	if br, ok := back.Topics["orders"].PinOf(1); !ok || br != 0 {
		t.Fatalf("PinOf(1) = %d %v", br, ok)
	}
	if _, ok := back.Topics["orders"].PinOf(5); ok {
		t.Fatal("PinOf an unpinned partition")
	}
	unpinned := sampleAssignment(t)
	if SameContent(unpinned, back) {
		t.Fatal("a pin change is not a content change")
	}
	for _, bad := range [][]Pin{
		{{Partition: 2, Broker: 0}},                            // no partition 2
		{{Partition: 1, Broker: 0}, {Partition: 0, Broker: 1}}, // unsorted
		{{Partition: 0, Broker: -3}},
	} {
		o.Pins = bad
		a.Topics["orders"] = o
		if err := a.Validate(); !errors.Is(err, ErrInvalid) {
			t.Fatalf("pins %v accepted: %v", bad, err)
		}
	}
}
