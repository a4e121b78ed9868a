package partition

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kaas-project/kaas/actors/metrics"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/compaction"
	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/topicconfig"
)

// CleanerConfig is the broker's log cleaner (cleanup.policy=compact).
type CleanerConfig struct {
	// MapBytes bounds one pass's key map (Kafka's
	// log.cleaner.dedupe.buffer.size), read at each pass; default 128 MiB.
	MapBytes func() int64
	// Throttle paces every cleaner of the broker (--cleaner-io-rate).
	Throttle *compaction.Throttle
	// Interval is how long a compacted partition waits before it checks
	// again whether it is dirty enough to clean (Kafka's
	// log.cleaner.backoff.ms), read at each wait; default 15 s.
	Interval func() time.Duration
}

func (c *CleanerConfig) defaults() {
	if c.MapBytes == nil {
		c.MapBytes = func() int64 { return 128 << 20 }
	}
	if c.Interval == nil {
		c.Interval = func() time.Duration { return 15 * time.Second }
	}
}

// cleanerSlots bounds the passes running at once in the process (Kafka's
// log.cleaner.threads = 1): a pass holds a key map of up to MapBytes.
var cleanerSlots = make(chan struct{}, 1)

// cleanerTick asks the actor to check its log for cleaning.
type cleanerTick struct{}

// compacted reports a pass run off the actor's goroutine.
type compacted struct {
	log storage.Log
	res storage.CompactResult
	err error
	at  time.Time
}

// armCleaner schedules the next cleaner check, once, for a compacted topic.
func (a *Actor) armCleaner() {
	if a.cleanerArmed || a.cleaning || !topicconfig.Compacted(a.topicConfig) {
		return
	}
	a.cleanerArmed = true
	self, system := a.self, a.system
	a.cfg.Clock.AfterFunc(a.cfg.Cleaner.Interval(), func() { system.Root.Send(self, cleanerTick{}) })
}

// onCleanerTick starts a pass if the partition leads a compactable log;
// while it opens, it checks again later.
func (a *Actor) onCleanerTick() {
	a.cleanerArmed = false
	if a.core.phase == phaseOpening {
		a.armCleaner()
		return
	}
	a.startClean()
}

// startClean runs one cleaning pass on a goroutine (one per process at a
// time); the actor hears of it through a compacted message and never waits.
func (a *Actor) startClean() {
	l := a.core.Log()
	c, ok := l.(storage.Compactor)
	if a.cleaning || !ok || !a.core.Leading() || !topicconfig.Compacted(a.topicConfig) {
		return
	}
	a.cleaning = true
	now, cfg := a.cfg.Clock.Now(), topicconfig.Compaction(a.topicConfig)
	req := storage.CompactRequest{Now: now, Config: cfg, MapBytes: a.cfg.Cleaner.MapBytes(), Throttle: a.cfg.Cleaner.Throttle,
		IndexedAborts: a.core.Producers().IndexedAborts(now.UnixMilli(), cfg.DeleteRetention), IndexedTo: l.NextOffset()}
	self, system, clk := a.self, a.system, a.cfg.Clock
	go func() {
		cleanerSlots <- struct{}{}
		res, err := c.Compact(req)
		<-cleanerSlots
		system.Root.Send(self, compacted{log: l, res: res, err: err, at: clk.Now()})
	}()
}

// onCompacted records a finished pass and schedules the next check.
func (a *Actor) onCompacted(m compacted) {
	a.cleaning = false
	var at float64
	if m.res.Cleaned {
		at = float64(m.at.UnixNano()) / 1e9
	}
	quiet := m.err == nil || errors.Is(m.err, storage.ErrClosed) || errors.Is(m.err, disklog.ErrSuperseded)
	switch {
	case !quiet:
		a.log.Error().Err(m.err).Msg("log compaction")
	case m.err != nil:
		// A handoff or a newer leader ended the pass: expected, nothing swapped.
		a.log.Info().Err(m.err).Msg("log compaction pass abandoned")
	}
	if m.log != a.core.Log() || !a.core.Leading() {
		metrics.CleanerForget(a.id.Topic, a.id.Partition)
		return
	}
	if m.res.Cleaned {
		// Swapped in: reads see the cleaned log from now on, so fetches
		// stop naming the transactions it emptied.
		a.core.Producers().AbortsCompacted(m.res.AbortsEmptied, m.res.AbortsRemoved, m.at.UnixMilli())
	}
	var err error
	if !quiet {
		err = m.err
	}
	metrics.CleanerChecked(a.id.Topic, a.id.Partition, m.res.Plan.DirtyRatio, m.res.CleanedTo, at, m.res.BytesRead, err)
	a.armCleaner()
}

// checkKeys refuses a batch with a record without a key on a compacted
// topic, as Kafka does (INVALID_RECORD): the cleaner could only drop it.
// keyless holds the batch indexes of those records (batch.Scan); every one
// is named, as Kafka's LogValidator does (one record error each), so the
// client fails only those.
func checkKeys(keyless []int32, tp string) (int16, string, []messages.RecordError) {
	if len(keyless) == 0 {
		return 0, "", nil
	}
	errs := make([]messages.RecordError, len(keyless))
	for i, idx := range keyless {
		errs[i] = messages.RecordError{BatchIndex: idx, Message: "Compacted topic cannot accept message without key in topic partition " + tp + "."}
	}
	return kerr.InvalidRecord.Code, fmt.Sprintf("compacted topic cannot accept a record without a key (offset delta %d)", keyless[0]), errs
}
