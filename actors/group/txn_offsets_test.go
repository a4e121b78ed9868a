package group

import (
	"time"

	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/messages"
	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/groupstore"
)

func txnCommitReq(pid int64, epoch int16, p int32, off int64) *kmsg.TxnOffsetCommitRequest {
	r := kmsg.NewPtrTxnOffsetCommitRequest()
	r.Version, r.Group, r.TransactionalID, r.ProducerID, r.ProducerEpoch = 3, "g", "tx", pid, epoch
	r.Generation = -1 // a simple group
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, off
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return r
}

func txnResponseCode(t *testing.T, x any) int16 {
	t.Helper()
	return x.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func txnEnd(c *Coordinator, pid int64, epoch int16, commit, bumped bool) <-chan any {
	ch := make(chan any, 1)
	c.Ref().Send(&messages.GroupCall{Group: "g", Op: &messages.TxnOffsetsEnd{Group: "g", ProducerID: pid, ProducerEpoch: epoch, Commit: commit, Bumped: bumped,
		Reply: func(code int16) { ch <- code }}, Reply: func(x any) { ch <- x }})
	return ch
}

// fetchStable is an OffsetFetch of t-0 with require_stable: its offset and
// partition error.
func fetchStable(t *testing.T, c *Coordinator) (int64, int16) {
	t.Helper()
	f := await(t, callGroup(c, "g", &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1, RequireStable: true,
		Topics: []messages.GroupTopic{{Topic: "t", Partitions: []int32{0}}}})).(kmsg.OffsetFetchResponseGroup)
	return offsetOf(f, "t", 0)
}

// TestTxnOffsetsSurviveCoordinatorMoves: a TxnOffsetCommit answered by one
// coordinator is durable; the coordinator that loads the group next (after
// a crash or a move) holds it pending and applies the marker that arrives
// there; the coordinator after that finds the marker's outcome. A marker
// of an earlier transaction than the pending offsets' (older, or bumped to
// their very epoch: messages.MarkerFenced) is refused and leaves them
// pending for their own.
func TestTxnOffsetsSurviveCoordinatorMoves(t *testing.T) {
	for _, tc := range []struct {
		name        string
		markerEpoch int16
		commit      bool
		bumped      bool
		refused     bool
		want        int64
	}{
		{"commit", 5, true, false, false, 7},
		{"abort", 5, false, false, false, 3},
		{"bumped commit", 6, true, true, false, 7},
		{"bumped abort", 6, false, true, false, 3},
		{"commit of an older epoch", 4, true, false, true, 7},
		{"bumped commit at the pending epoch", 5, true, true, true, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			views := &routing.Store{}
			views.Publish(view(nil))
			open := func() *Coordinator {
				st, err := groupstore.NewFile(dir)
				if err != nil {
					t.Fatal(err)
				}
				c, _ := startCoordinator(t, st, views)
				return c
			}
			c := open()
			if r := await(t, callGroup(c, "g", commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: 3}}))).(*kmsg.OffsetCommitResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("commit: %s", code(r.Topics[0].Partitions[0].ErrorCode))
			}
			if got := txnResponseCode(t, await(t, callGroup(c, "g", txnCommitReq(42, 5, 0, 7)))); got != 0 {
				t.Fatalf("TxnOffsetCommit: %s", code(got))
			}
			c.Stop(5 * time.Second)

			c = open()
			if o, e := fetchStable(t, c); e != kerr.UnstableOffsetCommit.Code {
				t.Fatalf("pending offset after a reload: offset %d code %s, want UNSTABLE_OFFSET_COMMIT", o, code(e))
			}
			if got := txnResponseCode(t, await(t, callGroup(c, "g", txnCommitReq(42, 4, 0, 9)))); got != kerr.ProducerFenced.Code {
				t.Fatalf("TxnOffsetCommit of a fenced epoch after a reload: %s", code(got))
			}
			if tc.refused {
				if got := await(t, txnEnd(c, 42, tc.markerEpoch, tc.commit, tc.bumped)); got != kerr.InvalidProducerEpoch.Code {
					t.Fatalf("marker of an earlier transaction: %v, want INVALID_PRODUCER_EPOCH", got)
				}
				if o, e := fetchStable(t, c); e != kerr.UnstableOffsetCommit.Code {
					t.Fatalf("after the refused marker: offset %d code %s, want UNSTABLE_OFFSET_COMMIT", o, code(e))
				}
				tc.markerEpoch, tc.bumped = 5, false // the pending offsets' own
			}
			if got := await(t, txnEnd(c, 42, tc.markerEpoch, tc.commit, tc.bumped)); got != int16(0) {
				t.Fatalf("marker: %v", got)
			}
			if o, e := fetchStable(t, c); e != 0 || o != tc.want {
				t.Fatalf("after the marker: offset %d code %s, want %d", o, code(e), tc.want)
			}
			// The marker delivered again (the transaction coordinator
			// retrying) changes nothing.
			if got := await(t, txnEnd(c, 42, tc.markerEpoch, true, tc.bumped)); got != int16(0) {
				t.Fatalf("repeated marker: %v", got)
			}
			c.Stop(5 * time.Second)

			c = open()
			if o, e := fetchStable(t, c); e != 0 || o != tc.want {
				t.Fatalf("after a reload: offset %d code %s, want %d", o, code(e), tc.want)
			}
		})
	}
}

// TestCoordinatorClaim: with a claiming store (cluster mode), a group's
// coordinator whose files a coordinator loaded from a later assignment file
// has claimed (it stalled past dead-after) acknowledges no commit after
// that and gives the group up; loading it again is refused while this
// broker's view is older than the claim, and once the group comes back in a
// later file the load starts from the other coordinator's offsets.
func TestCoordinatorClaim(t *testing.T) {
	dir := t.TempDir()
	views := &routing.Store{}
	v := view(nil)
	v.Epoch, v.Version = 3, 10
	views.Publish(v)
	st, err := groupstore.NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Claims = true
	c, clk := startCoordinator(t, st, views)
	commit := func(off int64) int16 {
		r := await(t, callGroup(c, "g", commitReq(8, -1, "", map[string]map[int32]int64{"t": {0: off}}))).(*kmsg.OffsetCommitResponse)
		return r.Topics[0].Partitions[0].ErrorCode
	}
	if got := commit(3); got != 0 {
		t.Fatalf("commit: %s", code(got))
	}
	// The next coordinator loads the group from file 3.20 and commits.
	next, loaded, err := st.OpenAt("g", assignment.Position{Epoch: 3, Version: 20})
	if err != nil || loaded.Offsets[groupstore.TP{Topic: "t", Partition: 0}].Offset != 3 {
		t.Fatalf("next coordinator's load: %+v, %v", loaded.Offsets, err)
	}
	if err := next.Append([]groupstore.Record{{TP: groupstore.TP{Topic: "t", Partition: 0}, Commit: &groupstore.Commit{Offset: 8, ExpireTime: -1}}}); err != nil {
		t.Fatal(err)
	}
	if got := commit(5); got == 0 {
		t.Fatal("the superseded coordinator acknowledged a commit")
	}
	// It gave the group up; loading it again from file 3.10 is refused.
	if got := commit(6); got != kerr.CoordinatorLoadInProgress.Code && got != kerr.NotCoordinator.Code {
		t.Fatalf("commit while this broker's view is older than the claim: %s, want a retriable refusal", code(got))
	}
	// The group comes back to this broker in a later file: the next load
	// claims it and starts from the other coordinator's offsets.
	v = view(nil)
	v.Epoch, v.Version = 3, 30
	views.Publish(v)
	// Each refused load is retried a second later (virtual time).
	deadline := time.Now().Add(5 * time.Second)
	for {
		clk.Advance(time.Second)
		f := await(t, callGroup(c, "g", &messages.GroupFetchOffsets{Version: 8, MemberEpoch: -1,
			Topics: []messages.GroupTopic{{Topic: "t", Partitions: []int32{0}}}})).(kmsg.OffsetFetchResponseGroup)
		o, e := offsetOf(f, "t", 0)
		if f.ErrorCode != 0 {
			e = f.ErrorCode
		}
		if e == 0 {
			if o != 8 {
				t.Fatalf("after the reload: offset %d, want the other coordinator's 8", o)
			}
			break
		}
		// Until the manager has let the old actor go, it answers
		// NOT_COORDINATOR; a refused load LOAD_IN_PROGRESS.
		if e != kerr.CoordinatorLoadInProgress.Code && e != kerr.NotCoordinator.Code || time.Now().After(deadline) {
			t.Fatalf("fetch after the group came back: %s", code(e))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := commit(9); got != 0 {
		t.Fatalf("commit after the reload: %s", code(got))
	}
	_, loaded, err = st.OpenAt("g", assignment.Position{Epoch: 3, Version: 40})
	if got := loaded.Offsets[groupstore.TP{Topic: "t", Partition: 0}].Offset; err != nil || got != 9 {
		t.Fatalf("next load: offset %d, %v; want 9", got, err)
	}
}
