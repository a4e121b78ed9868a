// Package scripttest runs the event scripts the actors' pure cores are
// tested with: each line is "event args -> effect; effect", the event is
// fed to the core through a harness, and the effects it reports must be
// exactly the ones listed, in order.
package scripttest

import (
	"strings"
	"testing"
)

// Run feeds each line's event (split into fields) to step and fails at the
// first line whose effects differ from the expected ones.
func Run(t *testing.T, script []string, step func(fields []string) []string) {
	t.Helper()
	for i, line := range script {
		cmd, want, _ := strings.Cut(line, "->")
		got := step(strings.Fields(cmd))
		if w := Effects(want); strings.Join(got, "; ") != strings.Join(w, "; ") {
			t.Fatalf("line %d %q:\n got: %s\nwant: %s", i+1, strings.TrimSpace(cmd), strings.Join(got, "; "), strings.Join(w, "; "))
		}
	}
}

// Effects splits a line's expected effects on ";", dropping blanks.
func Effects(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ";") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
