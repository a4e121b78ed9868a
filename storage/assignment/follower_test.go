package assignment

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

type change struct {
	prev, next *Assignment
	d          Changes
}

// harness runs a follower on dir and records what it does.
type harness struct {
	t        *testing.T
	dir      string
	f        *Follower
	changes  chan change
	outcomes chan string
	inside   atomic.Int32 // OnChange calls in progress
}

func startFollower(t *testing.T, dir string, tweak func(*FollowerConfig)) *harness {
	t.Helper()
	h := &harness{t: t, dir: dir, changes: make(chan change, 64), outcomes: make(chan string, 256)}
	cfg := FollowerConfig{
		Path:         Path(dir),
		PollInterval: time.Hour, // tests that want the poll set it
		Self:         1,
		SelfName:     "kaas-1",
		OnChange: func(prev, next *Assignment, d Changes) {
			if h.inside.Add(1) != 1 {
				t.Errorf("OnChange called concurrently")
			}
			defer h.inside.Add(-1)
			h.changes <- change{prev, next, d}
		},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	h.f = NewFollower(cfg)
	h.f.hook = func(o string) { h.outcomes <- o }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.f.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

func version(epoch, v int64) *Assignment {
	a := &Assignment{Format: 1, ControllerEpoch: epoch, AssignmentVersion: v, Controller: "kaas-0",
		Brokers: []Broker{{ID: 0, Name: "kaas-0", State: Alive}, {ID: 1, Name: "kaas-1", State: Alive}},
		Topics: map[string]Topic{"a": {ID: "A", Partitions: []Partition{
			{Leader: int32(v % 2), LeaderEpoch: int32(v)}, {Leader: 1, LeaderEpoch: 0}}}},
		ConsumerGroups: ConsumerGroups{Slots: []string{"kaas-0", "kaas-1"}}}
	return a
}

func (h *harness) write(a *Assignment) {
	h.t.Helper()
	if err := WriteFile(h.dir, a); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) writeRaw(data string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Join(h.dir, ClusterDir), 0o755); err != nil {
		h.t.Fatal(err)
	}
	tmp := Path(h.dir) + ".raw"
	if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, Path(h.dir)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) expectChange(epoch, v int64, within time.Duration) change {
	h.t.Helper()
	select {
	case c := <-h.changes:
		if c.next.ControllerEpoch != epoch || c.next.AssignmentVersion != v {
			h.t.Fatalf("accepted epoch %d version %d, want %d/%d", c.next.ControllerEpoch, c.next.AssignmentVersion, epoch, v)
		}
		if cur := h.f.Current(); cur != c.next {
			h.t.Fatalf("Current() is not the accepted document")
		}
		return c
	case <-time.After(within):
		h.t.Fatalf("no change to epoch %d version %d within %v", epoch, v, within)
	}
	return change{}
}

// expectOutcome waits until the follower reports outcome (skipping others).
func (h *harness) expectOutcome(outcome string) {
	h.t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case o := <-h.outcomes:
			if o == outcome {
				return
			}
		case <-deadline:
			h.t.Fatalf("follower never reported %q", outcome)
		}
	}
}

func (h *harness) expectNoChange() {
	h.t.Helper()
	select {
	case c := <-h.changes:
		h.t.Fatalf("unexpected change to epoch %d version %d", c.next.ControllerEpoch, c.next.AssignmentVersion)
	default:
	}
}

func TestFollowerAcceptsNewFile(t *testing.T) {
	h := startFollower(t, t.TempDir(), func(c *FollowerConfig) { c.PollInterval = 50 * time.Millisecond })
	if h.f.Current() != nil {
		t.Fatal("current before any file")
	}
	h.write(version(1, 1)) // also creates __cluster after Run started
	c := h.expectChange(1, 1, 5*time.Second)
	// Version 1: kaas-1 leads both partitions of a.
	if c.prev != nil || len(c.d.Take) != 2 || c.d.Take[0].TopicID != "A" || c.d.Take[0].LeaderEpoch != 1 {
		t.Fatalf("first change %+v", c.d)
	}
	// Version 2: partition 0 goes to kaas-0.
	h.write(version(1, 2))
	c = h.expectChange(1, 2, 5*time.Second)
	if c.prev.AssignmentVersion != 1 || len(c.d.Relinquish) != 1 || c.d.Relinquish[0].Partition != 0 || len(c.d.Take) != 0 {
		t.Fatalf("second change %+v", c.d)
	}
}

func TestFollowerReadsExistingFileAtStart(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(dir, version(3, 7)); err != nil {
		t.Fatal(err)
	}
	h := startFollower(t, dir, nil)
	h.expectChange(3, 7, 5*time.Second)
}

func TestFollowerRejectsStale(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stale *Assignment
	}{
		{"lower epoch", version(4, 99)},
		{"lower version same epoch", version(5, 9)},
		{"same version different content", func() *Assignment { a := version(5, 10); a.ControllerHeartbeat = "x:1"; return a }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startFollower(t, t.TempDir(), nil)
			h.write(version(5, 10))
			h.f.Nudge()
			h.expectChange(5, 10, 5*time.Second)
			h.write(tc.stale)
			h.f.Nudge()
			h.expectOutcome("stale")
			h.expectNoChange()
			if cur := h.f.Current(); cur.ControllerEpoch != 5 || cur.AssignmentVersion != 10 {
				t.Fatalf("current %d/%d", cur.ControllerEpoch, cur.AssignmentVersion)
			}
			h.write(version(5, 11))
			h.f.Nudge()
			h.expectChange(5, 11, 5*time.Second)
		})
	}
}

func TestFollowerHigherEpochWinsOverHigherVersion(t *testing.T) {
	h := startFollower(t, t.TempDir(), nil)
	h.write(version(5, 10))
	h.f.Nudge()
	h.expectChange(5, 10, 5*time.Second)
	h.write(version(6, 1)) // new controller, version restarts
	h.f.Nudge()
	h.expectChange(6, 1, 5*time.Second)
}

func TestFollowerKeepsLastGoodOnBadFile(t *testing.T) {
	good, _ := Encode(version(2, 2))
	for name, bad := range map[string]string{
		"garbage":   "this is not json\x00\xff",
		"truncated": string(good[:len(good)/2]),
		"invalid":   string(good[:len(good)-3]) + `, "extra": 1}` + "\n",
		"empty":     "",
	} {
		t.Run(name, func(t *testing.T) {
			h := startFollower(t, t.TempDir(), nil)
			h.write(version(2, 2))
			h.f.Nudge()
			h.expectChange(2, 2, 5*time.Second)
			h.writeRaw(bad)
			h.f.Nudge()
			h.expectOutcome("invalid")
			h.expectNoChange()
			if cur := h.f.Current(); cur.AssignmentVersion != 2 {
				t.Fatalf("current version %d", cur.AssignmentVersion)
			}
			h.write(version(2, 3))
			h.f.Nudge()
			h.expectChange(2, 3, 5*time.Second)
		})
	}
}

func TestFollowerIgnoresIdenticalReread(t *testing.T) {
	h := startFollower(t, t.TempDir(), nil)
	h.write(version(1, 1))
	h.f.Nudge()
	h.expectChange(1, 1, 5*time.Second)
	h.write(version(1, 1)) // same bytes, new inode
	h.f.Nudge()
	h.expectOutcome("identical")
	h.expectNoChange()
}

func TestFollowerNudgeIsPrompt(t *testing.T) {
	h := startFollower(t, t.TempDir(), func(c *FollowerConfig) { c.DisableWatch = true })
	h.write(version(1, 1))
	start := time.Now()
	h.f.Nudge()
	h.expectChange(1, 1, time.Second)
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("nudge took %v", d)
	}
}

func TestFollowerPollWithoutWatch(t *testing.T) {
	h := startFollower(t, t.TempDir(), func(c *FollowerConfig) {
		c.DisableWatch = true
		c.PollInterval = 20 * time.Millisecond
	})
	h.write(version(1, 1))
	h.expectChange(1, 1, 5*time.Second)
	h.write(version(1, 2))
	h.expectChange(1, 2, 5*time.Second)
	// A rewrite in place (same inode) is seen too.
	data, _ := Encode(version(1, 3))
	if err := os.WriteFile(Path(h.dir), data, 0o644); err != nil {
		t.Fatal(err)
	}
	h.expectChange(1, 3, 5*time.Second)
}

func TestFollowerWatchWithoutPoll(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ClusterDir), 0o755); err != nil {
		t.Fatal(err)
	}
	h := startFollower(t, dir, nil) // poll every hour: only fsnotify can see it
	h.expectOutcome("missing")
	h.write(version(1, 1))
	h.expectChange(1, 1, 5*time.Second)
	h.write(version(1, 2))
	h.expectChange(1, 2, 5*time.Second)
}

func TestFollowerMinEpoch(t *testing.T) {
	h := startFollower(t, t.TempDir(), func(c *FollowerConfig) { c.MinEpoch = 3 })
	h.write(version(2, 50))
	h.f.Nudge()
	h.expectOutcome("stale")
	h.expectNoChange()
	h.write(version(3, 1))
	h.f.Nudge()
	h.expectChange(3, 1, 5*time.Second)
	h.f.SetMinEpoch(7)
	h.f.SetMinEpoch(5) // never lowers
	if h.f.MinEpoch() != 7 {
		t.Fatalf("MinEpoch = %d", h.f.MinEpoch())
	}
	h.write(version(6, 9))
	h.f.Nudge()
	h.expectOutcome("stale")
	h.expectNoChange()
	if h.f.Current().ControllerEpoch != 3 {
		t.Fatal("current changed")
	}
	h.write(version(7, 1))
	h.f.Nudge()
	h.expectChange(7, 1, 5*time.Second)
}

// Many writes and nudges at once: OnChange is never concurrent (checked in
// the callback, meaningful under -race) and versions only go up.
func TestFollowerSerialCallbacks(t *testing.T) {
	h := startFollower(t, t.TempDir(), func(c *FollowerConfig) { c.PollInterval = 5 * time.Millisecond })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200; i++ {
			h.f.Nudge()
		}
	}()
	for v := int64(1); v <= 30; v++ {
		h.write(version(1, v))
		h.f.Nudge()
	}
	<-done
	last := int64(0)
	deadline := time.After(10 * time.Second)
	for last < 30 {
		select {
		case c := <-h.changes:
			if c.next.AssignmentVersion <= last {
				t.Fatalf("version went %d -> %d", last, c.next.AssignmentVersion)
			}
			last = c.next.AssignmentVersion
		case <-deadline:
			t.Fatalf("stuck at version %d", last)
		}
	}
}
