package storage

import (
	"testing"
	"time"
)

// TestRetentionRules checks retention.ms and retention.bytes as Kafka's
// UnifiedLog applies them, in LogConfig's encoding (zero: no limit;
// negative: Kafka's 0, keep nothing).
func TestRetentionRules(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, c := range []struct {
		retention time.Duration
		newest    int64
		want      bool
	}{
		{0, 0, false},                            // no limit
		{-1, 999_999, true},                      // Kafka's 0: anything older than now
		{-1, 1_000_000, false},                   // ... not a record stamped now
		{-1, 1_000_001, false},                   // ... nor one from the future
		{time.Second, 998_999, true},             // more than retention.ms ago
		{time.Second, 999_000, false},            // exactly retention.ms ago: kept, as Kafka's >
		{time.Hour, 0, false},                    // within retention.ms
		{1500 * time.Microsecond, 999_998, true}, // 1 ms limit
	} {
		if got := (LogConfig{RetentionMs: c.retention}).Expired(c.newest, now); got != c.want {
			t.Errorf("RetentionMs %v, newest %d: Expired %v, want %v", c.retention, c.newest, got, c.want)
		}
	}
	for _, c := range []struct {
		limit, total, size int64
		want               bool
	}{
		{0, 1 << 40, 1, false},    // no limit
		{-1, 100, 100, true},      // Kafka's 0: even the only segment
		{-1, 0, 0, true},          // ... and an empty one (the caller skips those)
		{1000, 3000, 1000, true},  // 2000 remain, at least 1000
		{1000, 1999, 1000, false}, // 999 would remain
		{1000, 2000, 1000, true},  // exactly 1000 remain: Kafka's >=
		{1000, 5000, 5000, false}, // the only segment stays
	} {
		if got := (LogConfig{RetentionBytes: c.limit}).Oversize(c.total, c.size); got != c.want {
			t.Errorf("RetentionBytes %d, total %d, segment %d: Oversize %v, want %v", c.limit, c.total, c.size, got, c.want)
		}
	}
}
