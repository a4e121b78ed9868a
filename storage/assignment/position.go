package assignment

import "cmp"

// Position orders assignment files: by controller epoch, then by assignment
// version within an epoch. Every comparison of two files (the follower
// accepting a newer one, the heartbeat client deciding whether it has
// caught up with the file a PONG names, the controller checking whose file
// is on the volume and which brokers' reports are current) goes through it.
type Position struct{ Epoch, Version int64 }

// PositionOf is the position of file a (the zero Position for nil).
func PositionOf(a *Assignment) Position {
	if a == nil {
		return Position{}
	}
	return Position{Epoch: a.ControllerEpoch, Version: a.AssignmentVersion}
}

// Compare returns -1, 0 or +1 as p is before, the same file as, or after q.
func (p Position) Compare(q Position) int {
	if c := cmp.Compare(p.Epoch, q.Epoch); c != 0 {
		return c
	}
	return cmp.Compare(p.Version, q.Version)
}

// Less reports whether p is before q.
func (p Position) Less(q Position) bool { return p.Compare(q) < 0 }

// AtLeast reports whether p is the same file as q or a later one.
func (p Position) AtLeast(q Position) bool { return p.Compare(q) >= 0 }
