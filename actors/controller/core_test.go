package controller

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/controller/balancer"
	"github.com/kaas-project/kaas/actors/internal/scripttest"
	"github.com/kaas-project/kaas/proto/heartbeatpb"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/assignment"
)

// coreHarness is a minimal shell around a controller Core: it executes
// effects in virtual time, keeping what is in flight (the write, the stray
// removal, the queued recompute) for the script to complete.
type coreHarness struct {
	t       *testing.T
	core    *Core
	now     time.Time
	leader  bool
	file    *assignment.Assignment // the last file written (or inherited)
	writing *assignment.Assignment // the write in flight
	last    *assignment.Assignment // the last file asked for
	removal []storage.PartitionID
	soon    []string // queued RecomputeNow reasons
	out     []string
}

func newCoreHarness(t *testing.T, cfg CoreConfig, prev *assignment.Assignment) *coreHarness {
	h := &coreHarness{t: t, now: time.Unix(1_700_000_000, 0), leader: true, file: prev}
	cfg.Self, cfg.SelfHost, cfg.SelfPort, cfg.HeartbeatAddr = "kaas-0", "127.0.0.1", 9092, "127.0.0.1:9094"
	if cfg.DeadAfter == 0 {
		cfg.DeadAfter = 4 * time.Second
	}
	cfg.StillLeader = func() bool { return h.leader }
	cfg.Log = zerolog.Nop()
	h.core = NewCore(cfg, prev)
	return h
}

func pos(a *assignment.Assignment) string {
	return fmt.Sprintf("%d.%d", a.ControllerEpoch, a.AssignmentVersion)
}

func (h *coreHarness) step(ev Event) {
	for _, e := range h.core.Step(ev, h.now) {
		switch e := e.(type) {
		case SendRecompute:
			h.soon = append(h.soon, e.Why)
			h.record("soon")
		case WriteFile:
			if h.writing != nil {
				h.t.Fatal("a second write while one is in flight")
			}
			h.writing, h.last = e.A, e.A
			h.record("write " + pos(e.A))
		case ReadHeader:
			h.record("read-header")
		case ListPartitions:
			h.record("list")
		case RemoveStrays:
			h.removal = e.IDs
			var names []string
			for _, id := range e.IDs {
				names = append(names, fmt.Sprintf("%s/%d", id.Topic, id.Partition))
			}
			h.record("remove " + strings.Join(names, " "))
		case SetWritten:
			h.record(fmt.Sprintf("hub %d.%d", e.Epoch, e.Version))
		case PushChanged:
			h.record(fmt.Sprintf("push %d.%d", e.Epoch, e.Version))
		case ReportLeaseLost:
			h.record("lease-lost")
		case AnswerUnregister:
			h.record(fmt.Sprintf("answer %d", e.Code))
		case AnswerQuorum:
			q := e.Q
			s := fmt.Sprintf("quorum %d.%d leader %d:", q.ControllerEpoch, q.AssignmentVersion, q.ControllerId)
			for _, m := range q.Members {
				caughtUp := "-"
				if m.CaughtUpMs >= 0 {
					caughtUp = fmt.Sprintf("%ds", (h.now.UnixMilli()-m.CaughtUpMs)/1000)
				}
				s += fmt.Sprintf(" %d@%d/%s", m.BrokerId, m.AppliedVersion, caughtUp)
			}
			h.record(s)
		default:
			h.t.Fatalf("unknown effect %T", e)
		}
	}
}

func (h *coreHarness) record(s string) { h.out = append(h.out, s) }

// partitionID parses "topic/n" ("gone" is a deleted topic's id).
func partitionID(s string) storage.PartitionID {
	topic, n, _ := strings.Cut(s, "/")
	p, _ := strconv.Atoi(n)
	id := "id"
	if topic != "t" {
		id = topic + "-id"
	}
	return storage.PartitionID{Topic: topic, TopicID: id, Partition: int32(p)}
}

func int32s(s string) []int32 {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			panic(err)
		}
		out = append(out, int32(n))
	}
	return out
}

// run executes one script command and returns the effects it produced.
//
//	start | tick | +DUR (virtual time passes) | soon (the queued RecomputeNow)
//	topics N [NAME...] (t of N partitions, the others of one) | file-topics NAME... | ping NAME [v=E.V] [lists=0,1] [opening=2] [draining] [cordoned] [rack=R] [listeners=L]
//	written | write-failed | lease-moved | dirsync-failed
//	header E.V | header-err | listed ID... | removed | remove-refused
//	leader-lost | leaders 0,-1,2 | racks a,-,b | listeners L1;-;L2 (of the last file asked for)
//	unregister ID | slots kaas-0:25,kaas-1:25 held=0,kaas-1 (of the last file asked
//	  for: the slots each broker serves; the held slots, a name for all of its own)
//	replicas N (the StatefulSet's; "replicas none": no StatefulSet)
//	quorum (answers "quorum E.V leader ID: ID@APPLIED/CAUGHT-UP-AGO ...")
func (h *coreHarness) run(f []string) []string {
	h.out = nil
	if len(f) == 0 {
		return nil
	}
	switch cmd, args := f[0], f[1:]; {
	case cmd == "start":
		h.step(Start{})
	case cmd == "tick":
		h.step(Tick{})
	case strings.HasPrefix(cmd, "+"):
		d, err := time.ParseDuration(cmd[1:])
		if err != nil {
			h.t.Fatal(err)
		}
		h.now = h.now.Add(d)
	case cmd == "soon":
		if len(h.soon) == 0 {
			h.t.Fatal("no recompute queued")
		}
		why := h.soon[0]
		h.soon = h.soon[1:]
		h.step(RecomputeNow{Why: why})
	case cmd == "topics":
		n, _ := strconv.Atoi(args[0])
		topics := map[string]balancer.TopicSpec{"t": {ID: "id", Partitions: n, Config: map[string]string{}}}
		for _, extra := range args[1:] { // more topics of one partition
			topics[extra] = balancer.TopicSpec{ID: "id-" + extra, Partitions: 1, Config: map[string]string{}}
		}
		h.step(&TopicsChanged{Topics: topics})
	case cmd == "file-topics":
		if got := slices.Sorted(maps.Keys(h.last.Topics)); !slices.Equal(got, args) {
			h.t.Fatalf("topics of %s: %v, want %v", pos(h.last), got, args)
		}
	case cmd == "ping":
		id := int32(args[0][len(args[0])-1] - '0')
		p := &heartbeatpb.Ping{Name: args[0], BrokerId: id, KafkaHost: "127.0.0.1", KafkaPort: 9092 + id, Healthy: true}
		if h.file != nil {
			p.ControllerEpoch, p.AssignmentVersion = h.file.ControllerEpoch, h.file.AssignmentVersion
		}
		for _, a := range args[1:] {
			k, v, _ := strings.Cut(a, "=")
			switch k {
			case "v":
				e, ver, _ := strings.Cut(v, ".")
				p.ControllerEpoch, _ = strconv.ParseInt(e, 10, 64)
				p.AssignmentVersion, _ = strconv.ParseInt(ver, 10, 64)
			case "lists", "opening":
				for _, n := range int32s(v) {
					p.Partitions = append(p.Partitions, &heartbeatpb.PartitionLed{Topic: "t", Partition: n, LeaderEpoch: 1, Opening: k == "opening"})
				}
			case "draining":
				p.Draining = true
			case "cordoned":
				p.Cordoned = true
			case "rack":
				p.KafkaRack = v
			case "listeners":
				p.KafkaListeners = v
			default:
				h.t.Fatalf("ping: unknown %q", a)
			}
		}
		h.step(&BrokerPing{Ping: p, At: h.now})
	case cmd == "written", cmd == "write-failed", cmd == "lease-moved":
		a := h.writing
		if a == nil {
			h.t.Fatal("no write in flight")
		}
		h.writing = nil
		switch cmd {
		case "written":
			h.file = a
			h.step(Written{A: a})
		case "write-failed":
			h.step(Written{A: a, Err: errors.New("disk full")})
		default:
			h.step(Written{A: a, Err: errors.New("lease held by another"), LeaseLost: true})
		}
	case cmd == "dirsync-failed":
		h.step(DirSyncFailed{Version: h.file.AssignmentVersion, Err: errors.New("fsync: i/o error")})
	case cmd == "header":
		e, v, _ := strings.Cut(args[0], ".")
		epoch, _ := strconv.ParseInt(e, 10, 64)
		version, _ := strconv.ParseInt(v, 10, 64)
		h.step(HeaderRead{Epoch: epoch, Version: version})
	case cmd == "header-err":
		h.step(HeaderRead{Err: errors.New("unexpected end of file")})
	case cmd == "listed":
		var ids []storage.PartitionID
		for _, a := range args {
			ids = append(ids, partitionID(a))
		}
		h.step(PartitionsListed{IDs: ids})
	case cmd == "removed":
		ids := h.removal
		h.removal = nil
		h.step(StraysRemoved{IDs: ids})
	case cmd == "remove-refused":
		h.removal = nil
		h.step(StraysRemoved{Err: errors.New("lease held by another")})
	case cmd == "leader-lost":
		h.leader = false
	case cmd == "unregister":
		id, _ := strconv.Atoi(args[0])
		h.step(&UnregisterBroker{ID: int32(id), Reply: func(int16, string) {}})
	case cmd == "quorum":
		h.step(&DescribeQuorum{Reply: func(*heartbeatpb.DescribeQuorumResponse) {}})
	case cmd == "replicas":
		n, err := strconv.Atoi(args[0])
		h.step(ReplicasChanged{Replicas: int32(n), Known: err == nil})
	case cmd == "slots":
		_, held, _ := strings.Cut(args[1], "=")
		served := map[string]int{}
		for _, s := range h.last.ConsumerGroups.Slots {
			served[s]++
		}
		if got := fmt.Sprint(served); got != "map["+strings.ReplaceAll(args[0], ",", " ")+"]" {
			h.t.Fatalf("slots of %s: %s, want %s", pos(h.last), got, args[0])
		}
		var want []int
		if held != "" {
			for _, item := range strings.Split(held, ",") {
				if n, err := strconv.Atoi(item); err == nil {
					want = append(want, n)
					continue
				}
				for i, s := range h.last.ConsumerGroups.Slots { // a name: every slot it serves
					if s == item {
						want = append(want, i)
					}
				}
			}
			slices.Sort(want)
		}
		if got := h.last.ConsumerGroups.Held; !slices.Equal(got, want) {
			h.t.Fatalf("held slots of %s: %v, want %v", pos(h.last), got, want)
		}
	case cmd == "listeners" || cmd == "racks":
		// One field of every row ("-": empty); listeners hold commas.
		field, sep := func(b assignment.Broker) string { return b.Rack }, ","
		if cmd == "listeners" {
			field, sep = func(b assignment.Broker) string { return b.Listeners }, ";"
		}
		var got []string
		for _, b := range h.last.Brokers {
			got = append(got, cmp.Or(field(b), "-"))
		}
		if want := strings.Split(args[0], sep); !slices.Equal(got, want) {
			h.t.Fatalf("%s of %s: %v, want %v", cmd, pos(h.last), got, want)
		}
	case cmd == "leaders":
		if got, want := leadersOf(h.last), int32s(args[0]); !slices.Equal(got, want) {
			h.t.Fatalf("leaders of %s: %v, want %v", pos(h.last), got, want)
		}
	default:
		h.t.Fatalf("unknown command %q", cmd)
	}
	return h.out
}

// inherited is the file a controller of epoch 6 finds: version 10, three
// brokers, partition i led by broker leaders[i].
func inherited(leaders ...int32) *assignment.Assignment {
	a := doc(leaders...)
	a.ControllerEpoch, a.AssignmentVersion, a.Controller = 6, 10, "kaas-0"
	for i := range a.Brokers {
		a.Brokers[i].Host, a.Brokers[i].Port = "127.0.0.1", 9092+a.Brokers[i].ID
	}
	return a
}

// inheritedFrom is inherited, written by controller as its controller.
func inheritedFrom(controller string, leaders ...int32) *assignment.Assignment {
	a := inherited(leaders...)
	a.Controller = controller
	return a
}

var coreScenarios = []struct {
	name   string
	cfg    CoreConfig
	prev   *assignment.Assignment
	script []string
}{
	{
		name: "first win writes, then each topic change recomputes",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"tick -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"topics 3 -> write 5.2",
			"leaders 0,0,0",
			"written -> hub 5.2; push 5.2",
			"tick -> read-header",
			"header 5.2 ->",
			"topics 5 -> write 5.3",
		},
	},
	{
		name: "a KafkaTopic named __consumer_offsets is left out of the file: the slots place that name",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 __consumer_offsets u -> write 5.1",
			"file-topics t u",
			"leaders 0,0,0",
		},
	},
	{
		name: "a recompute asked while a write is in flight runs once after it",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"topics 4 ->",
			"topics 5 ->",
			"tick ->",
			"written -> hub 5.1; push 5.1; write 5.2",
			"leaders 0,0,0,0,0",
			"written -> hub 5.2; push 5.2",
		},
	},
	{
		name: "a failed write is retried at the next tick, not at once",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"write-failed ->",
			"+1s",
			"tick -> write 5.1",
			"write-failed ->",
			"ping kaas-1 ->",
			"+1s",
			"tick -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"tick -> read-header",
		},
	},
	{
		name: "a directory fsync failure after the rename re-asserts the file at the next tick",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"dirsync-failed ->",
			"tick -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"tick -> read-header",
		},
	},
	{
		name: "a newer file's directory fsync covers a failed one: no re-assertion",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"topics 4 -> write 5.2",
			"dirsync-failed ->", // of 5.1, while 5.2 is being written
			"tick ->",
			"written -> hub 5.2; push 5.2",
			"tick -> read-header",
		},
	},
	{
		name: "a re-assertion owed when the next write fails: the retry comes first and its file covers it",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"topics 4 -> write 5.2",
			"dirsync-failed ->", // of 5.1
			"write-failed ->",   // 5.2 never renamed: 5.1 is still the file
			"tick -> write 5.2", // the retry
			"written -> hub 5.2; push 5.2",
			"tick -> read-header",
		},
	},
	{
		name: "a queued recompute overtaken by one owed after a write does nothing",
		cfg:  CoreConfig{Epoch: 6},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 -> soon",
			"topics 3 -> write 6.11",
			"ping kaas-1 lists=1 ->",
			"topics 4 ->", // owed after the write
			"written -> hub 6.11; push 6.11; write 6.12",
			"soon ->",
			"written -> hub 6.12; push 6.12",
			"ping kaas-1 lists=1 draining -> soon",
		},
	},
	{
		name: "a broker that reports itself cordoned keeps its partitions and takes no new one",
		cfg:  CoreConfig{Epoch: 6},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"ping kaas-2 lists=2 cordoned -> soon",
			"soon ->", // nothing moves: the file is unchanged
			"topics 7 -> write 6.12",
			"leaders 0,1,2,0,1,0,1",
			"written -> hub 6.12; push 6.12",
			"ping kaas-2 lists=2 -> soon", // uncordoned
			"soon -> write 6.13",
			"leaders -1,1,2,0,1,0,1", // partition 0 moves from kaas-0 to kaas-2, held until released
		},
	},
	{
		name: "each broker's rack goes into its row, and a changed one into the next file",
		cfg:  CoreConfig{Epoch: 6, SelfRack: "zone-a"},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 rack=zone-a -> soon",
			"ping kaas-1 lists=1 rack=zone-b ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"racks zone-a,zone-b,-",
			"written -> hub 6.11; push 6.11",
			"ping kaas-2 lists=2 rack=zone-c -> soon", // restarted in another zone
			"soon -> write 6.12",
			"racks zone-a,zone-b,zone-c",
			"leaders 0,1,2",
			"written -> hub 6.12; push 6.12",
			"ping kaas-2 lists=2 rack=zone-c ->",
			"tick -> read-header",
		},
	},
	{
		name: "each broker's listeners go into its row, and changed ones into the next file",
		cfg:  CoreConfig{Epoch: 6, SelfListeners: "EXTERNAL://10.0.0.7:31090"},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 listeners=EXTERNAL://10.0.0.7:31090 -> soon",
			"ping kaas-1 lists=1 listeners=EXTERNAL://10.0.0.8:31091 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"listeners EXTERNAL://10.0.0.7:31090;EXTERNAL://10.0.0.8:31091;-",
			"written -> hub 6.11; push 6.11",
			"ping kaas-2 lists=2 listeners=EXTERNAL://10.0.0.9:31092 -> soon", // restarted with an external listener
			"soon -> write 6.12",
			"listeners EXTERNAL://10.0.0.7:31090;EXTERNAL://10.0.0.8:31091;EXTERNAL://10.0.0.9:31092",
			"leaders 0,1,2",
			"written -> hub 6.12; push 6.12",
			"ping kaas-2 lists=2 listeners=EXTERNAL://10.0.0.9:31092 ->",
			"tick -> read-header",
		},
	},
	{
		// The dynamic broker configs cordon kaas-2: the recompute after
		// the election places the new partitions before kaas-2 pings.
		name: "a new controller keeps new partitions off a broker cordoned before its first ping",
		cfg:  CoreConfig{Epoch: 7, Cordoned: map[string]bool{"kaas-2": true}},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"topics 7 -> write 7.11",
			"leaders 0,1,2,0,1,0,1",
		},
	},
	{
		name: "a lower epoch's or older version's file on the volume is re-asserted",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"topics 4 -> write 5.2",
			"written -> hub 5.2; push 5.2",
			"tick -> read-header",
			"tick ->", // one header read at a time
			"header 3.99 -> write 5.2",
			"written -> hub 5.2; push 5.2",
			"tick -> read-header",
			"header 5.1 -> write 5.2",
			"written -> hub 5.2; push 5.2",
			"tick -> read-header",
			"header-err -> write 5.2",
			"written -> hub 5.2; push 5.2",
			"tick -> read-header",
			"header 6.1 ->", // a newer controller's: not ours to overwrite
		},
	},
	{
		name: "a header read overtaken by a write is not acted on",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"tick -> read-header",
			"topics 4 -> write 5.2",
			"header 5.1 ->",
			"written -> hub 5.2; push 5.2",
		},
	},
	{
		name: "a Lease lost before a write stops writing; one lost at the write stops the controller",
		cfg:  CoreConfig{Epoch: 5},
		script: []string{
			"start -> hub 0.0",
			"topics 3 -> write 5.1",
			"lease-moved -> lease-lost",
			"leader-lost",
			"topics 4 ->",
			"tick ->",
		},
	},
	{
		name: "pings queued behind a recompute are absorbed by it",
		cfg:  CoreConfig{Epoch: 6},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"leaders 0,1,2",
			"written -> hub 6.11; push 6.11",
			"ping kaas-1 lists=1 draining -> soon",
			"ping kaas-2 lists=2 draining ->", // would ask too: absorbed
			"ping kaas-0 lists=0 ->",
			"soon -> write 6.12",
			"leaders 0,-1,-1",
		},
	},
	{
		name: "an unregistered dead broker leaves the file and its slots, which stay where its death spread them; a registering broker's slots are held",
		cfg:  CoreConfig{Epoch: 6, DeadAfter: 4 * time.Second},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"unregister 2 -> answer 42", // alive: refused
			"unregister 0 -> answer 42", // the controller itself
			"unregister 7 -> answer 102",
			"+3s",
			"ping kaas-0 lists=0 ->",
			"ping kaas-1 lists=1 ->",
			"+2s", // kaas-2 silent for 5s
			"ping kaas-0 lists=0 ->",
			"ping kaas-1 lists=1 ->",
			"tick -> write 6.12",
			"leaders 0,1,0",
			"slots kaas-0:17,kaas-1:17,kaas-2:16 held=",
			"written -> hub 6.12; push 6.12",
			// kaas-2's slots, spread over kaas-0 and kaas-1 while it was
			// dead, stay with the broker serving each: nothing is held.
			"unregister 2 -> write 6.13",
			"slots kaas-0:25,kaas-1:25 held=",
			"leaders 0,1,0",
			"written -> hub 6.13; push 6.13; answer 0",
			"ping kaas-1 lists=1 ->",
			"unregister 2 -> answer 102", // gone
			// Back (scaled up again): registered anew, the slots it takes held.
			"ping kaas-2 ->",
			"tick -> write 6.14",
			"slots kaas-0:17,kaas-1:17,kaas-2:16 held=kaas-2",
		},
	},
	{
		name: "a dead broker the StatefulSet no longer has is unregistered; a live one or one within the replicas stays",
		cfg:  CoreConfig{Epoch: 6, DeadAfter: 4 * time.Second},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"replicas none ->",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"replicas 1 ->", // kaas-1 and kaas-2 are alive (draining, in a real scale-down)
			"replicas 3 ->",
			"+3s",
			"ping kaas-0 lists=0 ->",
			"+2s", // kaas-1 and kaas-2 silent for 5s: dead, within the replicas
			"ping kaas-0 lists=0 ->",
			"tick -> write 6.12",
			"slots kaas-0:17,kaas-1:17,kaas-2:16 held=",
			"written -> hub 6.12; push 6.12",
			"tick -> read-header",
			"header 6.12 ->",
			// kaas-0 serves every slot, the dead brokers' too, before and
			// after: nothing is held.
			"replicas 2 -> write 6.13",
			"slots kaas-0:25,kaas-1:25 held=",
			"written -> hub 6.13; push 6.13",
			"tick -> read-header",
			"header 6.13 ->",
			"replicas none ->", // the StatefulSet deleted: nothing more is unregistered
			"tick -> read-header",
			"replicas 1 -> write 6.14",
			"slots kaas-0:50 held=",
		},
	},
	{
		name: "the quorum is every broker's progress through the files; the controller is the one voter",
		cfg:  CoreConfig{Epoch: 6, DeadAfter: 4 * time.Second},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"quorum -> quorum 6.10 leader 0: 0@10/0s 1@-1/- 2@-1/-", // not heard from yet
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"+2s",
			"ping kaas-2 v=6.9 lists=2 ->", // behind: never caught up
			"quorum -> quorum 6.11 leader 0: 0@11/0s 1@10/2s 2@9/-",
			"ping kaas-1 lists=1 ->",
			"+1s",
			"quorum -> quorum 6.11 leader 0: 0@11/0s 1@11/1s 2@9/-",
		},
	},
	{
		name: "an unregistration the controller could not write is answered NOT_CONTROLLER",
		cfg:  CoreConfig{Epoch: 6, DeadAfter: 4 * time.Second},
		prev: inherited(0, 1, 0),
		script: []string{
			"start -> hub 6.10",
			"+5s", // kaas-2 never pinged: dead once the grace is over
			"ping kaas-0 lists=0,2 -> soon",
			"ping kaas-1 lists=1 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"unregister 2 -> write 6.12",
			"lease-moved -> answer 41; lease-lost",
		},
	},
	{
		name: "a drain writes a hold, then the grant once the release is reported",
		cfg:  CoreConfig{Epoch: 6},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"ping kaas-1 lists=1 draining -> soon",
			"soon -> write 6.12",
			"leaders 0,-1,2",
			"written -> hub 6.12; push 6.12",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-2 lists=2 ->",
			"soon ->", // kaas-1 has not applied the file that holds its slot
			"ping kaas-1 lists=1 draining -> soon",
			"soon -> write 6.13", // the group slot moves; partition 1 is still listed
			"leaders 0,-1,2",
			"written -> hub 6.13; push 6.13",
			"ping kaas-1 draining -> soon", // released
			"soon -> write 6.14",
			"leaders 0,0,2",
			"written -> hub 6.14; push 6.14",
		},
	},
	{
		name: "a stray directory is removed only after the grace and a Lease confirmation",
		cfg:  CoreConfig{Epoch: 5, StrayGrace: 10 * time.Second},
		script: []string{
			"start -> hub 0.0",
			"tick -> write 5.1",
			"written -> hub 5.1; push 5.1",
			"tick -> read-header", // no topic list yet: no scan
			"header 5.1 ->",
			"topics 1 -> write 5.2",
			"written -> hub 5.2; push 5.2",
			"tick -> list; read-header",
			"header 5.2 ->",
			"listed t/0 gone/0 gone/1 ->", // first seen
			"+5s",
			"tick -> list; read-header",
			"header 5.2 ->",
			"listed t/0 gone/0 ->", // gone/1 removed by a broker meanwhile
			"+5s",
			"tick -> list; read-header",
			"header 5.2 ->",
			"listed t/0 gone/0 gone/1 -> remove gone/0",
			"+5s",
			"tick -> read-header", // one removal at a time
			"remove-refused ->",
			"header 5.2 ->",
			"tick -> list; read-header",
			"header 5.2 ->",
			"listed t/0 gone/0 gone/1 -> remove gone/0",
			"removed ->",
			"+5s",
			"tick -> list; read-header",
			"listed t/0 gone/1 -> remove gone/1",
		},
	},
	{
		name: "a broker silent past dead-after is dead and its partition moves",
		cfg:  CoreConfig{Epoch: 6, DeadAfter: 4 * time.Second},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"+1s",
			"ping kaas-0 lists=0 ->",
			"ping kaas-2 lists=2 ->",
			"+2s",
			"ping kaas-0 lists=0 ->",
			"ping kaas-2 lists=2 ->",
			"tick -> read-header",
			"header 6.11 ->",
			"+2s", // kaas-1 silent for 5s
			"ping kaas-0 lists=0 ->",
			"ping kaas-2 lists=2 ->",
			"tick -> write 6.12",
			"leaders 0,0,2",
		},
	},
	{
		name: "the broker that wrote the inherited file as controller gets no grace after the election; the others do",
		cfg:  CoreConfig{Epoch: 7, DeadAfter: 4 * time.Second},
		prev: inheritedFrom("kaas-1", 0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"topics 3 -> write 7.11",
			"leaders 0,0,2", // kaas-2 has not pinged either, but is presumed alive
			"written -> hub 7.11; push 7.11",
			"ping kaas-1 ->", // back: it was only cut off from the Lease
			"+1s",
			"tick -> write 7.12",
		},
	},
	{
		name: "a controller that released the Lease (a drain) keeps the others' grace: its partitions move two-phase",
		cfg:  CoreConfig{Epoch: 7, DeadAfter: 4 * time.Second, PrevReleased: true},
		prev: inheritedFrom("kaas-1", 0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"topics 3 -> write 7.11",
			"leaders 0,1,2", // presumed alive until it pings: still serving partition 1
			"written -> hub 7.11; push 7.11",
			"ping kaas-1 v=7.11 lists=1 draining ->",
			"tick -> write 7.12", // the alive set changed: kaas-1 drains
			"leaders 0,-1,2",     // held until kaas-1 reports it closed
			"written -> hub 7.12; push 7.12",
			"ping kaas-0 v=7.12 lists=0 -> soon",
			"ping kaas-2 v=7.12 lists=2 ->",
			"soon ->",                             // kaas-1 still lists partition 1
			"ping kaas-1 v=7.12 draining -> soon", // released
			"soon -> write 7.13",
			"leaders 0,0,2",
		},
	},
	{
		name: "a controller that stopped hearing its own broker declares nobody dead until it has heard it again for dead-after/2",
		cfg:  CoreConfig{Epoch: 6, DeadAfter: 4 * time.Second},
		prev: inherited(0, 1, 2),
		script: []string{
			"start -> hub 6.10",
			"ping kaas-0 lists=0 -> soon",
			"ping kaas-1 lists=1 ->",
			"ping kaas-2 lists=2 ->",
			"soon -> write 6.11",
			"written -> hub 6.11; push 6.11",
			"+6s", // starved: nobody heard
			"tick -> read-header",
			"header 6.11 ->",
			"ping kaas-0 lists=0 ->",
			"+1s",
			"tick -> read-header",
			"header 6.11 ->",
			"ping kaas-2 lists=2 ->",
			"ping kaas-0 lists=0 ->",
			"+1s", // heard its own broker for dead-after/2
			"ping kaas-0 lists=0 ->",
			"ping kaas-2 lists=2 ->",
			"tick -> write 6.12",
			"leaders 0,0,2",
		},
	},
}

func TestCoreScenarios(t *testing.T) {
	for _, sc := range coreScenarios {
		t.Run(sc.name, func(t *testing.T) {
			h := newCoreHarness(t, sc.cfg, sc.prev)
			scripttest.Run(t, sc.script, h.run)
		})
	}
}
