package group

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// slowStore blocks Open until released.
type slowStore struct {
	groupstore.Store
	gate chan struct{}
}

func (s *slowStore) Open(g string) (groupstore.Log, groupstore.State, error) {
	<-s.gate
	return s.Store.Open(g)
}

func view(mine func(string) bool) *routing.View {
	self := routing.Broker{ID: 0, Host: "h", Port: 1, Alive: true}
	other := routing.Broker{ID: 1, Host: "o", Port: 2, Alive: true}
	t := &routing.Topic{Name: "t", ID: topicID("t"), Partitions: make([]routing.Partition, 4)}
	v := &routing.View{Self: 0, Brokers: []routing.Broker{self, other},
		Topics: map[string]*routing.Topic{"t": t}, TopicIDs: map[[16]byte]*routing.Topic{t.ID: t}}
	if mine != nil {
		v.Coordinator = func(g string) (routing.Broker, bool) {
			if mine(g) {
				return self, true
			}
			return other, false
		}
	}
	return v
}

// testClock is a virtual clock that also counts the timers armed, by
// duration: a test advances it once the actor it waits on has armed its
// timer (actors arm timers on their own goroutines).
type testClock struct {
	*clock.Fake
	mu      sync.Mutex
	armed   map[time.Duration]int
	changed chan struct{} // closed and replaced at every arming
}

func newTestClock() *testClock {
	return &testClock{Fake: clock.NewFake(time.Now()), armed: map[time.Duration]int{}, changed: make(chan struct{})}
}

// AfterFunc implements clock.Clock.
func (c *testClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	tm := c.Fake.AfterFunc(d, f)
	c.mu.Lock()
	c.armed[d]++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return tm
}

// armedCount is how many timers of duration d have been armed so far.
func (c *testClock) armedCount(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.armed[d]
}

// awaitArmed waits until n timers of duration d have been armed in all.
func (c *testClock) awaitArmed(t *testing.T, d time.Duration, n int) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		c.mu.Lock()
		got, changed := c.armed[d], c.changed
		c.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("%d timers of %v armed, want %d", got, d, n)
		}
	}
}

const (
	testViewPoll  = 20 * time.Millisecond
	testLoadGrace = 200 * time.Millisecond
)

func startCoordinator(t *testing.T, store groupstore.Store, views *routing.Store) (*Coordinator, *testClock) {
	t.Helper()
	sys := actorsys.NewSystem()
	cfg := testConfig()
	cfg.NewID = nil
	cfg.InitialRebalanceDelay = 2 * time.Second
	clk := newTestClock()
	c, err := Start(sys, "groups", Options{Group: cfg, Store: store, Views: views, ViewPoll: testViewPoll, LoadGrace: testLoadGrace, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(5 * time.Second)
		sys.Shutdown()
	})
	return c, clk
}

func callGroup(c *Coordinator, group string, op any) <-chan any {
	ch := make(chan any, 1)
	c.Ref().Send(&messages.GroupCall{Group: group, ClientID: "cl", ClientHost: "h", Op: op, Reply: func(x any) { ch <- x }})
	return ch
}

func await(t *testing.T, ch <-chan any) any {
	t.Helper()
	select {
	case x := <-ch:
		return x
	case <-time.After(5 * time.Second):
		t.Fatal("no reply")
		return nil
	}
}

type listResult struct {
	rows []messages.GroupRow
	code int16
}

func requestList(c *Coordinator) <-chan listResult {
	ch := make(chan listResult, 1)
	c.Ref().Send(&messages.GroupList{Reply: func(rows []messages.GroupRow, code int16) { ch <- listResult{rows, code} }})
	return ch
}

func listGroups(t *testing.T, c *Coordinator) ([]messages.GroupRow, int16) {
	t.Helper()
	return awaitList(t, requestList(c))
}

func awaitList(t *testing.T, ch <-chan listResult) ([]messages.GroupRow, int16) {
	t.Helper()
	select {
	case r := <-ch:
		return r.rows, r.code
	case <-time.After(5 * time.Second):
		t.Fatal("no list reply")
		return nil, 0
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// Polls work done on the actors' and the store's goroutines, not time.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestManagerLoadsCommitsAndForgets(t *testing.T) {
	views := &routing.Store{}
	views.Publish(view(nil))
	slow := &slowStore{Store: groupstore.NewMemory(), gate: make(chan struct{})}
	c, clk := startCoordinator(t, slow, views)

	// While the offsets load, requests wait (up to LoadGrace)...
	commit := commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 7}})
	pending := callGroup(c, "g", commit)
	clk.awaitArmed(t, testLoadGrace, 1) // the group actor started
	clk.Advance(testLoadGrace - time.Millisecond)
	select {
	case <-pending:
		t.Fatal("answered before the group loaded")
	default:
	}
	// ...then get COORDINATOR_LOAD_IN_PROGRESS.
	clk.Advance(time.Millisecond)
	r := await(t, pending).(*kmsg.OffsetCommitResponse)
	if c := r.Topics[0].Partitions[0].ErrorCode; c != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("commit while loading: %s", code(c))
	}
	close(slow.gate)
	eventually(t, "load", func() bool {
		r := await(t, callGroup(c, "g", commit)).(*kmsg.OffsetCommitResponse)
		return r.Topics[0].Partitions[0].ErrorCode == 0
	})
	f := await(t, callGroup(c, "g", &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1})).(kmsg.OffsetFetchResponseGroup)
	if o, _ := offsetOf(f, "t", 0); o != 7 {
		t.Fatalf("fetched %d", o)
	}
	rows, code0 := listGroups(t, c)
	if code0 != 0 || len(rows) != 1 || rows[0].Group != "g" || rows[0].State != "Empty" || rows[0].Type != "classic" {
		t.Fatalf("list %+v %d", rows, code0)
	}
	if c.GroupsLed() != 1 {
		t.Fatalf("groups led %d", c.GroupsLed())
	}
	// Reading a group that does not exist leaves nothing behind.
	d := await(t, callGroup(c, "nope", &messages.GroupDescribe{Version: 5})).(kmsg.DescribeGroupsResponseGroup)
	if d.State != "Dead" {
		t.Fatalf("describe %+v", d)
	}
	if rows, _ := listGroups(t, c); len(rows) != 1 {
		t.Fatalf("list after describe: %+v", rows)
	}
	// DeleteGroups removes the group and its offsets.
	del := await(t, callGroup(c, "g", &messages.GroupDelete{})).(kmsg.DeleteGroupsResponseGroup)
	if del.ErrorCode != 0 {
		t.Fatalf("delete: %s", code(del.ErrorCode))
	}
	eventually(t, "the deleted group's actor to stop", func() bool { return c.GroupsLed() == 0 })
	f = await(t, callGroup(c, "g", &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1, Topics: []messages.GroupTopic{{Topic: "t", Partitions: []int32{0}}}})).(kmsg.OffsetFetchResponseGroup)
	if o, _ := offsetOf(f, "t", 0); o != -1 {
		t.Fatalf("offset after delete: %d", o)
	}
}

func TestManagerFollowsTheView(t *testing.T) {
	var mineA atomic.Bool
	mineA.Store(true)
	views := &routing.Store{}
	publish := func() { views.Publish(view(func(g string) bool { return g != "a" || mineA.Load() })) }
	publish()
	c, clk := startCoordinator(t, groupstore.NewMemory(), views)

	hb := kmsg.NewPtrHeartbeatRequest()
	if r := await(t, callGroup(c, "b", hb)).(*kmsg.HeartbeatResponse); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("heartbeat to a missing group: %s", code(r.ErrorCode))
	}
	// A member waits in JoinGroup (the initial rebalance delay is long).
	j := joinReq("", "m")
	j.Version = 3
	parked := callGroup(c, "a", j)
	await(t, callGroup(c, "a", &messages.GroupDescribe{Version: 5})) // the join is parked
	// The group moves to another broker (seen at the next view poll): the
	// parked join is answered NOT_COORDINATOR, and so is everything after.
	mineA.Store(false)
	publish()
	clk.Advance(testViewPoll)
	r := await(t, parked).(*kmsg.JoinGroupResponse)
	if r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("parked join after the group moved: %s", code(r.ErrorCode))
	}
	if r := await(t, callGroup(c, "a", hb)).(*kmsg.HeartbeatResponse); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat after the group moved: %s", code(r.ErrorCode))
	}
	eventually(t, "the moved group's actor to stop", func() bool { return c.GroupsLed() == 0 })
	// It comes back.
	mineA.Store(true)
	publish()
	c.Ref().Send(&messages.GroupsViewChanged{})
	// Until the old actor has let go, a client is told to retry.
	eventually(t, "a commit after the group came back", func() bool {
		r := await(t, callGroup(c, "a", commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 1}}))).(*kmsg.OffsetCommitResponse)
		switch c := r.Topics[0].Partitions[0].ErrorCode; c {
		case 0:
			return true
		case kerr.CoordinatorLoadInProgress.Code:
			return false
		default:
			t.Fatalf("commit after the group came back: %s", code(c))
			return false
		}
	})
}

func TestManagerListsStoredGroupsOnceLoaded(t *testing.T) {
	mem := groupstore.NewMemory()
	l, _, _ := mem.Open("stored")
	c1 := groupstore.Commit{Offset: 3, ExpireTime: -1, CommitTime: time.Now().UnixMilli()}
	if err := l.Append([]groupstore.Record{
		{Meta: &groupstore.Meta{Kind: "classic", ProtocolType: "consumer"}},
		{TP: groupstore.TP{Topic: "t"}, Commit: &c1},
	}); err != nil {
		t.Fatal(err)
	}
	views := &routing.Store{}
	views.Publish(view(nil))
	slow := &slowStore{Store: mem, gate: make(chan struct{})}
	c, clk := startCoordinator(t, slow, views)
	// The stored group is known but still loading: ListGroups waits, then
	// says so.
	list := requestList(c)
	clk.awaitArmed(t, testLoadGrace, 2) // the stored group's load and the list wait
	clk.Advance(testLoadGrace)
	if rows, code0 := awaitList(t, list); code0 != kerr.CoordinatorLoadInProgress.Code {
		t.Fatalf("list while loading: %+v %s", rows, code(code0))
	}
	close(slow.gate)
	eventually(t, "the stored group to be listed", func() bool {
		rows, code0 := listGroups(t, c)
		return code0 == 0 && len(rows) == 1 && rows[0].Group == "stored" && rows[0].State == "Empty" && rows[0].ProtocolType == "consumer"
	})
	if c.GroupsLed() != 1 {
		t.Fatalf("groups led %d", c.GroupsLed())
	}
}

// flakyStore's logs fail appends while fail is set.
type flakyStore struct {
	groupstore.Store
	fail atomic.Bool
}

type flakyLog struct {
	groupstore.Log
	s *flakyStore
}

func (s *flakyStore) Open(g string) (groupstore.Log, groupstore.State, error) {
	l, st, err := s.Store.Open(g)
	return flakyLog{l, s}, st, err
}

func (l flakyLog) Append(recs []groupstore.Record) error {
	if l.s.fail.Load() {
		return errors.New("disk on fire")
	}
	return l.Log.Append(recs)
}

func TestManagerCommitFailsWhenTheLogDoes(t *testing.T) {
	views := &routing.Store{}
	views.Publish(view(nil))
	store := &flakyStore{Store: groupstore.NewMemory()}
	c, _ := startCoordinator(t, store, views)
	commitAt := func(off int64) int16 {
		r := await(t, callGroup(c, "g", commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: off}}))).(*kmsg.OffsetCommitResponse)
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if c := commitAt(1); c != 0 {
		t.Fatalf("commit: %s", code(c))
	}
	store.fail.Store(true)
	if c := commitAt(2); c != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("commit on a failing log: %s", code(c))
	}
	store.fail.Store(false)
	f := await(t, callGroup(c, "g", &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1})).(kmsg.OffsetFetchResponseGroup)
	if o, _ := offsetOf(f, "t", 0); o != 1 {
		t.Fatalf("a failed commit is visible: offset %d", o)
	}
	if c := commitAt(3); c != 0 {
		t.Fatalf("commit after the log recovered: %s", code(c))
	}
}

// TestCleanupRemovesOffsetsOfDeletedTopics: the periodic cleanup writes
// tombstones for the offsets of a topic no longer in the view (the stored
// group is then empty and removed), and never acts on a view that comes
// from no assignment.
func TestCleanupRemovesOffsetsOfDeletedTopics(t *testing.T) {
	views := &routing.Store{}
	v := view(func(string) bool { return true })
	v.Version = 1
	views.Publish(v)
	store := groupstore.NewMemory()
	sys := actorsys.NewSystem()
	cfg := testConfig()
	cfg.NewID = nil
	clk := newTestClock()
	const cleanupInterval = 20 * time.Millisecond
	c, err := Start(sys, "groups", Options{Group: cfg, Store: store, Views: views, ViewPoll: 10 * time.Millisecond,
		LoadGrace: 200 * time.Millisecond, CleanupInterval: cleanupInterval, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop(5 * time.Second)
		sys.Shutdown()
	})
	eventually(t, "a commit", func() bool {
		r := await(t, callGroup(c, "g", commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 7}}))).(*kmsg.OffsetCommitResponse)
		return r.Topics[0].Partitions[0].ErrorCode == 0
	})
	stored := func() bool {
		gs, _ := store.Groups()
		return len(gs) == 1 && gs[0] == "g"
	}
	if !stored() {
		t.Fatal("the commit is not in the store")
	}
	// cleanup runs the group's periodic cleanup once: the tick, then a
	// call queued behind it.
	cleanup := func() {
		n := clk.armedCount(cleanupInterval)
		clk.Advance(cleanupInterval)
		clk.awaitArmed(t, cleanupInterval, n+1)
		await(t, callGroup(c, "g", &messages.GroupDescribe{Version: 5}))
	}
	// A view from no assignment (version 0) lists no topics: nothing goes.
	blind := view(func(string) bool { return true })
	blind.Topics, blind.TopicIDs = map[string]*routing.Topic{}, map[[16]byte]*routing.Topic{}
	views.Publish(blind)
	for range 3 {
		cleanup()
	}
	if !stored() {
		t.Fatal("offsets removed on a view from no assignment")
	}
	// The topic deleted (assignment version 2 without it): removed.
	gone := view(func(string) bool { return true })
	gone.Version = 2
	gone.Topics, gone.TopicIDs = map[string]*routing.Topic{}, map[[16]byte]*routing.Topic{}
	views.Publish(gone)
	cleanup()
	eventually(t, "the deleted topic's offsets to go", func() bool { return !stored() })
}

// TestLoadStampsCommitsWithoutTopicID: a group loaded with a commit an
// older kaas stored without a topic id stores it again with the id of its
// topic, so that a later deletion and re-creation of the topic hides it.
func TestLoadStampsCommitsWithoutTopicID(t *testing.T) {
	views := &routing.Store{}
	v := view(func(string) bool { return true })
	v.Version = 1
	views.Publish(v)
	store := groupstore.NewMemory()
	l, _, err := store.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	tp := groupstore.TP{Topic: "t", Partition: 0}
	if err := l.Append([]groupstore.Record{{TP: tp, Commit: &groupstore.Commit{Offset: 7, LeaderEpoch: -1, ExpireTime: -1}}}); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	c, _ := startCoordinator(t, store, views)
	eventually(t, "the load", func() bool {
		r, ok := (<-callGroup(c, "g", &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1})).(kmsg.OffsetFetchResponseGroup)
		return ok && r.ErrorCode == 0
	})
	eventually(t, "the commit stored again with the topic's id", func() bool {
		_, st, _ := store.Open("g")
		c, ok := st.Offsets[tp]
		return ok && c.Offset == 7 && c.TopicID == topicID("t")
	})
}

// TestRebalanceDelayRunsOnTheClock: a join parked for the initial
// rebalance delay is answered once that delay has passed on the
// coordinator's clock, and not before.
func TestRebalanceDelayRunsOnTheClock(t *testing.T) {
	views := &routing.Store{}
	views.Publish(view(func(string) bool { return true }))
	c, clk := startCoordinator(t, groupstore.NewMemory(), views)
	const delay = 2 * time.Second // startCoordinator's initial rebalance delay
	j := joinReq("", "m")
	j.Version = 3
	parked := callGroup(c, "g", j)
	clk.awaitArmed(t, delay, 1) // the group's timer points at the end of the delay
	clk.Advance(delay - time.Millisecond)
	await(t, callGroup(c, "g", &messages.GroupDescribe{Version: 5})) // the group ticked
	select {
	case r := <-parked:
		t.Fatalf("join answered before the initial rebalance delay: %+v", r)
	default:
	}
	clk.Advance(time.Millisecond)
	r := await(t, parked).(*kmsg.JoinGroupResponse)
	if r.ErrorCode != 0 || r.LeaderID != r.MemberID {
		t.Fatalf("join after the initial rebalance delay: %s, leader %q member %q", code(r.ErrorCode), r.LeaderID, r.MemberID)
	}
}

// gatedSaves blocks every SaveMembers until released, recording what was
// saved.
type gatedSaves struct {
	groupstore.Store
	gate  chan struct{}
	saved atomic.Pointer[[]byte]
}

type gatedSaveLog struct {
	groupstore.Log
	s *gatedSaves
}

func (s *gatedSaves) Open(g string) (groupstore.Log, groupstore.State, error) {
	l, st, err := s.Store.Open(g)
	return gatedSaveLog{l, s}, st, err
}

func (l gatedSaveLog) SaveMembers(b []byte) error {
	<-l.s.gate
	l.s.saved.Store(&b)
	return l.Log.SaveMembers(b)
}

// TestSyncGroupAnsweredOnceTheMembershipIsSaved: the leader's SyncGroup,
// which completes the generation, is answered only after that
// generation's membership is saved, as Kafka answers once the group's
// metadata is written.
func TestSyncGroupAnsweredOnceTheMembershipIsSaved(t *testing.T) {
	views := &routing.Store{}
	views.Publish(view(func(string) bool { return true }))
	store := &gatedSaves{Store: groupstore.NewMemory(), gate: make(chan struct{})}
	c, clk := startCoordinator(t, store, views)
	j := joinReq("", "m")
	j.Version = 3 // no member-id round trip
	parked := callGroup(c, "g", j)
	clk.awaitArmed(t, 2*time.Second, 1)
	clk.Advance(2 * time.Second)
	jr := await(t, parked).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 {
		t.Fatalf("join: %s", code(jr.ErrorCode))
	}
	sync := callGroup(c, "g", syncReq(jr.MemberID, jr.Generation, map[string]string{jr.MemberID: "a"}))
	await(t, callGroup(c, "g", &messages.GroupDescribe{Version: 5})) // the sync was handled
	answeredOnlyOnceSaved(t, sync, "SyncGroup")
	close(store.gate)
	if r := await(t, sync).(*kmsg.SyncGroupResponse); r.ErrorCode != 0 || string(r.MemberAssignment) != "a" {
		t.Fatalf("sync: %s %q", code(r.ErrorCode), r.MemberAssignment)
	}
	if b := store.saved.Load(); b == nil || !strings.Contains(string(*b), `"generation":1`) {
		t.Fatal("the answered generation was not saved")
	}
}

// TestClassicJoinToConsumerGroupAnsweredOnceSaved: a classic member's
// JoinGroup to a consumer group is answered only after the membership
// that holds it is saved, as Kafka's coordinator answers once the member's
// records are written.
func TestClassicJoinToConsumerGroupAnsweredOnceSaved(t *testing.T) {
	views := &routing.Store{}
	views.Publish(view(func(string) bool { return true }))
	store := &gatedSaves{Store: groupstore.NewMemory(), gate: make(chan struct{})}
	c, _ := startCoordinator(t, store, views)
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = 1, "g", "c", 0, 10_000
	hb.SubscribedTopicNames, hb.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := await(t, callGroup(c, "g", hb)).(*kmsg.ConsumerGroupHeartbeatResponse); r.ErrorCode != 0 {
		t.Fatalf("consumer heartbeat: %s", code(r.ErrorCode))
	}
	meta := kmsg.ConsumerMemberMetadata{Version: 3, Topics: []string{"t"}}
	j := joinReq("", "")
	j.Protocols[0].Metadata = meta.AppendTo(nil)
	first := await(t, callGroup(c, "g", j)).(*kmsg.JoinGroupResponse)
	if first.ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %s", code(first.ErrorCode))
	}
	j.MemberID = first.MemberID
	joined := callGroup(c, "g", j)
	await(t, callGroup(c, "g", &messages.GroupDescribe{Version: 5})) // the join was handled
	answeredOnlyOnceSaved(t, joined, "JoinGroup")
	close(store.gate)
	if r := await(t, joined).(*kmsg.JoinGroupResponse); r.ErrorCode != 0 || r.MemberID != first.MemberID {
		t.Fatalf("join: %s %q", code(r.ErrorCode), r.MemberID)
	}
	if b := store.saved.Load(); b == nil || !strings.Contains(string(*b), first.MemberID) {
		t.Fatal("the joined member was not saved")
	}
}

// answeredOnlyOnceSaved fails the test if a request whose membership save
// is held back was answered already.
func answeredOnlyOnceSaved(t *testing.T, answer <-chan any, what string) {
	t.Helper()
	select {
	case r := <-answer:
		t.Fatalf("%s answered before its membership was saved: %+v", what, r)
	default:
	}
}
