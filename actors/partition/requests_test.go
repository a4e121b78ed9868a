package partition

import (
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

func TestCheckTimestamps(t *testing.T) {
	const (
		now  = int64(1_700_000_000_000)
		none = topicconfig.MaxTimestampBound
	)
	cases := []struct {
		name          string
		min, max      int64 // the records' (batch.Scan)
		before, after int64
		want          string // substring of the message; "" = accepted
	}{
		{"no bounds", 0, now + 1e12, none, none, ""},
		{"within both", now - 1000, now + 1000, 1000, 1000, ""},
		{"oldest too old", now - 1001, now, 1000, none, "before.max.ms"},
		{"max too new", now, now + 1001, none, 1000, "after.max.ms"},
		{"zero bounds accept now", now, now, 0, 0, ""},
		{"zero before refuses a millisecond ago", now - 1, now, 0, none, "before.max.ms"},
		{"default after bound", now, now + 3600001, none, 3600000, "after.max.ms"},
		{"no timestamps", math.MaxInt64, -1, 0, 0, ""},
		{"huge bounds do not overflow", 0, now + 1e12, none - 1, none - 1, ""},
		{"old records, max unchecked", now - 5000, now - 4000, 1000, none, "before.max.ms"},
	}
	for _, tc := range cases {
		code, msg := checkTimestamps(batch.Scan{MinTimestamp: tc.min, MaxTimestamp: tc.max}, tc.before, tc.after, now)
		switch {
		case tc.want == "" && code != 0:
			t.Errorf("%s: refused with %d %q", tc.name, code, msg)
		case tc.want != "" && (code != kerr.InvalidTimestamp.Code || !strings.Contains(msg, tc.want)):
			t.Errorf("%s: got %d %q, want INVALID_TIMESTAMP %q", tc.name, code, msg, tc.want)
		}
	}
}
