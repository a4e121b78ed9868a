package main

import (
	"testing"
	"time"
)

func TestHandedOn(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name                      string
		held                      int
		refused                   bool
		sinceRefusal, sinceReport time.Duration
		want                      bool
	}{
		{"granted, nobody ever refused", 0, false, 0, 10 * ms, true},
		{"granted, last refusal long ago", 0, true, refusalQuiet, 10 * ms, true},
		{"granted, a client refused just now", 0, true, 10 * ms, 10 * ms, false},
		{"still held", 3, false, 0, 10 * ms, false},
		{"still held, past the bound", 3, true, 0, handOffWait + ms, true},
		{"clients still refused, past the bound", 0, true, 0, handOffWait + ms, true},
	} {
		if got := handedOn(tc.held, tc.refused, tc.sinceRefusal, tc.sinceReport); got != tc.want {
			t.Errorf("%s: handedOn = %v, want %v", tc.name, got, tc.want)
		}
	}
}
