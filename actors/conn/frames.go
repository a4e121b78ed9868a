package conn

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire"
)

// framePoolBudget bounds the free request buffers a broker keeps for
// reuse (wire.FramePool).
const framePoolBudget = 64 << 20

// reusableFrame is the frame to give back to the pool once the request's
// Pending has returned, or nil to leave it to the garbage collector.
//
// Only Produce frames go back. A decoded request's byte fields alias the
// frame (kmsg decodes bytes without copying), and a Produce's record
// batches are lent to partition actors; each of them answers only after it
// is done with the batch: the disk log writes it before Append returns,
// the in-memory log copies it, a transactional batch waiting for its
// verification is held in the partition's queue and answered after its
// append, and validation, quotas, recompression and tracing links read it
// before the answer. The Pending returns once every partition has
// answered, so then nothing refers to the frame. Other requests may keep
// their bytes (group member metadata, SASL tokens, ...), so their frames
// are never reused.
func reusableFrame(hdr wire.RequestHeader, frame []byte) []byte {
	if hdr.Key != kmsg.Produce.Int16() {
		return nil
	}
	return frame
}

// Frames is the pool request frames are read into (tests turn its
// poisoning on).
func (s *Server) Frames() *wire.FramePool { return s.frames }
