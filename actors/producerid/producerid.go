// Package producerid allocates producer ids that are unique across the
// brokers of a cluster and across restarts of each broker, without a
// round trip to the controller.
//
// Every broker allocates ids for idempotent producers (InitProducerId
// without a transactional id) and for the transactional ids it
// coordinates. Partition leaders key producer state by id, and group
// coordinators key pending transactional offsets by id: two producers
// handed the same id by two brokers would fence, deduplicate or commit
// each other's work. An id is laid out as
//
//	[ 41 bits: block, ms since 2024-01-01 | 12 bits: broker id mod 4096 | 10 bits: sequence ]
//
// so brokers with different ids (mod 4096) never collide, and a broker
// that restarts starts at a later millisecond than any block it used
// before, as long as it allocated on average fewer than 1,024 ids per
// millisecond (a faster run takes blocks from future milliseconds, which
// a restart within that lead could reuse).
package producerid

import (
	"sync"
	"time"
)

const (
	sequenceBits = 10
	brokerBits   = 12
	blockBits    = 63 - sequenceBits - brokerBits
)

// epoch is the zero of the block field: 2^41 ms from it is the year 2093.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Generator hands out producer ids for one broker. It is safe for
// concurrent use.
type Generator struct {
	now    func() time.Time
	broker int64

	mu    sync.Mutex
	block int64 // ms since epoch of the current block; -1 before the first
	seq   int64 // next sequence number within block
}

// New returns a generator for broker, reading the time from now.
func New(broker int32, now func() time.Time) *Generator {
	return &Generator{now: now, broker: int64(broker) & (1<<brokerBits - 1), block: -1}
}

// Next returns an id no other call of this generator, of a generator of
// another broker id (mod 4096), or of an earlier incarnation of this
// broker returned.
func (g *Generator) Next() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.block < 0 || g.seq == 1<<sequenceBits {
		ms := max(g.now().Sub(epoch).Milliseconds(), 0)
		g.block, g.seq = max(ms, g.block+1), 0
	}
	id := (g.block&(1<<blockBits-1))<<(brokerBits+sequenceBits) | g.broker<<sequenceBits | g.seq
	g.seq++
	return id
}
