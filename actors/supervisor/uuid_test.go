package supervisor

import (
	"testing"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/assignment"
)

func TestUUIDRoundTrip(t *testing.T) {
	for i := 0; i < 100; i++ {
		u := NewUUID()
		if u[6]>>4 != 4 || u[8]&0xc0 != 0x80 {
			t.Fatalf("not a v4 uuid: %x", u)
		}
		s := FormatUUID(u)
		back, err := ParseUUID(s)
		if err != nil || back != u {
			t.Fatalf("%s: %v %x", s, err, back)
		}
	}
	for _, bad := range []string{"", "not-a-uuid", "0123456789abcdef0123456789abcdef0123", "01234567-89ab-cdef-0123-456789abcdeg"} {
		if _, err := ParseUUID(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The partitions of __consumer_offsets are opened under the id clients see.
func TestOffsetsTopicID(t *testing.T) {
	v := &routing.View{}
	it, ok := v.Internal(assignment.OffsetsTopic)
	if !ok || FormatUUID(it.ID) != assignment.OffsetsTopicID {
		t.Fatalf("internal topic %v: id %s, want assignment.OffsetsTopicID %s", ok, FormatUUID(it.ID), assignment.OffsetsTopicID)
	}
}
