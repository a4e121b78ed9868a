package controller

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/clock"
	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage/assignment"
)

// dataDir is a controller's data directory for one test. Not t.TempDir:
// the controller's file writes run on goroutines that the actor system's
// shutdown does not wait for (a hung fsync must not hang a shutdown), so
// under load a write can still be creating its temporary file when the
// test ends; the removal is retried for a second instead of failing the
// test ("directory not empty", seen in CI under -race).
func dataDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "controller")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return dir
}

// flush waits until ref has handled every message sent to it before.
func flush(t *testing.T, ref actorsys.Ref) {
	t.Helper()
	done := make(flushed)
	ref.Send(done)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the controller's mailbox not drained within 10s")
	}
}

// eventually polls cond, which waits on the controller's file I/O (real,
// on goroutines), for up to within; between runs before each later poll
// (advancing a fake clock, sending pings).
func eventually(t *testing.T, what string, within time.Duration, between func(), cond func() bool) {
	t.Helper()
	if !pollUntil(within, between, cond) {
		t.Fatalf("%s: not within %v", what, within)
	}
}

// pollUntil is eventually's loop: it reports whether cond held in time.
func pollUntil(within time.Duration, between func(), cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
		if between != nil {
			between()
		}
	}
	return true
}

// TestControllerWritesAndReassertsItsFile: a controller writes its epoch's
// assignment, and when a lower epoch's file replaces it on the volume (a
// deposed controller's late write), it puts its own back.
func TestControllerWritesAndReassertsItsFile(t *testing.T) {
	dir := dataDir(t)
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	hub := NewHub()
	// The real clock: this test covers the production ticker.
	ref, err := sys.Spawn("controller", New(Config{
		Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
		Epoch: 5, DataDir: dir, DeadAfter: time.Second, Tick: 20 * time.Millisecond, Hub: hub, Log: zerolog.Nop(),
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref.Send(&TopicsChanged{Topics: map[string]balancer.TopicSpec{"t": {ID: "id-1", Partitions: 3, Config: map[string]string{}}}})
	path := assignment.Path(dir)
	var mine *assignment.Assignment
	eventually(t, "controller writes epoch 5 with the topic", 5*time.Second, nil, func() bool {
		a, err := assignment.ReadFile(path)
		if err != nil || a.ControllerEpoch != 5 || len(a.Topics["t"].Partitions) != 3 {
			return false
		}
		mine = a
		return true
	})
	for _, p := range mine.Topics["t"].Partitions {
		if p.Leader != 0 {
			t.Fatalf("partition led by %d, want the controller's broker 0", p.Leader)
		}
	}
	stale := *mine
	stale.ControllerEpoch, stale.AssignmentVersion = 3, 99
	if err := assignment.WriteFile(dir, &stale); err != nil {
		t.Fatal(err)
	}
	eventually(t, "controller re-asserts its epoch", 5*time.Second, nil, func() bool {
		e, _, err := assignment.ReadHeader(path)
		return err == nil && e == 5
	})
}

// inheritingController starts kaas-0's controller at epoch 6 over prev
// (stored as epoch 6, version 10) on a fake clock (ticks are the test's to
// advance); shutdown stops its actor system.
func inheritingController(t *testing.T, prev *assignment.Assignment, concurrentMoves int) (dir string, ref actorsys.Ref, fake *clock.Fake, shutdown func()) {
	t.Helper()
	dir = dataDir(t)
	prev.ControllerEpoch, prev.AssignmentVersion, prev.Controller = 6, 10, "kaas-0"
	if err := assignment.WriteFile(dir, prev); err != nil {
		t.Fatal(err)
	}
	sys := actorsys.NewSystem()
	shutdown = sync.OnceFunc(sys.Shutdown)
	t.Cleanup(shutdown)
	fake = clock.NewFake(time.Unix(1_700_000_000, 0))
	ref, err := sys.Spawn("controller", New(Config{
		Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
		Epoch: 6, DataDir: dir, DeadAfter: time.Minute, Tick: 20 * time.Millisecond, Hub: NewHub(), Log: zerolog.Nop(),
		ConcurrentMoves: concurrentMoves, Clock: fake,
	}, prev))
	if err != nil {
		t.Fatal(err)
	}
	return dir, ref, fake, shutdown
}

// TestReleaseNeedsACurrentReport: a held partition is handed on only when
// every running broker's report is for the file that holds it. A broker
// still behind (it may be about to take the partition from an older file)
// does not confirm the release by not listing it.
func TestReleaseNeedsACurrentReport(t *testing.T) {
	prev := doc(0, -1, 2)
	prev.Topics["t"].Partitions[1] = assignment.Partition{Leader: -1, LeaderEpoch: 4}
	dir, ref, fake, shutdown := inheritingController(t, prev, 0)
	ping := func(name string, id int32, version int64, parts ...int32) {
		p := &heartbeatpb.Ping{BrokerId: id, Name: name, KafkaHost: "127.0.0.1", KafkaPort: 9092 + id, Healthy: true,
			ControllerEpoch: 6, AssignmentVersion: version}
		for _, n := range parts {
			p.Partitions = append(p.Partitions, &heartbeatpb.PartitionLed{Topic: "t", Partition: n, LeaderEpoch: 1})
		}
		ref.Send(&BrokerPing{Ping: p, At: fake.Now()})
	}
	leader := func() int32 {
		a, err := assignment.ReadFile(assignment.Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		return a.Topics["t"].Partitions[1].Leader
	}
	version := func() int64 {
		_, v, err := assignment.ReadHeader(assignment.Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Partition 1 goes to kaas-1 (the balancer evens out). kaas-2 lists
	// only its own, but has applied version 9, before the file that held
	// partition 1: it may still take it from there. (Pings change broker
	// addresses, so the controller may write new versions meanwhile: the
	// others report on the file now on the volume.)
	for i := 0; i < 10; i++ {
		v := version()
		ping("kaas-0", 0, v, 0)
		ping("kaas-1", 1, v)
		ping("kaas-2", 2, 9, 2)
		fake.Advance(20 * time.Millisecond)
		flush(t, ref)
		if l := leader(); l != -1 {
			t.Fatalf("partition 1 given to %d on the report of a broker behind the file", l)
		}
	}
	eventually(t, "partition 1 handed on after every broker reported on the current file", 5*time.Second, func() {
		v := version()
		ping("kaas-0", 0, v, 0)
		ping("kaas-1", 1, v)
		ping("kaas-2", 2, v, 2)
		fake.Advance(20 * time.Millisecond)
		flush(t, ref)
	}, func() bool { return leader() != -1 })
	if l := leader(); l != 1 {
		t.Fatalf("partition 1 went to %d, want kaas-1", l)
	}
	shutdown()
}

// TestStarvedControllerDeclaresNobodyDead: a controller that has not heard
// even its own broker for a while (its process starved, its hub stalled)
// does not take the silence of the others for deaths; once its own pings
// arrive again, a broker still silent past DeadAfter is dead and its
// partitions move.
func TestStarvedControllerDeclaresNobodyDead(t *testing.T) {
	dir := dataDir(t)
	prev := doc(0, 1, 2)
	prev.ControllerEpoch, prev.AssignmentVersion, prev.Controller = 6, 10, "kaas-0"
	if err := assignment.WriteFile(dir, prev); err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	now := fake.Now
	const tick = 250 * time.Millisecond
	// ticks lets d pass one tick at a time, each handled before the next.
	ticks := func(ref actorsys.Ref, d time.Duration) {
		for range d / tick {
			fake.Advance(tick)
			flush(t, ref)
		}
	}
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	ref, err := sys.Spawn("controller", New(Config{
		Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
		Epoch: 6, DataDir: dir, DeadAfter: 4 * time.Second, Tick: tick, Hub: NewHub(), Clock: fake, Log: zerolog.Nop(),
	}, prev))
	if err != nil {
		t.Fatal(err)
	}
	ping := func(name string, id int32) {
		_, v, _ := assignment.ReadHeader(assignment.Path(dir))
		ref.Send(&BrokerPing{Ping: &heartbeatpb.Ping{BrokerId: id, Name: name, KafkaHost: "127.0.0.1", KafkaPort: 9092 + id, Healthy: true,
			ControllerEpoch: 6, AssignmentVersion: v, Partitions: []*heartbeatpb.PartitionLed{{Topic: "t", Partition: id, LeaderEpoch: 1}}}, At: now()})
	}
	leaders := func() []int32 {
		a, err := assignment.ReadFile(assignment.Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		return leadersOf(a)
	}
	for _, b := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		ping(b, int32(b[len(b)-1]-'0'))
	}
	flush(t, ref)
	// Nobody's pings are processed for 6 s (> DeadAfter): starvation.
	ticks(ref, 6*time.Second)
	if l := leaders(); l[1] != 1 || l[2] != 2 {
		t.Fatalf("a starved controller moved partitions: leaders %v", l)
	}
	// Its own broker is heard again, and only later kaas-2 (the pings
	// queued behind the stall arrive in any order): many ticks in between
	// must not take kaas-2 for dead.
	ping("kaas-0", 0)
	ticks(ref, 1500*time.Millisecond) // within dead-after/2
	if l := leaders(); l[1] != 1 || l[2] != 2 {
		t.Fatalf("a controller hearing its own broker again moved partitions before the others' pings could arrive: leaders %v", l)
	}
	// kaas-2 is heard too; kaas-1 stays silent past the grace of
	// DeadAfter/2 and is dead.
	eventually(t, "kaas-1, silent past dead-after while the controller hears others, moved away", 5*time.Second, func() {
		ping("kaas-0", 0)
		ping("kaas-2", 2)
		ticks(ref, tick)
	}, func() bool { return leaders()[1] != 1 })
	if l := leaders(); l[2] != 2 {
		t.Fatalf("kaas-2 lost its partition: %v", l)
	}
}

// TestFailedWriteRetriesAtTheTick: a write that fails (here the data
// directory is a regular file) is retried at the next tick, not at once: a
// refused assignment must not spin the controller in a recompute loop.
func TestFailedWriteRetriesAtTheTick(t *testing.T) {
	dir := dataDir(t)
	notADir := dir + "/file"
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	attempts := 0
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	const tick = 50 * time.Millisecond
	fake := clock.NewFake(time.Unix(1_700_000_000, 0))
	ref, err := sys.Spawn("controller", New(Config{
		Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
		Epoch: 1, DataDir: notADir, DeadAfter: time.Second, Tick: tick, Hub: NewHub(), Log: zerolog.Nop(), Clock: fake,
		VerifyLease: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			attempts++
			return nil
		},
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return attempts
	}
	ref.Send(&TopicsChanged{Topics: map[string]balancer.TopicSpec{"t": {ID: "id-1", Partitions: 3, Config: map[string]string{}}}})
	// Each tick waits for the attempt before it (a real write failing)
	// and the mailbox, so a retry at once would show as extra attempts.
	for i := 1; i <= 20; i++ {
		eventually(t, fmt.Sprintf("write attempt %d", i), 5*time.Second, nil, func() bool { return count() >= i })
		flush(t, ref)
		fake.Advance(tick)
	}
	flush(t, ref)
	n := count()
	// One write per tick at most (plus the first); a loop makes thousands.
	if n < 2 || n > 22 {
		t.Fatalf("%d write attempts in %v with a %v tick: want a retry per tick", n, 20*tick, tick)
	}
}

// TestDrainRunsInWaves: with ConcurrentMoves 2, a drain of four partitions
// never has more than two in motion (held for their release, or granted
// and still opening at the new leader), the draining broker leads the
// rest meanwhile, and everything is handed on in the end.
func TestDrainRunsInWaves(t *testing.T) {
	prev := doc(0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2)
	dir, ref, fake, shutdown := inheritingController(t, prev, 2)
	// opening[broker][partition]: taken, reported opening once, open on
	// the next round.
	opening := map[int32]map[int32]bool{0: {}, 2: {}}
	served := map[int32]map[int32]bool{0: {}, 1: {}, 2: {}}
	for i, p := range prev.Topics["t"].Partitions {
		served[p.Leader][int32(i)] = true
	}
	sawDrainingLead := false
	deadline := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatal("drain not done within 10s")
		}
		a, err := assignment.ReadFile(assignment.Path(dir))
		if err != nil {
			t.Fatal(err)
		}
		held, ledByDrained := 0, 0
		for i, p := range a.Topics["t"].Partitions {
			switch p.Leader {
			case -1:
				held++
			case 1:
				ledByDrained++
			case 0, 2:
				if !served[p.Leader][int32(i)] {
					served[p.Leader][int32(i)] = true
					opening[p.Leader][int32(i)] = true
				}
			}
		}
		inMotion := held + len(opening[0]) + len(opening[2])
		if inMotion > 2 {
			t.Fatalf("version %d: %d partitions in motion (%d held), want at most 2: %v", a.AssignmentVersion, inMotion, held, leadersOf(a))
		}
		if held > 0 && ledByDrained > 0 {
			sawDrainingLead = true
		}
		if held == 0 && ledByDrained == 0 && len(opening[0])+len(opening[2]) == 0 {
			break
		}
		// The draining broker releases at once what the file takes away.
		for n := range served[1] {
			if a.Topics["t"].Partitions[n].Leader != 1 {
				delete(served[1], n)
			}
		}
		for _, id := range []int32{0, 1, 2} {
			p := &heartbeatpb.Ping{BrokerId: id, Name: []string{"kaas-0", "kaas-1", "kaas-2"}[id], KafkaHost: "127.0.0.1", KafkaPort: 9092 + id,
				Healthy: true, Draining: id == 1, ControllerEpoch: a.ControllerEpoch, AssignmentVersion: a.AssignmentVersion}
			for n := range served[id] {
				p.Partitions = append(p.Partitions, &heartbeatpb.PartitionLed{Topic: "t", Partition: n, LeaderEpoch: 1, Opening: opening[id][n]})
			}
			ref.Send(&BrokerPing{Ping: p, At: fake.Now()})
		}
		fake.Advance(20 * time.Millisecond)
		flush(t, ref)
		// A file these pings release something for is on its way.
		pollUntil(200*time.Millisecond, nil, func() bool {
			_, v, err := assignment.ReadHeader(assignment.Path(dir))
			return err == nil && v != a.AssignmentVersion
		})
		// Opens reported once finish before the next round's pings.
		for _, id := range []int32{0, 2} {
			clear(opening[id])
		}
	}
	if !sawDrainingLead {
		t.Fatal("no file held a move while the draining broker still led others: the drain did not run in waves")
	}
	shutdown()
}

// TestNextWriteStartsBeforeTheDirectorySync: once a file is renamed into
// place (every broker sees it), the controller's next file does not wait
// for the first one's directory fsync, which under a busy journal can take
// longer than the rest of the write.
func TestNextWriteStartsBeforeTheDirectorySync(t *testing.T) {
	dir := dataDir(t)
	sys := actorsys.NewSystem()
	t.Cleanup(sys.Shutdown)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	var mu sync.Mutex
	stuck := 0 // writes renamed but held before their directory fsync
	slowFirst := func(dataDir string, a *assignment.Assignment, permit <-chan error, visible func()) (assignment.WriteTiming, error) {
		return assignment.WriteFileStaged(dataDir, a, permit, func() {
			visible()
			mu.Lock()
			first := a.AssignmentVersion == 1
			if first {
				stuck++
			}
			mu.Unlock()
			if first {
				<-release
			}
		})
	}
	ref, err := sys.Spawn("controller", New(Config{
		Self: "kaas-0", SelfHost: "127.0.0.1", SelfPort: 9092, HeartbeatAddr: "127.0.0.1:9094",
		Epoch: 5, DataDir: dir, DeadAfter: time.Second, Tick: 20 * time.Millisecond, Hub: NewHub(), Log: zerolog.Nop(),
		WriteFile: slowFirst, Clock: clock.NewFake(time.Unix(1_700_000_000, 0)),
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	path := assignment.Path(dir)
	waitFor := func(what string, cond func(*assignment.Assignment) bool) *assignment.Assignment {
		t.Helper()
		var got *assignment.Assignment
		eventually(t, what, 5*time.Second, nil, func() bool {
			a, err := assignment.ReadFile(path)
			got = a
			return err == nil && cond(a)
		})
		return got
	}
	ref.Send(&TopicsChanged{Topics: map[string]balancer.TopicSpec{"t": {ID: "id-1", Partitions: 3, Config: map[string]string{}}}})
	first := waitFor("the first file", func(a *assignment.Assignment) bool { return len(a.Topics["t"].Partitions) == 3 })
	if first.AssignmentVersion != 1 {
		t.Fatalf("first file is version %d, want 1", first.AssignmentVersion)
	}
	ref.Send(&TopicsChanged{Topics: map[string]balancer.TopicSpec{"t": {ID: "id-1", Partitions: 5, Config: map[string]string{}}}})
	second := waitFor("the next file while the first one's directory fsync is held", func(a *assignment.Assignment) bool {
		return len(a.Topics["t"].Partitions) == 5
	})
	mu.Lock()
	held := stuck
	mu.Unlock()
	if second.AssignmentVersion <= first.AssignmentVersion || held != 1 {
		t.Fatalf("second file version %d after %d; writes held before their directory fsync: %d, want 1",
			second.AssignmentVersion, first.AssignmentVersion, held)
	}
}
