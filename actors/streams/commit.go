package streams

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// validateCommit is Kafka's StreamsGroup.validateOffsetCommit: a member
// commits at its current epoch; a commit without an epoch only while the
// group is empty. (Kafka accepts a TxnOffsetCommit naming no member, no
// generation and no instance without these checks: the caller's case.)
func (g *Group) validateCommit(_ time.Time, memberID string, epoch int32) int16 {
	if epoch < 0 && len(g.members) == 0 {
		return 0
	}
	return g.checkMemberEpoch(memberID, epoch)
}

// validateFetch is Kafka's StreamsGroup.validateOffsetFetch.
func (g *Group) validateFetch(memberID *string, epoch int32) int16 {
	if memberID == nil && epoch < 0 {
		return 0
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	return g.checkMemberEpoch(id, epoch)
}

// checkMemberEpoch accepts a known member at its current epoch only.
func (g *Group) checkMemberEpoch(memberID string, epoch int32) int16 {
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID.Code
	}
	if epoch != m.epoch {
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}
