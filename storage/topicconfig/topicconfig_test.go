package topicconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/kaas-project/kaas/storage/batch"
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

// TestValidateOne covers every type and range of the table, good and bad.
func TestValidateOne(t *testing.T) {
	cases := []struct {
		name, value string
		want        string // substring of the error; "" = valid
	}{
		// booleans
		{"preallocate", "true", ""},
		{"preallocate", "1", "true or false"},
		{"unclean.leader.election.enable", "false", ""},
		{"message.downconversion.enable", "true", ""},
		{"message.timestamp.difference.max.ms", "604800000", ""},
		{"message.timestamp.difference.max.ms", "-1", "at least 0"},
		{"remote.log.copy.disable", "true", ""},
		{"remote.log.delete.on.disable", "maybe", "true or false"},
		{"remote.storage.enable", "false", ""},
		{"remote.storage.enable", "true", "no tiered storage"},
		// ints and longs with lower bounds
		{"max.message.bytes", "0", ""},
		{"max.message.bytes", "-1", "at least 0"},
		{"max.message.bytes", "2147483648", "not a 32-bit integer"},
		{"segment.bytes", "14", ""},
		{"segment.bytes", "13", "at least 14"},
		{"segment.index.bytes", "3", "at least 4"},
		{"segment.ms", "0", "at least 1"},
		{"flush.messages", "0", "at least 1"},
		{"retention.bytes", "-1", ""},
		{"local.retention.ms", "-2", ""},
		{"local.retention.ms", "-3", "at least -2"},
		{"local.retention.bytes", "-2", ""},
		{"local.retention.bytes", "x", "not a 64-bit integer"},
		{"min.compaction.lag.ms", "0", ""},
		{"min.compaction.lag.ms", "-1", "at least 0"},
		{"max.compaction.lag.ms", "1", ""},
		{"max.compaction.lag.ms", "0", "at least 1"},
		{"min.insync.replicas", "0", "at least 1"},
		{"message.timestamp.before.max.ms", "0", ""},
		{"message.timestamp.before.max.ms", "9223372036854775807", ""},
		{"message.timestamp.after.max.ms", "-1", "at least 0"},
		// compression levels
		{"compression.gzip.level", "-1", ""},
		{"compression.gzip.level", "1", ""},
		{"compression.gzip.level", "9", ""},
		{"compression.gzip.level", "0", "-1 or between 1 and 9"},
		{"compression.gzip.level", "10", "-1 or between 1 and 9"},
		{"compression.lz4.level", "1", ""},
		{"compression.lz4.level", "17", ""},
		{"compression.lz4.level", "18", "between 1 and 17"},
		{"compression.zstd.level", "-131072", ""},
		{"compression.zstd.level", "22", ""},
		{"compression.zstd.level", "23", "between -131072 and 22"},
		{"compression.zstd.level", "-131073", "between -131072 and 22"},
		// doubles
		{"min.cleanable.dirty.ratio", "0", ""},
		{"min.cleanable.dirty.ratio", "0.75", ""},
		{"min.cleanable.dirty.ratio", "1", ""},
		{"min.cleanable.dirty.ratio", "1.5", "between 0 and 1"},
		{"min.cleanable.dirty.ratio", "-0.1", "between 0 and 1"},
		{"min.cleanable.dirty.ratio", "NaN", "between 0 and 1"},
		{"min.cleanable.dirty.ratio", "half", "not a number"},
		// strings and lists
		{"message.timestamp.type", "LogAppendTime", ""},
		{"message.timestamp.type", "logappendtime", "must be one of"},
		{"compression.type", "producer", ""},
		{"compression.type", "zstd", ""},
		{"compression.type", "uncompressed", ""},
		{"compression.type", "gzip", ""},
		{"compression.type", "brotli", "must be one of"},
		{"cleanup.policy", "delete", ""},
		{"cleanup.policy", "delete,compact", ""},
		{"cleanup.policy", "compact", ""},
		{"cleanup.policy", "shred", "list of compact, delete"},
		{"leader.replication.throttled.replicas", "", ""},
		{"leader.replication.throttled.replicas", "*", ""},
		{"leader.replication.throttled.replicas", "0:1, 1:2", ""},
		{"follower.replication.throttled.replicas", "0-1", "partition:broker"},
		{"follower.replication.throttled.replicas", "a:1", "partition:broker"},
		// not a Kafka topic config
		{"message.format.version", "3.0", "unknown topic config"},
		{"retention.hours", "1", "unknown topic config"},
	}
	for _, tc := range cases {
		err := ValidateOne(tc.name, tc.value)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s=%q: got %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
}

// TestDefaultsAreValid checks every default passes its own validation and
// every key names a synonym DescribeConfigs can report.
func TestDefaultsAreValid(t *testing.T) {
	for _, n := range Names() {
		k := Keys[n]
		if err := ValidateOne(n, k.Default); err != nil {
			t.Errorf("default of %s: %v", n, err)
		}
		if k.Synonym == "" || k.Doc == "" {
			t.Errorf("%s: missing synonym or doc", n)
		}
	}
}

func TestTimestampBounds(t *testing.T) {
	if b, a := TimestampBounds(nil); b != MaxTimestampBound || a != 3600000 {
		t.Fatalf("defaults: before %d after %d", b, a)
	}
	b, a := TimestampBounds(map[string]string{"message.timestamp.before.max.ms": "1000", "message.timestamp.after.max.ms": "9223372036854775807"})
	if b != 1000 || a != MaxTimestampBound {
		t.Fatalf("overrides: before %d after %d", b, a)
	}
	// The deprecated difference bound fills in whichever bound is not set.
	for _, tc := range []struct {
		cfg           map[string]string
		before, after int64
	}{
		{map[string]string{"message.timestamp.difference.max.ms": "5000"}, 5000, 5000},
		{map[string]string{"message.timestamp.difference.max.ms": "5000", "message.timestamp.before.max.ms": "1000"}, 1000, 5000},
		{map[string]string{"message.timestamp.difference.max.ms": "5000", "message.timestamp.after.max.ms": "2000"}, 5000, 2000},
	} {
		if b, a := TimestampBounds(tc.cfg); b != tc.before || a != tc.after {
			t.Errorf("%v: before %d after %d, want %d and %d", tc.cfg, b, a, tc.before, tc.after)
		}
	}
}

func TestLogConfigDefaultsAndOverrides(t *testing.T) {
	lc := LogConfig(nil)
	if lc.RetentionMs != 7*24*time.Hour || lc.RetentionBytes != 0 || lc.SegmentBytes != 1<<30 {
		t.Fatalf("defaults: %+v", lc)
	}
	if lc.SegmentJitter != 0 {
		t.Fatalf("segment.jitter.ms defaults to %v", lc.SegmentJitter)
	}
	lc = LogConfig(map[string]string{"retention.ms": "-1", "segment.ms": "60000", "segment.jitter.ms": "5000"})
	if lc.RetentionMs != 0 || lc.SegmentMs != time.Minute || lc.SegmentJitter != 5*time.Second {
		t.Fatalf("overrides: %+v", lc)
	}
	if MaxMessageBytes(map[string]string{"max.message.bytes": "100"}) != 100 || MaxMessageBytes(nil) != 1048588 {
		t.Fatal("max.message.bytes")
	}
	// retention.ms and retention.bytes: zero in LogConfig is no limit
	// (Kafka's -1), so Kafka's 0 (keep nothing) is negative there.
	for _, c := range []struct {
		ms, bytes string
		wantMs    time.Duration
		wantBytes int64
	}{
		{"-1", "-1", 0, 0},
		{"0", "0", -1, -1},
		{"1", "1", time.Millisecond, 1},
		{"3600000", "1048576", time.Hour, 1 << 20},
	} {
		lc := LogConfig(map[string]string{"retention.ms": c.ms, "retention.bytes": c.bytes})
		if lc.RetentionMs != c.wantMs || lc.RetentionBytes != c.wantBytes {
			t.Errorf("retention.ms=%s retention.bytes=%s: RetentionMs %v RetentionBytes %d, want %v %d",
				c.ms, c.bytes, lc.RetentionMs, lc.RetentionBytes, c.wantMs, c.wantBytes)
		}
	}
	// file.delete.delay.ms is always set: zero in LogConfig would be the
	// engine's default, so Kafka's 0 (at once) is negative there.
	for v, want := range map[string]time.Duration{"": time.Minute, "100": 100 * time.Millisecond, "0": -1} {
		cfg := map[string]string{"file.delete.delay.ms": v}
		if v == "" {
			cfg = nil
		}
		if got := LogConfig(cfg).FileDeleteDelay; got != want {
			t.Errorf("file.delete.delay.ms %q: FileDeleteDelay %v, want %v", v, got, want)
		}
	}
}

func TestCompactionConfig(t *testing.T) {
	compact := map[string]string{"cleanup.policy": "compact", "retention.ms": "1000", "min.cleanable.dirty.ratio": "0.25",
		"min.compaction.lag.ms": "5", "delete.retention.ms": "7"}
	if c := LogConfig(compact); c.RetentionMs != 0 || c.RetentionBytes != 0 {
		t.Fatalf("compact alone must not delete by retention: %+v", c)
	}
	if !Compacted(compact) || Compacted(map[string]string{}) || !Compacted(map[string]string{"cleanup.policy": "delete, compact"}) {
		t.Fatal("Compacted misreads cleanup.policy")
	}
	both := map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "1000"}
	if c := LogConfig(both); c.RetentionMs != time.Second {
		t.Fatalf("compact,delete keeps retention.ms: %+v", c)
	}
	if c := LogConfig(map[string]string{"cleanup.policy": "compact", "max.compaction.lag.ms": "60000"}); c.SegmentMs != time.Minute {
		t.Fatalf("max.compaction.lag.ms does not roll the active segment: %+v", c)
	}
	if c := LogConfig(map[string]string{"max.compaction.lag.ms": "60000"}); c.SegmentMs == time.Minute {
		t.Fatalf("max.compaction.lag.ms rolls a non-compacted topic: %+v", c)
	}
	if c := Compaction(compact); c.MinDirtyRatio != 0.25 || c.MinLagMs != 5 || c.DeleteRetention != 7 || c.MaxLagMs != 9223372036854775807 {
		t.Fatalf("Compaction: %+v", c)
	}
}

// TestRecompression: compression.type names the codec batches are stored
// with; producer (the default) keeps them as produced.
func TestRecompression(t *testing.T) {
	cases := []struct {
		value string
		codec int16
		ok    bool
	}{
		{"", 0, false}, // default: producer
		{"producer", 0, false},
		{"uncompressed", batch.CodecNone, true},
		{"gzip", batch.CodecGzip, true},
		{"snappy", batch.CodecSnappy, true},
		{"lz4", batch.CodecLz4, true},
		{"zstd", batch.CodecZstd, true},
	}
	for _, c := range cases {
		cfg := map[string]string{}
		if c.value != "" {
			cfg["compression.type"] = c.value
		}
		if codec, ok := Recompression(cfg); codec != c.codec || ok != c.ok {
			t.Errorf("%q: codec %d ok %v, want %d %v", c.value, codec, ok, c.codec, c.ok)
		}
	}
}
