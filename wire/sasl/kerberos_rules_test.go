package sasl

import (
	"strings"
	"testing"
)

func TestKerberosRulesShortName(t *testing.T) {
	tests := []struct {
		rules, principal, want string // want "" : refused
	}{
		{"DEFAULT", "alice@EXAMPLE.COM", "alice"},
		{"DEFAULT", "kafka/kaas-0.kaas@EXAMPLE.COM", "kafka"},
		{"DEFAULT", "alice@OTHER.ORG", ""},
		{"DEFAULT", "a/b/c@EXAMPLE.COM", ""},
		{"RULE:[1:$1@$0](.*@OTHER\\.ORG)s/@.*//,DEFAULT", "alice@OTHER.ORG", "alice"},
		{"RULE:[1:$1@$0](.*@OTHER\\.ORG)s/@.*//,DEFAULT", "bob@EXAMPLE.COM", "bob"},
		{"RULE:[2:$1@$0](kafka@EXAMPLE\\.COM)s/.*/broker/", "kafka/kaas-1.kaas@EXAMPLE.COM", "broker"},
		{"RULE:[2:$1@$0](kafka@EXAMPLE\\.COM)s/.*/broker/", "alice@EXAMPLE.COM", ""},
		{"RULE:[2:$1@$2](.*)s/^([^@]*)@.*$/$1-svc/", "kafka/host@EXAMPLE.COM", "kafka-svc"},
		{"RULE:[1:$1]/L", "ALICE@EXAMPLE.COM", "alice"},
		{"RULE:[1:$1]/U", "alice@EXAMPLE.COM", "ALICE"},
		{"RULE:[1:$1](a.*)s/a/x/g", "banana@EXAMPLE.COM", ""},
		{"RULE:[1:$1](b.*)s/a/x/g", "banana@EXAMPLE.COM", "bxnxnx"},
		{"RULE:[1:$1](b.*)s/a/x/", "banana@EXAMPLE.COM", "bxnana"},
		// The example of docs/security.md.
		{`DEFAULT,RULE:[1:$1@$0]s/@PARTNER\.ORG$//`, "bob@PARTNER.ORG", "bob"},
		{`DEFAULT,RULE:[1:$1@$0]s/@PARTNER\.ORG$//`, "alice@EXAMPLE.COM", "alice"},
		{`DEFAULT,RULE:[1:$1@$0]s/@PARTNER\.ORG$//`, "carol@OTHER.ORG", ""},
		{"RULE:[1:$1@$0]", "alice@EXAMPLE.COM", ""}, // non-simple name
		{"RULE:[1:$3]", "alice@EXAMPLE.COM", ""},    // no such component
	}
	for _, tc := range tests {
		r, err := ParseKerberosRules(tc.rules)
		if err != nil {
			t.Fatalf("%s: %v", tc.rules, err)
		}
		got, err := r.ShortName(tc.principal, "EXAMPLE.COM")
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s on %s = %q, want refused", tc.rules, tc.principal, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s on %s = %q, %v; want %q", tc.rules, tc.principal, got, err, tc.want)
		}
	}
	var none *KerberosRules
	if got, err := none.ShortName("alice@EXAMPLE.COM", "EXAMPLE.COM"); err != nil || got != "alice" {
		t.Errorf("nil rules: %q %v, want DEFAULT's alice", got, err)
	}
}

func TestParseKerberosRulesRefusesBadSyntax(t *testing.T) {
	for _, s := range []string{"", "DEFAULT,", "RULE:", "RULE:[x:$1]", "RULE:[1:$1](a(b)", "RULE:[1:$1]s/(/x/", "DEFAULT junk", "RULE:[1:$1]/Q"} {
		if _, err := ParseKerberosRules(s); err == nil {
			t.Errorf("ParseKerberosRules(%q) accepted", s)
		} else if !strings.Contains(err.Error(), "rule") {
			t.Errorf("ParseKerberosRules(%q): %v, want the rule named", s, err)
		}
	}
}
