package tlsfiles

import "testing"

func TestPrincipalMappingRules(t *testing.T) {
	const kafkaDocs = `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT`
	for _, tc := range []struct {
		rules, dn, want string
		fails           bool
	}{
		{"DEFAULT", "CN=alice,O=Example", "CN=alice,O=Example", false},
		{kafkaDocs, "CN=kafka-server1,OU=ServiceUsers,O=Org,C=US", "kafka-server1", false},
		{kafkaDocs, "CN=Duke,OU=JavaSoft,O=Sun,L=Santa Clara,ST=CA,C=US", "duke@javasoft", false},
		{kafkaDocs, "O=Example,CN=Some.Host", "some.host", false},
		{kafkaDocs, "O=Example", "O=Example", false},
		{"RULE:^CN=(.*?),O=(.*)$/${2}_$1/U", "CN=bob,O=eng", "ENG_BOB", false},
		{`RULE:^CN=([^,]*)$/users\/$1/`, "CN=carol", "users/carol", false},
		{`RULE:^CN=(a/b)$/x/`, "CN=a/b", "", true}, // an unescaped slash ends the pattern: "(a" does not compile
		{`RULE:^CN=(a\/b)$/\$1-$1/`, "CN=a/b", "$1-a/b", false},
		{"RULE:^CN=(.*)$/$1/", "O=x", "", true},                     // no rule applies
		{" RULE:^CN=(.*)$/$1/L , DEFAULT ", "CN=Ann", "ann", false}, // spaces around rules
		{"RULE:^CN=x$/y/L,RULE:^CN=(.*)$/$1/U", "CN=z", "Z", false},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			if !tc.fails {
				t.Errorf("%q: %v", tc.rules, err)
			}
			continue
		}
		got, err := m.Map(tc.dn)
		if tc.fails {
			if err == nil {
				t.Errorf("%q on %q: %q, want an error", tc.rules, tc.dn, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q on %q: %q %v, want %q", tc.rules, tc.dn, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "RULE:x", "RULE:x/y", "NOPE", "DEFAULT,", "RULE:([/x/"} {
		if _, err := ParsePrincipalMappingRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
