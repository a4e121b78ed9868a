package topicname

import (
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, err string
	}{
		{"orders", ""},
		{"a.b_c-D9", ""},
		{strings.Repeat("x", MaxLen), ""},
		{"", "Topic name is invalid: the empty string is not allowed"},
		{".", "Topic name is invalid: '.' is not allowed"},
		{"..", "Topic name is invalid: '..' is not allowed"},
		{"...", ""},
		{strings.Repeat("x", MaxLen+1), "Topic name is invalid: the length of '" + strings.Repeat("x", MaxLen+1) + "' is longer than the max allowed length 249"},
		{"bad name", "Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"é", "Topic name is invalid: 'é' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"a/b", "Topic name is invalid: 'a/b' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
	} {
		err := Validate(tc.name)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.err {
			t.Errorf("Validate(%.30q) = %q, want %q", tc.name, got, tc.err)
		}
	}
}

func TestCollision(t *testing.T) {
	existing := []string{"orders", "a.b", "x_y.z", "x.y_z", "plain"}
	for _, tc := range []struct{ name, want string }{
		{"a_b", "a.b"},
		{"a.b", ""}, // itself: TOPIC_ALREADY_EXISTS, not a collision
		{"x_y_z", "x_y.z"},
		{"x.y.z", "x_y.z"},
		{"ab", ""},
		{"a-b", ""},
		{"orders", ""},
		{"pla.in", ""},
	} {
		if got := Collision(tc.name, existing); got != tc.want {
			t.Errorf("Collision(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := Collision("a_b", nil); got != "" {
		t.Errorf("no topics: %q", got)
	}
}
