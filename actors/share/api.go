package share

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/actors/tracing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/sharestate"
)

// Register serves ShareFetch (key 78), ShareAcknowledge (key 79) and
// DescribeShareGroupOffsets (key 90) on srv. The share-group heartbeat and describe (keys 76, 77) are the group
// coordinator's (actors/group).
func (k *Keeper) Register(srv *conn.Server) {
	srv.Register(conn.API{Key: kmsg.ShareFetch.Int16(), MinVersion: 0, MaxVersion: 2, Handle: k.handleShareFetch})
	srv.Register(conn.API{Key: kmsg.ShareAcknowledge.Int16(), MinVersion: 0, MaxVersion: 2, Handle: k.handleShareAcknowledge})
	k.registerDescribeOffsets(srv)
	srv.OnConnectionClosed(func(c int64) { k.ref.Send(&connClosed{conn: c}) })
}

// call sends msg to the keeper and returns a wait for the reply.
func call[T any](k *Keeper, r *conn.Request, build func(reply func(T)) any) func() T {
	ch := make(chan T, 1)
	k.ref.Send(tracing.Wrap(r.Ctx, build(func(x T) { ch <- x })))
	return func() T { return <-ch }
}

// validMember is Kafka's check of a share request's member id: 1 to 36
// characters (membership itself is not checked here: the partition leader
// does not know it).
func validMember(group, member *string) bool {
	return group != nil && *group != "" && member != nil && *member != "" && len(*member) <= 36
}

func toAcks[B any](batches []B, get func(B) (int64, int64, []int8)) []AckBatch {
	out := make([]AckBatch, 0, len(batches))
	for _, b := range batches {
		first, last, types := get(b)
		a := AckBatch{First: first, Last: last}
		for _, t := range types {
			a.Types = append(a.Types, AckType(t))
		}
		out = append(out, a)
	}
	return out
}

func (k *Keeper) lockMillis() int32 { return int32(k.opts.Partition.LockDuration.Milliseconds()) }

// awaitWritten waits for the step's changes to be persisted and answers
// the partitions whose changes were not written:
//   - a later leader claimed the share-partition meanwhile, or an admin
//     changed its state since it was loaded here (sharestate.ErrSuperseded):
//     NOT_LEADER_OR_FOLLOWER, acknowledgements too. This broker is a
//     deposed leader (its view has not caught up yet), or holds state an
//     admin replaced, and the keeper dropped the share-partition. Kafka's
//     share consumers treat it as a leader change: they refresh their
//     metadata and fetch from the new leader, and report the
//     acknowledgements failed without retrying them here (franz-go's
//     isShareAckRetryable), so the new leader delivers the records again
//     (at least once), never taken as acknowledged.
//   - the volume failed the write: acknowledgements KAFKA_STORAGE_ERROR.
//     The share-partition holds them in memory and its next snapshot
//     carries them, but a client told they were stored could lose them
//     to a crash before that; the records read stay delivered.
func (br *beginResult) awaitWritten(group string) {
	if br.durable == nil {
		return
	}
	failed := br.durable()
	for i := range br.parts {
		p := &br.parts[i]
		err, ok := failed[pkey{group, tpOf(*p)}]
		switch {
		case !ok:
		case errors.Is(err, sharestate.ErrSuperseded):
			p.Read = false
			if p.Code == 0 {
				p.Code = kerr.NotLeaderForPartition.Code
			}
			if p.acked && p.AckCode == 0 {
				p.AckCode = kerr.NotLeaderForPartition.Code
			}
		case p.acked && p.AckCode == 0:
			p.AckCode = kerr.KafkaStorageError.Code
		}
	}
}

// partRead is one partition's read in flight.
type partRead struct {
	part PartResult
	res  messages.FetchResult
	recs []byte
}

// readAll reads every partition of parts through its partition actor's
// normal read path and returns what each found (the batches' bytes,
// copied: the response carries them with the acquired ranges).
func readAll(r *conn.Request, parts []PartResult, maxBytes int32) []*partRead {
	v := r.CurrentView()
	reads := make([]*partRead, 0, len(parts))
	done := make(chan struct{}, len(parts))
	sent := 0
	for _, p := range parts {
		pr := &partRead{part: p}
		reads = append(reads, pr)
		t := v.Topics[p.Topic]
		ref, ok := v.Local[tpOf(p)]
		if t == nil || !ok {
			pr.res.ErrorCode = kerr.NotLeaderForPartition.Code
			continue
		}
		sent++
		off := p.Offset
		if off < 0 {
			off = -1 // out of range: the answer carries the log's bounds
		}
		var isolation int8
		if p.ReadCommitted {
			isolation = 1 // up to the last stable offset, with the aborted transactions
		}
		ref.Send(tracing.Wrap(r.Ctx, &messages.Fetch{
			Offset: off, MaxBytes: maxBytes, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, IsolationLevel: isolation,
			Reply: func(res messages.FetchResult) {
				pr.res = res
				if res.Records != nil {
					if b, err := res.Records.AppendTo(nil); err == nil {
						pr.recs = b
					} else {
						pr.res.ErrorCode = kerr.KafkaStorageError.Code
					}
					_ = res.Records.Close()
					pr.res.Records = nil
				}
				done <- struct{}{}
			},
		}))
	}
	for range sent {
		<-done
	}
	return reads
}

// bounds is the first and last offset of the whole batches in b.
func bounds(b []byte) (first, last int64) {
	first, last = 0, -1
	batches, _, err := batch.Split(b)
	if err != nil || len(batches) == 0 {
		return
	}
	for i, x := range batches {
		h, err := batch.ParseHeader(x)
		if err != nil {
			break
		}
		if i == 0 {
			first = h.BaseOffset
		}
		last = h.LastOffset()
	}
	return
}

// abortedRanges is the offsets of the data batches of b that aborted
// transactions wrote, found as a read_committed consumer finds them: a
// producer's batches are skipped from its aborted transaction's first
// offset until its abort marker. Control batches are not included: they
// are delivered and acknowledged as gaps, as under read_uncommitted.
func abortedRanges(b []byte, aborted []messages.AbortedTxn) []Range {
	pending := slices.SortedFunc(slices.Values(aborted), func(x, y messages.AbortedTxn) int { return cmp.Compare(x.FirstOffset, y.FirstOffset) })
	batches, _, err := batch.Split(b)
	if err != nil {
		return nil
	}
	skipping := map[int64]bool{}
	var out []Range
	for _, x := range batches {
		h, err := batch.ParseHeader(x)
		if err != nil {
			break
		}
		for len(pending) > 0 && pending[0].FirstOffset <= h.LastOffset() {
			skipping[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		switch {
		case h.IsControl():
			if typ, err := batch.ControlType(x); err == nil && typ == batch.ControlAbort {
				delete(skipping, h.ProducerID)
			}
		case h.IsTransactional() && skipping[h.ProducerID]:
			if k := len(out) - 1; k >= 0 && out[k].Last == h.BaseOffset-1 {
				out[k].Last = h.LastOffset()
			} else {
				out = append(out, Range{First: h.BaseOffset, Last: h.LastOffset()})
			}
		}
	}
	return out
}

// acquiredBatches keeps the batches of b that hold an acquired offset.
func acquiredBatches(b []byte, ranges []Range) []byte {
	batches, _, _ := batch.Split(b)
	var out []byte
	for _, x := range batches {
		h, err := batch.ParseHeader(x)
		if err != nil {
			break
		}
		for _, rg := range ranges {
			if rg.First <= h.LastOffset() && rg.Last >= h.BaseOffset {
				out = append(out, x...)
				break
			}
		}
	}
	return out
}

// fetched is one partition's records and acquired ranges so far.
type fetched struct {
	recs   []byte
	ranges []Range
}

// fetchRecords reads and acquires records for the member: rounds of reads
// and acquisitions until something is acquired, or, when nothing is, a
// wait (up to maxWait) for any partition's high watermark to move. It
// returns the lock of the records acquired (0: none).
func (k *Keeper) fetchRecords(r *conn.Request, group, member string, parts []PartResult, maxRecords int, maxBytes int32, maxWait time.Duration, out map[TP]*fetched, errs map[TP]int16) (lock time.Duration) {
	var deadline time.Time
	if maxWait > 0 {
		deadline = k.opts.Clock.Now().Add(maxWait)
	}
	for round := 0; len(parts) > 0; round++ {
		// The group's settings in force read this round already (its
		// isolation level decides what the read returns) and reach the
		// share-partitions with the acquisition that follows.
		cfg := k.groupConfig(group)
		if cfg != nil {
			for i := range parts {
				parts[i].ReadCommitted = cfg.ReadCommitted
			}
		}
		reads := readAll(r, parts, maxBytes)
		acq := &acquire{group: group, member: member, maxRecords: maxRecords}
		for _, rd := range reads {
			first, last := bounds(rd.recs)
			read := Read{TP: rd.part.TP, Topic: rd.part.Topic, Code: rd.res.ErrorCode,
				LogStart: rd.res.LogStartOffset, HighWatermark: rd.res.HighWatermark, First: first, Last: last}
			if len(rd.res.Aborted) > 0 {
				read.Aborted = abortedRanges(rd.recs, rd.res.Aborted)
			}
			if rd.part.Offset < 0 {
				var code int16
				read.Stored, read.Mark, read.Claim, code = k.loadStored(group, rd.part, r.CurrentView())
				if code != 0 {
					read.Code, errs[rd.part.TP] = code, code
				}
			}
			read.Config = cfg
			acq.reads = append(acq.reads, read)
			if c := rd.res.ErrorCode; c != 0 && c != kerr.OffsetOutOfRange.Code {
				errs[rd.part.TP] = c
			}
		}
		res := call(k, r, func(reply func(acquireResult)) any { acq.reply = reply; return acq })()
		for key, err := range res.durable() {
			// Acquired under a claim a later leader took: not
			// recorded, not delivered (beginResult.awaitWritten).
			// An acquisition the volume failed to record is still
			// delivered: the lock is in memory, and a crash before the
			// next snapshot only makes the records available again.
			if !errors.Is(err, sharestate.ErrSuperseded) {
				continue
			}
			for _, rd := range reads {
				if key == (pkey{group, tpOf(rd.part)}) {
					delete(res.ranges, rd.part.TP)
					errs[rd.part.TP] = kerr.NotLeaderForPartition.Code
				}
			}
		}
		lock = max(lock, res.lock)
		got := 0
		for _, rd := range reads {
			if rg := res.ranges[rd.part.TP]; len(rg) > 0 {
				f := out[rd.part.TP]
				if f == nil {
					f = &fetched{}
					out[rd.part.TP] = f
				}
				f.recs = append(f.recs, acquiredBatches(rd.recs, rg)...)
				f.ranges = append(f.ranges, rg...)
				got++
			}
		}
		if got > 0 || len(errs) > 0 {
			return
		}
		if !res.again || round >= 3 {
			if deadline.IsZero() || !k.waitForData(r, reads, deadline) {
				return
			}
		}
		parts = call(k, r, func(reply func([]PartResult)) any {
			return &where{group: group, parts: parts, reply: reply}
		})()
	}
	return lock
}

// waitForData waits until a partition's high watermark moves past where
// it was read, or the deadline; false once the deadline passed.
func (k *Keeper) waitForData(r *conn.Request, reads []*partRead, deadline time.Time) bool {
	wait := deadline.Sub(k.opts.Clock.Now())
	if wait <= 0 {
		return false
	}
	v := r.CurrentView()
	woken := make(chan struct{}, 1)
	for _, rd := range reads {
		ref, ok := v.Local[tpOf(rd.part)]
		if !ok {
			continue
		}
		ref.Send(tracing.Wrap(r.Ctx, &messages.WatchHighWatermark{Offset: max(rd.res.HighWatermark, rd.part.Offset), Notify: func() {
			select {
			case woken <- struct{}{}:
			default:
			}
		}}))
	}
	expired := make(chan struct{})
	t := k.opts.Clock.AfterFunc(wait, func() { close(expired) })
	defer t.Stop()
	select {
	case <-woken:
		return true
	case <-expired:
		return false
	}
}

// loadStored reads a share-partition's persisted state and admin mark for
// its first use on this broker (here, in the request's handler, not in the
// keeper's Receive), under the claim it takes first (sharestate.Store.Claim):
// the position of v, the view in which this broker leads the partition
// (returned as claim). A later claim on the volume means another leader
// loaded the share-partition from a later assignment file: this broker,
// behind it, answers NOT_LEADER_OR_FOLLOWER (see beginResult.awaitWritten).
// The mark is read first: an admin change between the two reads leaves a
// newer snapshot with an older mark, which the next share session's
// recheck reloads. The snapshot is nil when there is none, or a corrupt
// one (logged: the share-partition starts afresh); a snapshot of an
// earlier topic of the same name is removed and none is returned. A read
// the volume fails answers KAFKA_STORAGE_ERROR: the share-partition stays
// uninitialized and the client's next fetch reads again, where starting
// afresh would skip what the stored state had still to deliver.
func (k *Keeper) loadStored(group string, p PartResult, v *routing.View) (stored *sharestate.Snapshot, mark uint64, claim *assignment.Position, code int16) {
	if k.opts.Store == nil {
		return nil, 0, nil, 0
	}
	log := func(err error) *zerolog.Event {
		return k.opts.Log.Error().Err(err).Str("group", group).Str("topic", p.Topic).Int32("partition", p.Partition)
	}
	if _, led := v.Local[tpOf(p)]; !led {
		// Claims are taken only from a file in which this broker
		// leads: the partition's leader in a file is unique, so two
		// brokers never hold the same claim.
		return nil, 0, nil, kerr.NotLeaderForPartition.Code
	}
	at := assignment.Position{Epoch: v.Epoch, Version: v.Version}
	unlock, err := k.opts.Store.Claim(group, p.Topic, p.Partition, at)
	switch {
	case errors.Is(err, sharestate.ErrSuperseded):
		k.opts.Log.Warn().Err(err).Str("group", group).Str("topic", p.Topic).Int32("partition", p.Partition).
			Msg("share-partition claimed by a later leader; answering NOT_LEADER_OR_FOLLOWER")
		return nil, 0, nil, kerr.NotLeaderForPartition.Code
	case err != nil:
		log(err).Msg("claiming share-partition state failed; the fetch is answered KAFKA_STORAGE_ERROR")
		return nil, 0, nil, kerr.KafkaStorageError.Code
	}
	defer unlock()
	mark, err = k.opts.Store.LoadMark(group, p.Topic, p.Partition)
	switch {
	case errors.Is(err, sharestate.ErrCorrupt):
		log(err).Msg("share-partition mark unreadable")
	case err != nil:
		log(err).Msg("reading share-partition state failed; the fetch is answered KAFKA_STORAGE_ERROR")
		return nil, 0, nil, kerr.KafkaStorageError.Code
	}
	snap, ok, err := k.opts.Store.Load(group, p.Topic, p.Partition)
	switch {
	case errors.Is(err, sharestate.ErrCorrupt):
		log(err).Msg("share-partition state unreadable; starting afresh")
		return nil, mark, &at, 0
	case err != nil:
		log(err).Msg("reading share-partition state failed; the fetch is answered KAFKA_STORAGE_ERROR")
		return nil, 0, nil, kerr.KafkaStorageError.Code
	case !ok:
		return nil, mark, &at, 0
	}
	if !snap.Of(p.TopicID) {
		k.opts.Log.Info().Str("group", group).Str("topic", p.Topic).Int32("partition", p.Partition).Msg("share-partition state of a deleted topic of the same name removed; starting afresh")
		if err := k.opts.Store.Discard(group, p.Topic, p.Partition); err != nil {
			log(err).Msg("removing share-partition state of a deleted topic failed")
		}
		return nil, mark, &at, 0
	}
	return &snap, mark, &at, 0
}

// groupConfigTTL is how long a group's configs read from the store serve
// its share-partitions before they are read again: a change reaches the
// share-partitions of every leader within it.
const groupConfigTTL = 5 * time.Second

// cachedConfig is a group's share-partition settings and when they were read.
type cachedConfig struct {
	cfg  Config
	read time.Time
}

// GroupConfigsChanged drops the settings read of group: a change of its
// GROUP configs through this broker applies from the next read on (through
// another broker, within groupConfigTTL).
func (k *Keeper) GroupConfigsChanged(group string) { k.configs.Delete(group) }

// groupConfig is the share-partition settings with group's config
// overrides (the broker's without any), read (here, in the request's
// handler) at most every groupConfigTTL per group; nil without a group
// config store. Unreadable overrides are logged and the last ones read
// (else the broker's settings) apply.
func (k *Keeper) groupConfig(group string) *Config {
	if k.opts.GroupConfigs == nil {
		return nil
	}
	now := k.opts.Clock.Now()
	c, ok := k.configs.Load(group)
	if ok && now.Sub(c.(*cachedConfig).read) < groupConfigTTL {
		cfg := c.(*cachedConfig).cfg
		return &cfg
	}
	cfg := k.opts.Partition
	if ok {
		cfg = c.(*cachedConfig).cfg
	}
	if set, err := k.opts.GroupConfigs.Load(group); err != nil {
		k.opts.Log.Error().Err(err).Str("group", group).Msg("group configs unreadable; the share settings last read apply")
	} else {
		cfg = WithGroupConfigs(k.opts.Partition, k.opts.GroupConfigs.Bounded(set))
	}
	k.configs.Store(group, &cachedConfig{cfg: cfg, read: now})
	if k.configReads.Add(1)%256 == 0 {
		// Groups no longer fetching leave the cache.
		k.configs.Range(func(g, c any) bool {
			if now.Sub(c.(*cachedConfig).read) > 10*groupConfigTTL {
				k.configs.Delete(g)
			}
			return true
		})
	}
	return &cfg
}
