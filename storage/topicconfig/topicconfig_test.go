package topicconfig

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		cfg  map[string]string
		want string // substring of the error; "" = valid
	}{
		{map[string]string{"retention.ms": "1000", "segment.bytes": "1048576"}, ""},
		{map[string]string{"retention.ms": "-1", "retention.bytes": "-1"}, ""},
		{map[string]string{"message.timestamp.type": "LogAppendTime"}, ""},
		{map[string]string{"retention.ms": "-2"}, "at least -1"},
		{map[string]string{"retention.ms": "abc"}, "not a 64-bit integer"},
		{map[string]string{"segment.bytes": "99999999999"}, "not a 32-bit integer"},
		{map[string]string{"cleanup.policy": "compact"}, "must be one of delete"},
		{map[string]string{"preallocate": "yes"}, "true or false"},
		{map[string]string{"nope": "1"}, "unknown topic config"},
	}
	for _, tc := range cases {
		err := Validate(tc.cfg)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%v: got %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func TestTopicNames(t *testing.T) {
	for name, ok := range map[string]bool{"orders": true, "a.b_c-D9": true, "": false, ".": false, "..": false,
		"has space": false, "slash/": false, strings.Repeat("x", 249): true, strings.Repeat("x", 250): false} {
		if err := ValidTopicName(name); (err == nil) != ok {
			t.Errorf("%q: %v", name, err)
		}
	}
}

func TestLogConfigDefaultsAndOverrides(t *testing.T) {
	lc := LogConfig(nil)
	if lc.RetentionMs != 7*24*time.Hour || lc.RetentionBytes != -1 || lc.SegmentBytes != 1<<30 {
		t.Fatalf("defaults: %+v", lc)
	}
	lc = LogConfig(map[string]string{"retention.ms": "-1", "segment.ms": "60000"})
	if lc.RetentionMs >= 0 || lc.SegmentMs != time.Minute {
		t.Fatalf("overrides: %+v", lc)
	}
	if MaxMessageBytes(map[string]string{"max.message.bytes": "100"}) != 100 || MaxMessageBytes(nil) != 1048588 {
		t.Fatal("max.message.bytes")
	}
}
