package sasl

import "testing"

// TestParseBearerMessage: the client's first message is read with the
// grammar of Kafka's OAuthBearerClientInitialResponse; what it refuses is
// refused here.
func TestParseBearerMessage(t *testing.T) {
	for _, c := range []struct {
		name, in       string
		authzid, token string // want; token empty: refused
	}{
		{name: "plain", in: "n,,\x01auth=Bearer abc.def.\x01\x01", token: "abc.def."},
		{name: "extensions", in: "n,,\x01auth=Bearer t\x01traceId=a b\tc=d\x01logicalCluster=lkc-1\x01\x01", token: "t"},
		{name: "extension before auth", in: "n,,\x01x=y\x01auth=Bearer t\x01\x01", token: "t"},
		{name: "authorization id", in: "n,a=alice,\x01auth=Bearer t\x01\x01", authzid: "alice", token: "t"},
		{name: "authorization id escaped, kept as sent", in: "n,a=a=2Cb=3D,\x01auth=Bearer t\x01\x01", authzid: "a=2Cb=3D", token: "t"},
		{name: "scheme in any case", in: "n,,\x01auth=bEARER t\x01\x01", token: "t"},
		{name: "spaces before the token", in: "n,,\x01auth=Bearer   t\x01\x01", token: "t"},
		{name: "token characters", in: "n,,\x01auth=Bearer aZ09-_.\x01\x01", token: "aZ09-_."},
		{name: "auth twice: the last", in: "n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01", token: "b"},

		{name: "empty", in: ""},
		{name: "no GS2 header", in: "\x01auth=Bearer t\x01\x01"},
		{name: "channel binding flag y", in: "y,,\x01auth=Bearer t\x01\x01"},
		{name: "GS2 header without its comma", in: "n,\x01auth=Bearer t\x01\x01"},
		{name: "empty authorization id", in: "n,a=,\x01auth=Bearer t\x01\x01"},
		{name: "authorization id with a bare =", in: "n,a=a=b,\x01auth=Bearer t\x01\x01"},
		{name: "authorization id not ASCII", in: "n,a=é,\x01auth=Bearer t\x01\x01"},
		{name: "no pairs", in: "n,,\x01\x01"},
		{name: "no final %x01", in: "n,,\x01auth=Bearer t\x01"},
		{name: "no auth", in: "n,,\x01x=y\x01\x01"},
		{name: "key not letters", in: "n,,\x01auth=Bearer t\x01x1=y\x01\x01"},
		{name: "empty key", in: "n,,\x01auth=Bearer t\x01=y\x01\x01"},
		{name: "empty value", in: "n,,\x01auth=Bearer t\x01x=\x01\x01"},
		{name: "pair without =", in: "n,,\x01auth=Bearer t\x01xy\x01\x01"},
		{name: "value with a control character", in: "n,,\x01auth=Bearer t\x01x=a\x00b\x01\x01"},
		{name: "value not ASCII", in: "n,,\x01auth=Bearer t\x01x=é\x01\x01"},
		{name: "empty pair", in: "n,,\x01auth=Bearer t\x01\x01\x01"},
		{name: "another scheme", in: "n,,\x01auth=Basic t\x01\x01"},
		{name: "no scheme", in: "n,,\x01auth= t\x01\x01"},
		{name: "no token", in: "n,,\x01auth=Bearer\x01\x01"},
		{name: "no token after the space", in: "n,,\x01auth=Bearer \x01\x01"},
		{name: "standard Base64 in the token", in: "n,,\x01auth=Bearer a+b/c=\x01\x01"},
		{name: "a tab before the token", in: "n,,\x01auth=Bearer\tt\x01\x01"},
		{name: "a space after the token", in: "n,,\x01auth=Bearer t \x01\x01"},
	} {
		authzid, token, err := parseBearerMessage([]byte(c.in))
		if c.token == "" {
			if err == nil {
				t.Errorf("%s: accepted (authzid %q, token %q), want refused", c.name, authzid, token)
			}
			continue
		}
		if err != nil || authzid != c.authzid || token != c.token {
			t.Errorf("%s: authzid %q, token %q, err %v; want %q, %q", c.name, authzid, token, err, c.authzid, c.token)
		}
	}
}
