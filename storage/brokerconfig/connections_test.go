package brokerconfig

import "testing"

func TestParseConnectionOverrides(t *testing.T) {
	got, err := ParseConnectionOverrides(" hostA:100 , 127.0.0.1:200,::1:3,[fe80::1]:4")
	if err != nil {
		t.Fatal(err)
	}
	want := []ConnectionOverride{{"hostA", 100}, {"127.0.0.1", 200}, {"::1", 3}, {"fe80::1", 4}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entry %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if o, err := ParseConnectionOverrides(""); err != nil || o != nil {
		t.Fatalf("empty: %v, %v", o, err)
	}
	for _, bad := range []string{"hostA", "hostA:", "hostA:x", ":5", "hostA:-1", "a:1,,b:2"} {
		if _, err := ParseConnectionOverrides(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
