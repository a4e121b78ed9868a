package conn

import "testing"

func TestMemberHost(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1":        "/127.0.0.1",
		"/127.0.0.1":       "/127.0.0.1", // already in Kafka's form
		"::ffff:10.1.2.3":  "/10.1.2.3",
		"::1":              "/0:0:0:0:0:0:0:1",
		"fd00:ab::12":      "/fd00:ab:0:0:0:0:0:12",
		"fe80::1%eth0":     "/fe80::1%eth0",
		"kaas-0.kaas.test": "/kaas-0.kaas.test",
	} {
		if got := MemberHost(host); got != want {
			t.Errorf("MemberHost(%q) = %q, want %q", host, got, want)
		}
	}
}
