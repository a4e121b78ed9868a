package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// A streamsApp is what a Kafka Streams application does over the streams
// rebalance protocol (KIP-1071), written with franz-go's kmsg since no
// client library of this machine speaks it: its members heartbeat with the
// topology, take the active tasks they are given, read each task's source
// partition from the group's committed offset, write every record to the
// task's changelog partition, commit with their member epoch, and commit
// and stop a task before they report it revoked.
//
// Every member's owned tasks go through one ledger that fails the test the
// moment two members own the same active task.
type streamsApp struct {
	t        *testing.T
	client   func(...kgo.Opt) *kgo.Client
	group    string
	source   string
	topology kmsg.StreamsGroupHeartbeatRequestTopology

	mu        sync.Mutex
	owner     map[int32]string // source partition (task "0_p") -> member owning it
	processed map[string]int   // source record key -> times processed and committed

	// tolerant keeps the members running through a broker's death: a
	// failed heartbeat is sent again, and a task whose records could not
	// be written or committed starts again from its committed offset, as
	// Kafka Streams does (records may then be processed twice).
	tolerant bool
}

// streamsChangelog is the changelog topic of the store "counts" of
// application group, named as Kafka Streams names it.
func streamsChangelog(group string) string { return group + "-counts-changelog" }

func newStreamsApp(t *testing.T, addr, group, source string) *streamsApp {
	return newStreamsAppOf(t, func(opts ...kgo.Opt) *kgo.Client { return newClient(t, addr, opts...) }, group, source)
}

// newStreamsAppOf is newStreamsApp whose members' clients come from client.
func newStreamsAppOf(t *testing.T, client func(...kgo.Opt) *kgo.Client, group, source string) *streamsApp {
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID = "0"
	sub.SourceTopics = []string{source}
	// The changelog's configs come from the client, as Kafka Streams
	// sends a store's (the broker adds none).
	cl := kmsg.NewTopicInfo()
	cl.Topic = streamsChangelog(group)
	compact := kmsg.NewTopicInfoConfig()
	compact.Key, compact.Value = "cleanup.policy", "compact"
	cl.Configs = []kmsg.TopicInfoConfig{compact}
	sub.StateChangelogTopics = []kmsg.TopicInfo{cl}
	top := kmsg.NewStreamsGroupHeartbeatRequestTopology()
	top.Epoch = 0
	top.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub}
	return &streamsApp{t: t, client: client, group: group, source: source, topology: top,
		owner: map[int32]string{}, processed: map[string]int{}}
}

// streamsMember is one member (one stream thread) of a streamsApp.
type streamsMember struct {
	app     *streamsApp
	id      string
	process string
	hb      *kgo.Client // heartbeats and commits
	cons    *kgo.Client // reads the owned tasks' source partitions
	prod    *kgo.Client // writes the changelog

	epoch    int32
	owned    []int32 // source partitions of the active tasks it runs
	statuses []int8  // the last heartbeat's status codes
	left     bool
}

func (a *streamsApp) member(id string) *streamsMember {
	return &streamsMember{app: a, id: id, process: "process-" + id,
		hb:   a.client(commitsByName()),
		cons: a.client(kgo.FetchMaxWait(200 * time.Millisecond)),
		prod: a.client(kgo.RequiredAcks(kgo.AllISRAcks())),
	}
}

// commitsByName caps OffsetCommit and OffsetFetch at v9, the last versions
// that name topics (the member's requests are built by hand with names).
func commitsByName() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.OffsetCommit.Int16(), 9)
	v.SetMaxKeyVersion(kmsg.OffsetFetch.Int16(), 9)
	return kgo.MaxVersions(v)
}

func taskIDs(parts []int32) []kmsg.TaskIDs {
	if len(parts) == 0 {
		return []kmsg.TaskIDs{}
	}
	ti := kmsg.NewTaskIDs()
	ti.SubtopologyID = "0"
	ti.Partitions = slices.Clone(parts)
	return []kmsg.TaskIDs{ti}
}

// heartbeat sends one heartbeat (a join at epoch 0) reporting the tasks the
// member owns, and applies the answer: tasks no longer assigned are
// committed and released, new ones started.
func (m *streamsMember) heartbeat(ctx context.Context) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.app.group, m.id, m.epoch
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = taskIDs(m.owned), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	if m.epoch == 0 {
		top := m.app.topology
		req.Topology = &top
		req.RebalanceTimeoutMillis = 30000
		req.ProcessID = &m.process
		req.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{}
	}
	resp, err := streamsHeartbeat(ctx, m.hb, req)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		return resp, fmt.Errorf("member %s at epoch %d: %w (%s)", m.id, m.epoch, err, msg)
	}
	m.epoch = resp.MemberEpoch
	m.statuses = m.statuses[:0]
	for _, s := range resp.Status {
		m.statuses = append(m.statuses, s.StatusCode)
	}
	if resp.ActiveTasks != nil {
		var next []int32
		for _, ti := range resp.ActiveTasks {
			if ti.SubtopologyID != "0" {
				return resp, fmt.Errorf("member %s: task of unknown subtopology %q", m.id, ti.SubtopologyID)
			}
			next = append(next, ti.Partitions...)
		}
		sort.Slice(next, func(i, j int) bool { return next[i] < next[j] })
		if err := m.reassign(ctx, next); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// reassign moves the member to the tasks next: revoked tasks are drained,
// committed and released before new ones are taken.
func (m *streamsMember) reassign(ctx context.Context, next []int32) error {
	var revoked, added []int32
	for _, p := range m.owned {
		if !slices.Contains(next, p) {
			revoked = append(revoked, p)
		}
	}
	for _, p := range next {
		if !slices.Contains(m.owned, p) {
			added = append(added, p)
		}
	}
	if len(revoked) > 0 {
		// What is not committed now is processed again by the task's
		// next owner, from the committed offset.
		if err := m.work(ctx); err != nil && !m.app.tolerant {
			return err
		}
		m.cons.RemoveConsumePartitions(map[string][]int32{m.app.source: revoked})
		m.app.release(m.id, revoked)
	}
	if len(added) > 0 {
		if err := m.app.claim(m.id, added); err != nil {
			return err
		}
		offsets, err := m.committed(ctx, added)
		if err != nil {
			return err
		}
		m.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{m.app.source: offsets})
	}
	m.owned = next
	return nil
}

// restart reads every owned task again from its committed offset.
func (m *streamsMember) restart(ctx context.Context) error {
	if len(m.owned) == 0 {
		return nil
	}
	m.cons.RemoveConsumePartitions(map[string][]int32{m.app.source: m.owned})
	offsets, err := m.committed(ctx, m.owned)
	if err != nil {
		// Read from the start of the log: what was committed is
		// processed again, never skipped.
		offsets = map[int32]kgo.Offset{}
		for _, p := range m.owned {
			offsets[p] = kgo.NewOffset().AtStart()
		}
	}
	m.cons.AddConsumePartitions(map[string]map[int32]kgo.Offset{m.app.source: offsets})
	return err
}

// committed is where each partition's reading starts: the group's
// committed offset, or the start of the log.
func (m *streamsMember) committed(ctx context.Context, parts []int32) (map[int32]kgo.Offset, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group, g.MemberID, g.MemberEpoch = m.app.group, &m.id, m.epoch
	rt := kmsg.NewOffsetFetchRequestGroupTopic()
	rt.Topic, rt.Partitions = m.app.source, parts
	g.Topics = []kmsg.OffsetFetchRequestGroupTopic{rt}
	req.Groups = []kmsg.OffsetFetchRequestGroup{g}
	resp, err := req.RequestWith(ctx, m.hb)
	if err != nil {
		return nil, err
	}
	out := map[int32]kgo.Offset{}
	for _, p := range parts {
		out[p] = kgo.NewOffset().AtStart()
	}
	for _, rg := range resp.Groups {
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			return nil, fmt.Errorf("member %s: offset fetch: %w", m.id, err)
		}
		for _, rt := range rg.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode == 0 && rp.Offset >= 0 {
					out[rp.Partition] = kgo.NewOffset().At(rp.Offset)
				}
			}
		}
	}
	return out, nil
}

// work reads what is buffered for the owned tasks, writes each record to
// its task's changelog partition and commits the read offsets with the
// member's epoch.
func (m *streamsMember) work(ctx context.Context) error {
	if len(m.owned) == 0 {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	fs := m.cons.PollFetches(pctx)
	cancel()
	next := map[int32]int64{}
	var keys []string
	var out []*kgo.Record
	fs.EachRecord(func(r *kgo.Record) {
		out = append(out, &kgo.Record{Topic: streamsChangelog(m.app.group), Partition: r.Partition, Key: r.Key, Value: r.Value})
		keys = append(keys, string(r.Key))
		next[r.Partition] = r.Offset + 1
	})
	for _, fe := range fs.Errors() {
		if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
			return fmt.Errorf("member %s: fetch %s/%d: %w", m.id, fe.Topic, fe.Partition, fe.Err)
		}
	}
	if len(out) == 0 {
		return nil
	}
	if err := m.prod.ProduceSync(ctx, out...).FirstErr(); err != nil {
		return fmt.Errorf("member %s: changelog: %w", m.id, err)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.app.group, m.id, m.epoch
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = m.app.source
	for p, o := range next {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	resp, err := req.RequestWith(ctx, m.hb)
	if err != nil {
		return fmt.Errorf("member %s: commit: %w", m.id, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("member %s: commit %s/%d at epoch %d: %w", m.id, t.Topic, p.Partition, m.epoch, err)
			}
		}
	}
	m.app.mu.Lock()
	for _, k := range keys {
		m.app.processed[k]++
	}
	m.app.mu.Unlock()
	return nil
}

// leave ends the member: its tasks are committed and released, then it
// leaves the group (epoch -1).
func (m *streamsMember) leave(ctx context.Context) error {
	if err := m.work(ctx); err != nil {
		return err
	}
	m.app.release(m.id, m.owned)
	m.owned = nil
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.app.group, m.id, -1
	resp, err := streamsHeartbeat(ctx, m.hb, req)
	if err != nil {
		return err
	}
	m.left = true
	if resp.MemberEpoch != -1 {
		return fmt.Errorf("member %s: leave answered epoch %d, error %d", m.id, resp.MemberEpoch, resp.ErrorCode)
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

func (a *streamsApp) claim(member string, parts []int32) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range parts {
		if o, ok := a.owner[p]; ok && o != member {
			return fmt.Errorf("task 0_%d given to %s while %s still owns it", p, member, o)
		}
		a.owner[p] = member
	}
	return nil
}

func (a *streamsApp) release(member string, parts []int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range parts {
		if a.owner[p] == member {
			delete(a.owner, p)
		}
	}
}

// run heartbeats and processes with every member in members until done
// reports true or the context ends.
func (a *streamsApp) run(ctx context.Context, members []*streamsMember, done func() bool) {
	a.t.Helper()
	for ctx.Err() == nil {
		for _, m := range members {
			if m.left {
				continue
			}
			if _, err := m.heartbeat(ctx); err != nil {
				if kerr.IsRetriable(err) || a.tolerant && ctx.Err() == nil {
					continue // a coordinator loading or moving: heartbeat again
				}
				a.t.Fatal(err)
			}
			if err := m.work(ctx); err != nil {
				if !a.tolerant || ctx.Err() != nil {
					a.t.Fatal(err)
				}
				if err := m.restart(ctx); err != nil {
					a.t.Logf("member %s: restarting its tasks: %v", m.id, err)
				}
			}
		}
		if done() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.t.Fatalf("streams group %s: %v", a.group, ctx.Err())
}

// ownership is each member's owned source partitions.
func ownership(members ...*streamsMember) string {
	s := ""
	for _, m := range members {
		s += m.id + "=" + fmt.Sprint(m.owned) + " "
	}
	return s
}

func keysUpTo(n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = strconv.Itoa(i)
	}
	return out
}

// coordinatorRequest sends req to group's coordinator: franz-go's client
// routes the group requests it knows itself, not the streams groups'.
func coordinatorRequest(ctx context.Context, cl *kgo.Client, group string, req kmsg.Request) (kmsg.Response, error) {
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey, fc.CoordinatorKeys = group, []string{group}
	resp, err := fc.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	node := resp.NodeID
	if len(resp.Coordinators) > 0 {
		c := resp.Coordinators[0]
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return nil, fmt.Errorf("find coordinator of %s: %w", group, err)
		}
		node = c.NodeID
	}
	return cl.Broker(int(node)).Request(ctx, req)
}

func streamsHeartbeat(ctx context.Context, cl *kgo.Client, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	resp, err := coordinatorRequest(ctx, cl, req.Group, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse), nil
}
