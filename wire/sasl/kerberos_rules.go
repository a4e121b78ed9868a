package sasl

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// KerberosRules map Kerberos principals to short names, as Kafka's
// sasl.kerberos.principal.to.local.rules (Hadoop's auth_to_local): a
// comma-separated list of DEFAULT and RULE:[n:fmt](regex)s/from/to/g/L|U,
// tried in order; the first that applies names the principal.
type KerberosRules struct {
	rules []kerberosRule
}

type kerberosRule struct {
	text       string
	isDefault  bool
	components int            // RULE applies to principals with this many components
	format     string         // $0 realm, $1.. components
	match      *regexp.Regexp // nil: any
	from       *regexp.Regexp // nil: no substitution
	to         string
	global     bool
	lower      bool
	upper      bool
}

// kerberosRuleSyntax is one rule (Kafka's KerberosShortNamer grammar).
var kerberosRuleSyntax = regexp.MustCompile(`^(?:(DEFAULT)|RULE:\[(\d*):([^\]]*)\](?:\(([^)]*)\))?(?:s/([^/]*)/([^/]*)/(g)?)?/?(L|U)?)$`)

// javaGroupRef is a $n group reference of a Java replacement string.
var javaGroupRef = regexp.MustCompile(`\$(\d+)`)

// ParseKerberosRules parses a rule list.
func ParseKerberosRules(s string) (*KerberosRules, error) {
	out := &KerberosRules{}
	for _, text := range strings.Split(s, ",") {
		text = strings.TrimSpace(text)
		if text == "" {
			return nil, fmt.Errorf("empty rule in %q", s)
		}
		idx := kerberosRuleSyntax.FindStringSubmatchIndex(text)
		if idx == nil {
			return nil, fmt.Errorf("invalid rule %q: want DEFAULT or RULE:[n:format](regex)s/from/to/g/L", text)
		}
		m := make([]string, len(idx)/2)
		for g := range m {
			if idx[2*g] >= 0 {
				m[g] = text[idx[2*g]:idx[2*g+1]]
			}
		}
		r := kerberosRule{text: text, isDefault: m[1] != ""}
		if !r.isDefault {
			n, err := strconv.Atoi(m[2])
			if err != nil {
				return nil, fmt.Errorf("rule %q: component count %q: %w", text, m[2], err)
			}
			r.components, r.format = n, m[3]
			if m[4] != "" {
				if r.match, err = regexp.Compile("^(?:" + m[4] + ")$"); err != nil {
					return nil, fmt.Errorf("rule %q: %w", text, err)
				}
			}
			if idx[10] >= 0 { // s/from/to/ given

				if r.from, err = regexp.Compile(m[5]); err != nil {
					return nil, fmt.Errorf("rule %q: %w", text, err)
				}
				r.to = javaGroupRef.ReplaceAllString(m[6], "$${$1}")
				r.global = m[7] != ""
			}
		}
		r.lower, r.upper = m[8] == "L", m[8] == "U"
		out.rules = append(out.rules, r)
	}
	return out, nil
}

// ShortName maps principal ("primary[/instance]@REALM") to its short
// name; defaultRealm is the realm DEFAULT strips. Nil rules are DEFAULT.
func (k *KerberosRules) ShortName(principal, defaultRealm string) (string, error) {
	at := strings.LastIndexByte(principal, '@')
	if at < 0 {
		return "", fmt.Errorf("principal %q has no realm", principal)
	}
	parts := append([]string{principal[at+1:]}, strings.Split(principal[:at], "/")...)
	if len(parts) > 3 || parts[1] == "" {
		return "", fmt.Errorf("principal %q is not primary[/instance]@REALM", principal)
	}
	rules := []kerberosRule{{isDefault: true, text: "DEFAULT"}}
	if k != nil {
		rules = k.rules
	}
	for _, r := range rules {
		name, ok, err := r.apply(parts, defaultRealm)
		if err != nil {
			return "", fmt.Errorf("principal %q, rule %q: %w", principal, r.text, err)
		}
		if ok {
			return name, nil
		}
	}
	return "", fmt.Errorf("no principal-to-local rule applies to %q", principal)
}

// apply is the rule's name for parts (realm, components...).
func (r kerberosRule) apply(parts []string, defaultRealm string) (string, bool, error) {
	var name string
	switch {
	case r.isDefault:
		if parts[0] != defaultRealm {
			return "", false, nil
		}
		name = parts[1]
	case len(parts)-1 == r.components:
		base, err := expandKerberosFormat(r.format, parts)
		if err != nil {
			return "", false, err
		}
		if r.match != nil && !r.match.MatchString(base) {
			return "", false, nil
		}
		name = base
		if r.from != nil {
			name = substitute(r.from, r.to, base, r.global)
		}
	default:
		return "", false, nil
	}
	if strings.ContainsAny(name, "/@") {
		return "", false, fmt.Errorf("non-simple name %q", name)
	}
	switch {
	case r.lower:
		name = strings.ToLower(name)
	case r.upper:
		name = strings.ToUpper(name)
	}
	return name, true, nil
}

// expandKerberosFormat replaces $0 (the realm) and $1.. (components).
func expandKerberosFormat(format string, parts []string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '$' {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && format[j] >= '0' && format[j] <= '9' {
			j++
		}
		if j == i+1 {
			return "", errors.New("format has a $ without a number")
		}
		n, _ := strconv.Atoi(format[i+1 : j])
		if n >= len(parts) {
			return "", fmt.Errorf("format index $%d out of range 0..%d", n, len(parts)-1)
		}
		b.WriteString(parts[n])
		i = j - 1
	}
	return b.String(), nil
}

// substitute replaces the first match of from in s (every match when
// global) with to.
func substitute(from *regexp.Regexp, to, s string, global bool) string {
	if global {
		return from.ReplaceAllString(s, to)
	}
	loc := from.FindStringSubmatchIndex(s)
	if loc == nil {
		return s
	}
	return s[:loc[0]] + string(from.ExpandString(nil, to, s, loc)) + s[loc[1]:]
}
