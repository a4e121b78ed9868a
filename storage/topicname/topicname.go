// Package topicname holds Kafka's rules for topic names: which names are
// valid, and which names collide with each other in metric names.
package topicname

import (
	"fmt"
	"strings"
)

// MaxLen is Kafka's limit on a topic name's length.
const MaxLen = 249

// Validate applies Kafka's topic-name rules (1 to 249 characters from
// [a-zA-Z0-9._-], neither "." nor ".."), with the messages of Kafka's
// Topic.validate, which clients and tools show as they are.
func Validate(name string) error {
	if reason := invalid(name); reason != "" {
		return fmt.Errorf("Topic name is invalid: %s", reason)
	}
	return nil
}

func invalid(name string) string {
	switch {
	case name == "":
		return "the empty string is not allowed"
	case name == "." || name == "..":
		return fmt.Sprintf("'%s' is not allowed", name)
	case len(name) > MaxLen:
		return fmt.Sprintf("the length of '%s' is longer than the max allowed length %d", name, MaxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Sprintf("'%s' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'", name)
		}
	}
	return ""
}

// HasCollisionChars reports whether a name holds '.' or '_', which metric
// names cannot tell apart.
func HasCollisionChars(name string) bool { return strings.ContainsAny(name, "._") }

// unify is the form in which colliding names are equal.
func unify(name string) string { return strings.ReplaceAll(name, ".", "_") }

// Collision is the first of existing (in its order) that a new topic named
// name would collide with: a different name equal to it once every '.' is
// read as '_' ("a.b" and "a_b"). Kafka's controller refuses such a topic;
// "" when there is none.
func Collision(name string, existing []string) string {
	if !HasCollisionChars(name) {
		return ""
	}
	u := unify(name)
	for _, e := range existing {
		if e != name && unify(e) == u {
			return e
		}
	}
	return ""
}
