package cluster

import "testing"

func TestStatefulSetOf(t *testing.T) {
	for pod, want := range map[string]string{
		"kaas-0": "kaas", "kaas-12": "kaas", "my-kaas-3": "my-kaas",
		"kaas": "", "kaas-": "", "-1": "", "kaas-x1": "", "kaas-1a": "",
	} {
		if got := StatefulSetOf(pod); got != want {
			t.Errorf("StatefulSetOf(%q) = %q, want %q", pod, got, want)
		}
	}
}
