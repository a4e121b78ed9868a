package tlsfiles

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper turns a client certificate's subject DN into the name of
// its principal with Kafka's ssl.principal.mapping.rules: a comma-separated
// list of RULE:pattern/replacement/[LU] and DEFAULT, tried in order. A rule
// applies when its pattern matches the whole DN; the name is the
// replacement ($1 or ${1} for groups), lower- (L) or upper-cased (U).
// DEFAULT keeps the DN. A DN no rule applies to has no principal.
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault bool
	re        *regexp.Regexp
	repl      string
	upper     bool
	lower     bool
	text      string
}

// ParsePrincipalMappingRules parses Kafka's ssl.principal.mapping.rules.
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		return nil, errors.New("no rules (DEFAULT keeps the subject DN)")
	}
	for rest != "" {
		var r mappingRule
		start := rest
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.isDefault, rest = true, rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			rest = rest[len("RULE:"):]
			pattern, after, ok := cutUnescaped(rest)
			if !ok {
				return nil, fmt.Errorf("rule %q: want RULE:pattern/replacement/[LU]", start)
			}
			repl, after, ok := cutUnescaped(after)
			if !ok {
				return nil, fmt.Errorf("rule %q: want RULE:pattern/replacement/[LU]", start)
			}
			re, err := regexp.Compile("^(?:" + pattern + ")$")
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", start, err)
			}
			r.re, r.repl = re, unescapeReplacement(repl)
			switch {
			case strings.HasPrefix(after, "L"):
				r.lower, after = true, after[1:]
			case strings.HasPrefix(after, "U"):
				r.upper, after = true, after[1:]
			}
			rest = after
		default:
			return nil, fmt.Errorf("invalid rule %q: want RULE:pattern/replacement/[LU] or DEFAULT", start)
		}
		// As Kafka, anything up to the next comma after a rule is ignored.
		if i := strings.IndexByte(rest, ','); i >= 0 {
			r.text = strings.TrimSpace(start[:len(start)-len(rest)+i])
			rest = strings.TrimSpace(rest[i+1:])
			if rest == "" {
				return nil, errors.New("a rule list must not end with a comma")
			}
		} else {
			r.text = strings.TrimSpace(start)
			rest = ""
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// cutUnescaped splits s at its first '/' not preceded by a backslash.
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// unescapeReplacement turns a Java replacement's escapes into Go's: \/ is
// a slash, \$ a dollar sign ($$ for regexp.Expand), \\ a backslash.
func unescapeReplacement(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '$' {
				b.WriteString("$$")
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Map is the principal name of the subject DN dn.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		sub := r.re.FindStringSubmatchIndex(dn)
		if sub == nil {
			continue
		}
		name := string(r.re.ExpandString(nil, r.repl, dn, sub))
		switch {
		case r.lower:
			name = strings.ToLower(name)
		case r.upper:
			name = strings.ToUpper(name)
		}
		return name, nil
	}
	return "", fmt.Errorf("no principal mapping rule applies to %q", dn)
}
