package group

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// PendingCommit is an accepted OffsetCommit waiting to become durable: its
// records must be persisted, then Apply (or Fail) called, then Response
// sent.
type PendingCommit struct {
	Response *kmsg.OffsetCommitResponse
	Records  []groupstore.Record
	slots    []*kmsg.OffsetCommitResponseTopicPartition
}

// OffsetCommit validates an OffsetCommit. Partitions of unknown topics get
// UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID by id, v10); the rest get the
// group's verdict. The returned commit's Records are empty when nothing was
// accepted.
func (g *Group) OffsetCommit(now time.Time, req *kmsg.OffsetCommitRequest, topics Topics) *PendingCommit {
	return g.offsetCommit(now, req, topics, false)
}

// TxnOffsetCommit validates a TxnOffsetCommit expressed as an OffsetCommit
// (asOffsetCommit) like OffsetCommit, except that a KIP-848 member may use
// it at any version (Kafka requires OffsetCommit v9+ of such members, not
// TxnOffsetCommit v5+).
func (g *Group) TxnOffsetCommit(now time.Time, req *kmsg.OffsetCommitRequest, topics Topics) *PendingCommit {
	return g.offsetCommit(now, req, topics, true)
}

func (g *Group) offsetCommit(now time.Time, req *kmsg.OffsetCommitRequest, topics Topics, txn bool) *PendingCommit {
	g.Tick(now)
	defer g.Tick(now)
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	pc := &PendingCommit{Response: resp}
	type slot struct {
		ti  TopicInfo
		p   kmsg.OffsetCommitRequestTopicPartition
		out *kmsg.OffsetCommitResponseTopicPartition
	}
	var valid []slot
	resp.Topics = make([]kmsg.OffsetCommitResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		var ti TopicInfo
		var ok bool
		missing := kerr.UnknownTopicOrPartition.Code
		if req.Version >= 10 {
			ti, ok = topics.ByID(t.TopicID)
			missing = kerr.UnknownTopicID.Code
			rt.Topic = ti.Name
		} else {
			ti, ok = topics.ByName(t.Topic)
		}
		rt.Partitions = make([]kmsg.OffsetCommitResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !ok:
				rp.ErrorCode = missing
			case p.Partition < 0 || p.Partition >= ti.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				valid = append(valid, slot{ti: ti, p: p, out: rp})
			}
		}
	}
	if len(valid) == 0 {
		return pc
	}
	if req.Version < 7 {
		req.InstanceID = nil
	}
	generation := req.Generation

	var code int16
	var perPartition func([16]byte, int32) int16
	switch {
	case g.state == Dead:
		code = kerr.CoordinatorNotAvailable.Code
	case g.kind == KindNone:
		if generation < 0 {
			// A simple group: it only stores offsets.
			g.kind = KindClassic
			g.setState(now, Empty)
		} else if req.Version >= 9 {
			code = kerr.GroupIDNotFound.Code
		} else {
			code = kerr.IllegalGeneration.Code
		}
	case g.kind == KindClassic:
		code = g.validateClassicCommit(now, txn, generation, req.MemberID, req.InstanceID)
	case g.kind == KindShare:
		// A share group's progress is its share-partitions' state, not
		// committed offsets.
		code = kerr.GroupIDNotFound.Code
	case g.kind == KindStreams:
		code = g.validateStreamsCommit(now, req.Version, txn, generation, req.MemberID, req.InstanceID)
	default:
		code, perPartition = g.validateConsumerCommit(now, req.Version, txn, generation, req.MemberID)
	}

	commitTime, expire := now.UnixMilli(), int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis >= 0 {
		expire = commitTime + req.RetentionTimeMillis
	}
	for _, s := range valid {
		switch {
		case code != 0:
			s.out.ErrorCode = code
			continue
		case perPartition != nil:
			if c := perPartition(s.ti.ID, s.p.Partition); c != 0 {
				s.out.ErrorCode = c
				continue
			}
		}
		if s.p.Metadata != nil && len(*s.p.Metadata) > g.cfg.MaxMetadataSize {
			s.out.ErrorCode = kerr.OffsetMetadataTooLarge.Code
			continue
		}
		c := groupstore.Commit{Offset: s.p.Offset, LeaderEpoch: -1, CommitTime: commitTime, ExpireTime: expire, TopicID: s.ti.ID}
		if req.Version >= 6 {
			c.LeaderEpoch = s.p.LeaderEpoch
		}
		if s.p.Metadata != nil {
			c.Metadata = *s.p.Metadata
		}
		tp := groupstore.TP{Topic: s.ti.Name, Partition: s.p.Partition}
		pc.Records = append(pc.Records, groupstore.Record{TP: tp, Commit: &c})
		pc.slots = append(pc.slots, s.out)
		g.inflight[tp]++
	}
	return pc
}

// Apply installs a commit's offsets once they are durable.
func (g *Group) Apply(pc *PendingCommit) {
	g.offsetsVersion++
	for _, r := range pc.Records {
		g.done(r.TP)
		if g.state != Dead {
			g.offsets[r.TP] = *r.Commit
		}
	}
}

// Fail answers a commit that could not be persisted with code.
func (g *Group) Fail(pc *PendingCommit, code int16) {
	for _, r := range pc.Records {
		g.done(r.TP)
	}
	failSlots(pc, code)
}

// failSlots sets the answer of every partition of pc to code.
func failSlots(pc *PendingCommit, code int16) {
	for _, s := range pc.slots {
		s.ErrorCode = code
	}
}

// Pending holds stored offsets that are not applied yet (transactional
// offsets whose transaction has not ended, found by a load) as a commit in
// flight, to be applied or failed like one.
func (g *Group) Pending(recs []groupstore.Record) *PendingCommit {
	pc := &PendingCommit{Response: kmsg.NewPtrOffsetCommitResponse()}
	for _, r := range recs {
		pc.Records = append(pc.Records, groupstore.Record{TP: r.TP, Commit: r.Commit})
		pc.slots = append(pc.slots, &kmsg.OffsetCommitResponseTopicPartition{})
		g.inflight[r.TP]++
	}
	return pc
}

func (g *Group) done(tp groupstore.TP) {
	if g.inflight[tp]--; g.inflight[tp] <= 0 {
		delete(g.inflight, tp)
	}
}

// FetchOffsets answers one group's part of an OffsetFetch. A group that does
// not exist has no offsets: -1 for every partition asked, and no error.
func (g *Group) FetchOffsets(now time.Time, f *messages.GroupFetchOffsets, topics Topics) kmsg.OffsetFetchResponseGroup {
	g.Tick(now)
	defer g.Tick(now)
	out := kmsg.NewOffsetFetchResponseGroup()
	if g.state == Dead {
		out.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return out
	}
	code := int16(0)
	switch g.kind {
	case KindConsumer:
		code = g.validateConsumerFetch(f.MemberID, f.MemberEpoch)
	case KindStreams:
		code = g.streams.ValidateFetch(f.MemberID, f.MemberEpoch)
	}
	if code != 0 {
		out.ErrorCode = code
		return out
	}
	byID := f.Version >= 10
	partition := func(tp groupstore.TP) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition = tp.Partition
		rp.Offset, rp.LeaderEpoch, rp.Metadata = -1, -1, strp("")
		if f.RequireStable && g.inflight[tp] > 0 {
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return rp
		}
		if c, ok := g.offsets[tp]; ok && !ofDeletedTopic(tp, c, topics) {
			rp.Offset, rp.LeaderEpoch, rp.Metadata = c.Offset, c.LeaderEpoch, strp(c.Metadata)
		}
		return rp
	}
	if f.Topics == nil {
		byTopic := map[string][]int32{}
		for tp, c := range g.offsets {
			if !ofDeletedTopic(tp, c, topics) {
				byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
			}
		}
		for _, name := range sortedKeys(byTopic) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = name
			if byID {
				ti, ok := topics.ByName(name)
				if !ok {
					continue // a deleted topic has no id to name it by
				}
				rt.TopicID = ti.ID
			}
			ps := byTopic[name]
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			for _, p := range ps {
				rt.Partitions = append(rt.Partitions, partition(groupstore.TP{Topic: name, Partition: p}))
			}
			out.Topics = append(out.Topics, rt)
		}
		return out
	}
	for _, t := range f.Topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		name := t.Topic
		known := true
		if byID {
			ti, ok := topics.ByID(t.TopicID)
			name, known = ti.Name, ok
		}
		for _, p := range t.Partitions {
			if !known {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, strp("")
				rp.ErrorCode = kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
				continue
			}
			rt.Partitions = append(rt.Partitions, partition(groupstore.TP{Topic: name, Partition: p}))
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// ofDeletedTopic reports whether c, committed to tp, belongs to a topic
// since deleted: no topic of that name exists any more, or the one that does
// has another id (deleted and created again). Kafka removes a deleted
// topic's offsets from every group; without this a consumer of the new
// topic would resume at the old one's offsets. Topics that cannot tell
// (a broker without an assignment yet) judge nothing.
func ofDeletedTopic(tp groupstore.TP, c groupstore.Commit, topics Topics) bool {
	if !canTell(topics) {
		return false
	}
	ti, ok := topics.ByName(tp.Topic)
	if !ok {
		return true
	}
	return c.TopicID != ([16]byte{}) && c.TopicID != ti.ID
}

// canTell reports whether topics is a view that knows which topics exist
// (a broker without an assignment yet does not): only such a view judges
// or stamps commits by their topics.
func canTell(topics Topics) bool {
	k, ok := topics.(interface{ Complete() bool })
	return !ok || k.Complete()
}

// StampTopicIDs gives each commit stored without a topic id (by an older
// kaas) the id of the topic of that name now, and returns the commits to
// store again with it. Until then such a commit is only known to be stale
// once its topic is gone: a topic deleted and created again in between
// looks like the same topic. Stamped, it is told apart like any other. The
// ones stamped are the topic's current incarnation as far as anything can
// tell: a re-creation before this (since the older kaas stored the commit)
// goes unseen. Topics that cannot tell stamp nothing.
func (g *Group) StampTopicIDs(topics Topics) []groupstore.Record {
	if !canTell(topics) {
		return nil
	}
	var recs []groupstore.Record
	for _, tp := range g.sortedOffsets() {
		c := g.offsets[tp]
		if c.TopicID != ([16]byte{}) || g.inflight[tp] != 0 {
			continue
		}
		ti, ok := topics.ByName(tp.Topic)
		if !ok {
			continue // DropDeletedTopics removes it
		}
		c.TopicID = ti.ID
		g.offsets[tp] = c
		recs = append(recs, groupstore.Record{TP: tp, Commit: &c})
	}
	return recs
}

// DropDeletedTopics removes the offsets of deleted topics (ofDeletedTopic)
// and returns their tombstones. FetchOffsets hides them meanwhile.
func (g *Group) DropDeletedTopics(topics Topics) []groupstore.Record {
	var recs []groupstore.Record
	for _, tp := range g.sortedOffsets() {
		if g.inflight[tp] == 0 && ofDeletedTopic(tp, g.offsets[tp], topics) {
			delete(g.offsets, tp)
			g.offsetsVersion++
			recs = append(recs, groupstore.Record{TP: tp, Delete: true})
		}
	}
	return recs
}

// sortedOffsets lists the partitions with committed offsets by topic, then
// partition (tombstones are written in that order).
func (g *Group) sortedOffsets() []groupstore.TP {
	tps := make([]groupstore.TP, 0, len(g.offsets))
	for tp := range g.offsets {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	return tps
}

// OffsetDelete validates an OffsetDelete; the returned records are the
// tombstones to persist, after which ApplyDelete removes the offsets.
func (g *Group) OffsetDelete(now time.Time, req *kmsg.OffsetDeleteRequest, topics Topics) (*kmsg.OffsetDeleteResponse, []groupstore.Record) {
	g.Tick(now)
	defer g.Tick(now)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	switch {
	case g.state == Dead:
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	case !g.Exists():
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp, nil
	}
	var subscribed map[string]bool
	switch {
	case g.kind == KindConsumer:
		subscribed = g.consumerSubscribed()
	case g.kind == KindStreams:
		if g.streamsMembers() > 0 {
			subscribed = g.streamsSubscribed()
		}
	case g.state != Empty:
		if g.protocolType != "consumer" {
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return resp, nil
		}
		subscribed = g.subscribed
	}
	var recs []groupstore.Record
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		ti, known := topics.ByName(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !known || p.Partition < 0 || p.Partition >= ti.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case subscribed[t.Topic]:
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
			default:
				recs = append(recs, groupstore.Record{TP: groupstore.TP{Topic: t.Topic, Partition: p.Partition}, Delete: true})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, recs
}

// ApplyDelete removes deleted offsets once their tombstones are durable.
func (g *Group) ApplyDelete(recs []groupstore.Record) {
	for _, r := range recs {
		delete(g.offsets, r.TP)
		g.offsetsVersion++
	}
}

// Expire removes offsets past retention (Kafka's KIP-211 rules) and returns
// their tombstones:
//   - a simple group (no protocol type): each offset retention after its commit;
//   - an empty classic group: every offset retention after the group emptied
//     (after its commit when that time is unknown);
//   - a stable classic consumer group, or a consumer (KIP-848) group: offsets
//     of topics no member subscribes to, retention after their commit;
//   - commits with an explicit expiry (v1-v4) at that time.
func (g *Group) Expire(now time.Time) []groupstore.Record {
	g.Tick(now)
	defer g.Tick(now)
	if g.state == Dead || len(g.offsets) == 0 {
		return nil
	}
	var subscribed map[string]bool
	base := func(c groupstore.Commit) int64 { return c.CommitTime }
	switch {
	case g.kind == KindConsumer:
		subscribed = g.consumerSubscribed()
	case g.kind == KindStreams && g.streamsMembers() > 0:
		subscribed = g.streamsSubscribed()
	case g.protocolType == "":
	case g.state == Empty:
		if !g.emptySince.IsZero() {
			since := g.emptySince.UnixMilli()
			base = func(groupstore.Commit) int64 { return since }
		}
	case g.state == Stable && g.protocolType == "consumer" && g.subscribed != nil:
		subscribed = g.subscribed
	default:
		return nil
	}
	nowMs, retention := now.UnixMilli(), g.cfg.OffsetsRetention.Milliseconds()
	var recs []groupstore.Record
	for _, tp := range g.sortedOffsets() {
		c := g.offsets[tp]
		if subscribed[tp.Topic] || g.inflight[tp] > 0 {
			continue
		}
		expired := nowMs-base(c) >= retention
		if c.ExpireTime >= 0 {
			expired = nowMs >= c.ExpireTime
		}
		if expired {
			delete(g.offsets, tp)
			g.offsetsVersion++
			recs = append(recs, groupstore.Record{TP: tp, Delete: true})
		}
	}
	return recs
}

// Delete handles DeleteGroups for this group: 0 means the group is now Dead
// and its stored state must be destroyed, then Deleted called.
func (g *Group) Delete(now time.Time) int16 {
	g.Tick(now)
	defer g.Tick(now)
	switch {
	case g.state == Dead || !g.Exists():
		return kerr.GroupIDNotFound.Code
	case g.kind == KindConsumer && len(g.cons.members) > 0:
		return kerr.NonEmptyGroup.Code
	case g.kind == KindStreams && g.streamsMembers() > 0:
		return kerr.NonEmptyGroup.Code
	case g.kind == KindClassic && g.state != Empty:
		return kerr.NonEmptyGroup.Code
	case g.kind == KindShare && g.shareMembers() > 0:
		return kerr.NonEmptyGroup.Code
	}
	// (Pending classic members, which got MEMBER_ID_REQUIRED but never
	// joined, do not keep an Empty group alive.)
	g.offsets = map[groupstore.TP]groupstore.Commit{}
	g.offsetsVersion++
	g.membersVersion++
	g.state = Dead
	return 0
}

// Deleted ends a deletion: the group no longer exists.
func (g *Group) Deleted() {
	inflight := g.inflight
	g.reset()
	g.inflight = inflight
}

// DescribeGroup answers one group's part of DescribeGroups (the classic
// view; a consumer group is not a classic group).
func (g *Group) DescribeGroup(now time.Time, version int16) kmsg.DescribeGroupsResponseGroup {
	g.Tick(now)
	defer g.Tick(now)
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = g.ID
	notFound := func(msg string) kmsg.DescribeGroupsResponseGroup {
		d.State = Dead.String()
		if version >= 6 {
			d.ErrorCode = kerr.GroupIDNotFound.Code
			d.ErrorMessage = strp(msg)
		}
		return d
	}
	switch {
	case g.state == Dead || !g.Exists():
		return notFound("Group " + g.ID + " not found.")
	case g.kind == KindConsumer, g.kind == KindShare, g.kind == KindStreams:
		return notFound("Group " + g.ID + " is not a classic group.")
	}
	d.State = g.state.String()
	d.ProtocolType = g.protocolType
	stable := g.state == Stable
	if stable {
		d.Protocol = g.protocol
	}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadataFor(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// DescribeConsumerGroup answers one group's part of ConsumerGroupDescribe.
func (g *Group) DescribeConsumerGroup(now time.Time, topics Topics) kmsg.ConsumerGroupDescribeResponseGroup {
	g.Tick(now)
	defer g.Tick(now)
	d := kmsg.NewConsumerGroupDescribeResponseGroup()
	d.Group = g.ID
	switch {
	case g.state == Dead || !g.Exists():
		d.ErrorCode = kerr.GroupIDNotFound.Code
		d.ErrorMessage = strp("Group " + g.ID + " not found.")
		return d
	case g.kind != KindConsumer:
		d.ErrorCode = kerr.GroupIDNotFound.Code
		d.ErrorMessage = strp("Group " + g.ID + " is not a consumer group.")
		return d
	}
	d.State = g.state.String()
	d.Epoch = g.cons.groupEpoch
	d.AssignmentEpoch = g.cons.assignEpoch
	d.AssignorName = g.cons.assignor
	if d.AssignorName == "" {
		d.AssignorName = g.preferredAssignor()
	}
	toKmsg := func(a Assignment) kmsg.Assignment {
		var out kmsg.Assignment
		for _, t := range sortedIDs(a) {
			tp := kmsg.NewAssignmentTopicPartition()
			tp.TopicID = t
			if ti, ok := topics.ByID(t); ok {
				tp.Topic = ti.Name
			}
			tp.Partitions = append([]int32(nil), a[t]...)
			out.TopicPartitions = append(out.TopicPartitions, tp)
		}
		return out
	}
	for _, id := range sortedKeys(g.cons.members) {
		m := g.cons.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID = m.id, m.instanceID, m.rackID
		dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.epoch, m.clientID, m.clientHost
		dm.SubscribedTopics = append([]string{}, m.names...)
		if m.regex != "" {
			dm.SubscribedTopicRegex = strp(m.regex)
		}
		dm.Assignment = toKmsg(m.assigned)
		dm.TargetAssignment = toKmsg(m.target)
		dm.MemberType = 1 // the consumer protocol
		if m.classic != nil {
			dm.MemberType = 0
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// OffsetsVersion moves whenever the committed offsets may have changed.
func (g *Group) OffsetsVersion() uint64 { return g.offsetsVersion }

// CommittedOffsets copies the group's durable committed offsets.
func (g *Group) CommittedOffsets() map[groupstore.TP]int64 {
	out := make(map[groupstore.TP]int64, len(g.offsets))
	for tp, c := range g.offsets {
		out[tp] = c.Offset
	}
	return out
}
