package groupstore

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func commit(off int64) *Commit {
	return &Commit{Offset: off, LeaderEpoch: 3, Metadata: "m", CommitTime: 1000 + off, ExpireTime: -1}
}

func rec(topic string, p int32, off int64) Record {
	return Record{TP: TP{topic, p}, Commit: commit(off)}
}

func stores(t *testing.T) map[string]Store {
	f, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return map[string]Store{"memory": NewMemory(), "file": f}
}

func TestStoreRoundTrip(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			l, st, err := s.Open("g1")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Offsets) != 0 || st.Meta != nil {
				t.Fatalf("new group state %+v", st)
			}
			if gs, _ := s.Groups(); len(gs) != 0 {
				t.Fatalf("groups before any append: %v", gs)
			}
			meta := &Meta{Kind: "classic", ProtocolType: "consumer", EmptySince: 42}
			steps := [][]Record{
				{rec("a", 0, 1), rec("a", 1, 2)},
				{{Meta: meta}, rec("a", 0, 5), {TP: TP{"a", 1}, Delete: true}},
				{rec("b", 7, 9)},
			}
			for _, recs := range steps {
				if err := l.Append(recs); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2, st, err := s.Open("g1")
			if err != nil {
				t.Fatal(err)
			}
			want := map[TP]Commit{{"a", 0}: *commit(5), {"b", 7}: *commit(9)}
			if !reflect.DeepEqual(st.Offsets, want) {
				t.Errorf("offsets %+v, want %+v", st.Offsets, want)
			}
			if st.Meta == nil || *st.Meta != *meta {
				t.Errorf("meta %+v, want %+v", st.Meta, meta)
			}
			if gs, _ := s.Groups(); !reflect.DeepEqual(gs, []string{"g1"}) {
				t.Errorf("groups %v", gs)
			}
			if err := l2.Destroy(); err != nil {
				t.Fatal(err)
			}
			if gs, _ := s.Groups(); len(gs) != 0 {
				t.Errorf("groups after destroy: %v", gs)
			}
			_, st, err = s.Open("g1")
			if err != nil || len(st.Offsets) != 0 {
				t.Errorf("after destroy: %+v %v", st, err)
			}
		})
	}
}

func TestFileTornAndCorruptTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
		want   int // offsets that survive
	}{
		{"torn last record", func(b []byte) []byte { return b[:len(b)-3] }, 2},
		{"torn length", func(b []byte) []byte { return append(b, 0, 0) }, 3},
		{"flipped byte in last record", func(b []byte) []byte { b[len(b)-2] ^= 0xff; return b }, 2},
		{"garbage tail", func(b []byte) []byte { return append(b, []byte(strings.Repeat("x", 50))...) }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewFile(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			l, _, _ := s.Open("g")
			for i := int32(0); i < 3; i++ {
				if err := l.Append([]Record{rec("t", i, int64(i))}); err != nil {
					t.Fatal(err)
				}
			}
			_ = l.Close()
			path := filepath.Join(s.Root, DirName("g"), LogName)
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			l, st, err := s.Open("g")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Offsets) != tc.want {
				t.Fatalf("%d offsets survived, want %d", len(st.Offsets), tc.want)
			}
			// Appends after recovery follow valid records.
			if err := l.Append([]Record{rec("t", 9, 99)}); err != nil {
				t.Fatal(err)
			}
			_ = l.Close()
			_, st, _ = s.Open("g")
			if len(st.Offsets) != tc.want+1 || st.Offsets[TP{"t", 9}].Offset != 99 {
				t.Fatalf("after append: %+v", st.Offsets)
			}
		})
	}
}

func TestFileCompaction(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.CompactMin = 10
	l, _, _ := s.Open("g")
	path := filepath.Join(s.Root, DirName("g"), LogName)
	var sizes []int64
	for i := 0; i < 100; i++ {
		if err := l.Append([]Record{rec("t", int32(i%2), int64(i))}); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		sizes = append(sizes, st.Size())
	}
	// Two live keys: the file stays near CompactMin records (a record is
	// about 45 bytes; 100 uncompacted ones would be 4.5 kB).
	for i, sz := range sizes {
		if sz > 700 {
			t.Fatalf("append %d: log is %d bytes, compaction did not run", i, sz)
		}
	}
	_ = l.Close()
	_, st, err := s.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	if st.Offsets[TP{"t", 0}].Offset != 98 || st.Offsets[TP{"t", 1}].Offset != 99 || len(st.Offsets) != 2 {
		t.Fatalf("after compaction: %+v", st.Offsets)
	}
}

func TestFileCompactedOnLoad(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, _, _ := s.Open("g")
	for i := 0; i < 20; i++ {
		_ = l.Append([]Record{rec("t", 0, int64(i))})
	}
	_ = l.Close()
	path := filepath.Join(s.Root, DirName("g"), LogName)
	before, _ := os.Stat(path)
	l, st, err := s.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if after.Size() >= before.Size() {
		t.Fatalf("load did not compact: %d -> %d bytes", before.Size(), after.Size())
	}
	if st.Offsets[TP{"t", 0}].Offset != 19 {
		t.Fatalf("offsets %+v", st.Offsets)
	}
	if err := l.Append([]Record{rec("t", 1, 1)}); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
	_, st, _ = s.Open("g")
	if len(st.Offsets) != 2 {
		t.Fatalf("offsets %+v", st.Offsets)
	}
}

func TestFileGroupNames(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"", "plain", "with/slash and space", "..", strings.Repeat("long-", 100), "ünïcode"}
	for _, n := range names {
		l, _, err := s.Open(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append([]Record{rec("t", 0, 1)}); err != nil {
			t.Fatalf("%q: %v", n, err)
		}
		_ = l.Close()
	}
	got, err := s.Groups()
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string(nil), names...)
	sortStrings(want)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("groups %q\nwant   %q", got, want)
	}
	for _, n := range names {
		if len(DirName(n)) > 210 {
			t.Errorf("dir name for %q too long", n)
		}
		if _, st, _ := s.Open(n); st.Offsets[TP{"t", 0}].Offset != 1 {
			t.Errorf("%q: %+v", n, st.Offsets)
		}
	}
	// A log whose header names another group is refused, not merged.
	other := filepath.Join(s.Root, DirName("plain"), LogName)
	b, _ := os.ReadFile(other)
	_ = os.MkdirAll(filepath.Join(s.Root, DirName("impostor")), 0o755)
	_ = os.WriteFile(filepath.Join(s.Root, DirName("impostor"), LogName), b, 0o644)
	if _, _, err := s.Open("impostor"); err == nil {
		t.Error("opening a log that belongs to another group succeeded")
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestRecordCodec(t *testing.T) {
	for _, r := range []Record{
		rec("topic", 5, 1<<40),
		{TP: TP{"x", 0}, Commit: &Commit{Offset: -1, LeaderEpoch: -1, ExpireTime: -1}},
		{TP: TP{"i", 1}, Commit: &Commit{Offset: 3, LeaderEpoch: 2, CommitTime: 9, ExpireTime: -1, TopicID: [16]byte{1, 2, 3}}},
		{TP: TP{"d", 2}, Delete: true},
		{Meta: &Meta{Kind: "consumer", ProtocolType: "consumer", EmptySince: 7}},
		{TP: TP{"t", 4}, Commit: commit(8), Txn: &TxnProducer{ProducerID: 1 << 40, Epoch: -2}},
		{TP: TP{"t", 4}, Commit: &Commit{Offset: 1, TopicID: [16]byte{9}}, Txn: &TxnProducer{ProducerID: 3, Epoch: 7}},
		{TxnEnd: &TxnEnd{TxnProducer: TxnProducer{ProducerID: 5, Epoch: 300}, Commit: true}},
		{TxnEnd: &TxnEnd{TxnProducer: TxnProducer{ProducerID: 5, Epoch: 0}}},
	} {
		got, ok := decodeRecord(encodeRecord(r))
		if !ok || !reflect.DeepEqual(got, r) {
			t.Errorf("round trip %+v -> %+v (%v)", r, got, ok)
		}
	}
	if _, ok := decodeRecord([]byte{kindCommit, 5, 'a'}); ok {
		t.Error("short record decoded")
	}
	// A topic id is all of the optional tail or nothing.
	withID := encodeRecord(Record{TP: TP{"i", 1}, Commit: &Commit{TopicID: [16]byte{1}}})
	if _, ok := decodeRecord(withID[:len(withID)-1]); ok {
		t.Error("a commit with a partial topic id decoded")
	}
	if _, ok := decodeRecord([]byte{99}); ok {
		t.Error("unknown kind decoded")
	}
}

func txnRec(pid int64, epoch int16, topic string, p int32, off int64) Record {
	return Record{TP: TP{topic, p}, Commit: commit(off), Txn: &TxnProducer{ProducerID: pid, Epoch: epoch}}
}

func txnEnd(pid int64, epoch int16, commit bool) Record {
	return Record{TxnEnd: &TxnEnd{TxnProducer: TxnProducer{ProducerID: pid, Epoch: epoch}, Commit: commit}}
}

// offsetsOf flattens a state for comparison: committed offsets, and each
// producer's pending ones keyed "pid/epoch".
func offsetsOf(st State) (map[TP]int64, map[string]map[TP]int64) {
	c := map[TP]int64{}
	for tp, x := range st.Offsets {
		c[tp] = x.Offset
	}
	p := map[string]map[TP]int64{}
	for pid, x := range st.Pending {
		m := map[TP]int64{}
		for tp, o := range x.Offsets {
			m[tp] = o.Offset
		}
		p[strconv.FormatInt(pid, 10)+"/"+strconv.Itoa(int(x.Epoch))] = m
	}
	return c, p
}

func TestTransactionalOffsetsReplay(t *testing.T) {
	a0, a1, b0 := TP{"a", 0}, TP{"a", 1}, TP{"b", 0}
	for _, tc := range []struct {
		name      string
		recs      []Record
		committed map[TP]int64
		pending   map[string]map[TP]int64
	}{
		{"pending is not committed", []Record{rec("a", 0, 1), txnRec(7, 0, "a", 0, 5)},
			map[TP]int64{a0: 1}, map[string]map[TP]int64{"7/0": {a0: 5}}},
		{"commit marker commits", []Record{rec("a", 0, 1), txnRec(7, 0, "a", 0, 5), txnRec(7, 0, "a", 1, 6), txnEnd(7, 0, true)},
			map[TP]int64{a0: 5, a1: 6}, map[string]map[TP]int64{}},
		{"abort marker drops", []Record{rec("a", 0, 1), txnRec(7, 0, "a", 0, 5), txnEnd(7, 0, false)},
			map[TP]int64{a0: 1}, map[string]map[TP]int64{}},
		{"marker of another producer leaves them", []Record{txnRec(7, 0, "a", 0, 5), txnEnd(8, 0, true)},
			map[TP]int64{}, map[string]map[TP]int64{"7/0": {a0: 5}}},
		{"commit marker of an older epoch drops", []Record{txnRec(7, 2, "a", 0, 5), txnEnd(7, 1, true)},
			map[TP]int64{}, map[string]map[TP]int64{}},
		{"commit marker of a newer epoch commits", []Record{txnRec(7, 2, "a", 0, 5), txnEnd(7, 3, true)},
			map[TP]int64{a0: 5}, map[string]map[TP]int64{}},
		{"a newer epoch drops the older one's", []Record{txnRec(7, 1, "a", 0, 5), txnRec(7, 2, "b", 0, 9)},
			map[TP]int64{}, map[string]map[TP]int64{"7/2": {b0: 9}}},
		{"an older epoch is fenced", []Record{txnRec(7, 2, "a", 0, 5), txnRec(7, 1, "b", 0, 9), txnEnd(7, 2, true)},
			map[TP]int64{a0: 5}, map[string]map[TP]int64{}},
		{"later pending offset of a partition wins", []Record{txnRec(7, 0, "a", 0, 5), txnRec(7, 0, "a", 0, 6), txnEnd(7, 0, true)},
			map[TP]int64{a0: 6}, map[string]map[TP]int64{}},
		{"producers end apart", []Record{txnRec(7, 0, "a", 0, 5), txnRec(8, 0, "a", 1, 6), txnEnd(8, 0, true)},
			map[TP]int64{a1: 6}, map[string]map[TP]int64{"7/0": {a0: 5}}},
		{"a repeated marker changes nothing", []Record{txnRec(7, 0, "a", 0, 5), txnEnd(7, 0, true), rec("a", 0, 8), txnEnd(7, 0, true)},
			map[TP]int64{a0: 8}, map[string]map[TP]int64{}},
		{"a tombstone leaves pending offsets", []Record{rec("a", 0, 1), txnRec(7, 0, "a", 0, 5), {TP: a0, Delete: true}, txnEnd(7, 0, true)},
			map[TP]int64{a0: 5}, map[string]map[TP]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, s := range stores(t) {
				l, _, err := s.Open("g")
				if err != nil {
					t.Fatal(err)
				}
				if err := l.Append(tc.recs); err != nil {
					t.Fatal(err)
				}
				_ = l.Close()
				_, st, err := s.Open("g") // replayed from the store
				if err != nil {
					t.Fatal(err)
				}
				c, p := offsetsOf(st)
				if !reflect.DeepEqual(c, tc.committed) || !reflect.DeepEqual(p, tc.pending) {
					t.Errorf("%s: committed %v pending %v, want %v %v", name, c, p, tc.committed, tc.pending)
				}
			}
		})
	}
}

func TestPendingOffsetsSurviveCompaction(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.CompactMin = 4
	l, _, err := s.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(20) {
		if err := l.Append([]Record{rec("a", 0, i)}); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			if err := l.Append([]Record{txnRec(7, 1, "a", 1, 100)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = l.Close()
	l, st, err := s.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	c, p := offsetsOf(st)
	if c[TP{"a", 0}] != 19 || !reflect.DeepEqual(p, map[string]map[TP]int64{"7/1": {{"a", 1}: 100}}) {
		t.Fatalf("after compaction: committed %v pending %v", c, p)
	}
	if err := l.Append([]Record{txnEnd(7, 1, true)}); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if _, st, err = s.Open("g"); err != nil {
		t.Fatal(err)
	}
	if c, p = offsetsOf(st); c[TP{"a", 1}] != 100 || len(p) != 0 {
		t.Fatalf("after the marker: committed %v pending %v", c, p)
	}
	if gs, _ := s.Groups(); !reflect.DeepEqual(gs, []string{"g"}) {
		t.Fatalf("groups %v", gs)
	}
}

func TestGroupWithOnlyPendingOffsetsIsListed(t *testing.T) {
	for name, s := range stores(t) {
		l, _, err := s.Open("g")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append([]Record{txnRec(7, 0, "a", 0, 5)}); err != nil {
			t.Fatal(err)
		}
		if gs, _ := s.Groups(); !reflect.DeepEqual(gs, []string{"g"}) {
			t.Errorf("%s: groups %v", name, gs)
		}
	}
}

// TestDestroyKeepsOtherFiles: Destroy removes the group store's own files
// (log, membership) and leaves a file another store keeps in the group's
// directory (the group's configs), which outlives the group; without one
// the directory goes.
// TestRootGone: with the store's root gone from under it (the data dir
// removed, a volume unmounted), a new group's commit fails and the root is
// not made again.
func TestRootGone(t *testing.T) {
	root := filepath.Join(t.TempDir(), "__groups")
	s, err := NewFile(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if l, _, err := s.Open("g"); err == nil {
		if err := l.Append([]Record{rec("t", 0, 5)}); err == nil {
			t.Fatal("a commit stored with the root gone")
		}
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the root after the commit: %v", err)
	}
}

// TestDestroyKeepsAFileWrittenDuringIt: another store's file written into
// a group's directory after Destroy read the directory, and before it
// renamed it aside (another broker changing the group's configs), is kept,
// and the group's own files go.
func TestDestroyKeepsAFileWrittenDuringIt(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l, _, err := s.Open("g")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append([]Record{rec("t", 0, 5)}); err != nil {
		t.Fatal(err)
	}
	configs := filepath.Join(s.Root, DirName("g"), "configs.json")
	testHookBeforeRenameAside = func(string) {
		if err := os.WriteFile(configs, []byte(`{"group":"g","configs":{"a":"1"}}`), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(configs+".lock", nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	defer func() { testHookBeforeRenameAside = nil }()
	if err := l.Destroy(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(configs); err != nil || !strings.Contains(string(b), `"a":"1"`) {
		t.Fatalf("the file written during Destroy: %q (%v)", b, err)
	}
	ents, err := os.ReadDir(filepath.Join(s.Root, DirName("g")))
	if err != nil || len(ents) != 1 {
		t.Fatalf("the group's directory after Destroy: %v (%v), want configs.json alone", ents, err)
	}
	if _, st, err := s.Open("g"); err != nil || len(st.Offsets) != 0 {
		t.Fatalf("the group after Destroy: %+v (%v)", st, err)
	}
	root, err := os.ReadDir(s.Root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range root {
		if strings.Contains(e.Name(), "-deleted-") {
			t.Fatalf("left aside: %s", e.Name())
		}
	}
}

func TestDestroyKeepsOtherFiles(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"with-configs", "alone"} {
		l, _, err := s.Open(group)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Append([]Record{rec("t", 0, 5)}); err != nil {
			t.Fatal(err)
		}
		if err := l.SaveMembers([]byte("m")); err != nil {
			t.Fatal(err)
		}
		_ = l.Close()
	}
	configs := filepath.Join(s.Root, DirName("with-configs"), "configs.json")
	if err := os.WriteFile(configs, []byte(`{"group":"with-configs","configs":{"a":"1"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"with-configs", "alone"} {
		l, st, err := s.Open(group)
		if err != nil || len(st.Offsets) != 1 || string(st.Members) != "m" {
			t.Fatalf("%s before Destroy: %+v (%v)", group, st, err)
		}
		if err := l.Destroy(); err != nil {
			t.Fatalf("%s: %v", group, err)
		}
	}
	if b, err := os.ReadFile(configs); err != nil || !strings.Contains(string(b), `"a":"1"`) {
		t.Fatalf("the other store's file after Destroy: %q (%v)", b, err)
	}
	if _, err := os.Stat(filepath.Join(s.Root, DirName("alone"))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the directory of a group with only its own files is left: %v", err)
	}
	if gs, err := s.Groups(); err != nil || len(gs) != 0 {
		t.Fatalf("groups after Destroy: %q (%v)", gs, err)
	}
	for _, group := range []string{"with-configs", "alone"} {
		if _, st, err := s.Open(group); err != nil || len(st.Offsets) != 0 || st.Members != nil {
			t.Fatalf("%s after Destroy: %+v (%v)", group, st, err)
		}
	}
}

// TestSavedMembersOfALongGroupID: a group whose id is too long to name its
// directory (a hash does) is listed by the header of its log, written when
// members are saved before any commit.
func TestSavedMembersOfALongGroupID(t *testing.T) {
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("long-", 100)
	if !strings.HasPrefix(DirName(long), "h-") {
		t.Fatalf("%q is not named by a hash: %s", long, DirName(long))
	}
	l, _, err := s.Open(long)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SaveMembers([]byte("m")); err != nil {
		t.Fatal(err)
	}
	_ = l.Close()
	if gs, err := s.Groups(); err != nil || !reflect.DeepEqual(gs, []string{long}) {
		t.Fatalf("groups with only saved members: %q (%v)", gs, err)
	}
	l, st, err := s.Open(long)
	if err != nil || string(st.Members) != "m" || len(st.Offsets) != 0 {
		t.Fatalf("reopened: %+v (%v)", st, err)
	}
	if err := l.Destroy(); err != nil {
		t.Fatal(err)
	}
	if gs, _ := s.Groups(); len(gs) != 0 {
		t.Fatalf("after Destroy groups %q", gs)
	}
}

// TestSavedMembers: a saved membership is read back by the next Open,
// replaced whole by the next save, removed by a nil save and by Destroy;
// a group with saved members and no commits is listed; the membership
// lives beside the records, untouched by their compaction.
func TestSavedMembers(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			l, st, err := s.Open("g")
			if err != nil || st.Members != nil {
				t.Fatalf("fresh group: members %q (%v)", st.Members, err)
			}
			if err := l.SaveMembers([]byte("first")); err != nil {
				t.Fatal(err)
			}
			if gs, err := s.Groups(); err != nil || !reflect.DeepEqual(gs, []string{"g"}) {
				t.Fatalf("groups with only saved members: %v (%v)", gs, err)
			}
			if err := l.SaveMembers([]byte("second")); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				if err := l.Append([]Record{rec("t", 0, int64(i))}); err != nil {
					t.Fatal(err)
				}
			}
			_ = l.Close()
			if err := l.SaveMembers([]byte("closed")); err == nil {
				t.Fatal("save on a closed log succeeded")
			}
			l, st, err = s.Open("g")
			if err != nil || string(st.Members) != "second" || st.Offsets[TP{"t", 0}].Offset != 4 {
				t.Fatalf("reopened: members %q, offsets %v (%v)", st.Members, st.Offsets, err)
			}
			if err := l.SaveMembers(nil); err != nil {
				t.Fatal(err)
			}
			_ = l.Close()
			l, st, err = s.Open("g")
			if err != nil || st.Members != nil {
				t.Fatalf("after a nil save: members %q (%v)", st.Members, err)
			}
			if err := l.SaveMembers([]byte("third")); err != nil {
				t.Fatal(err)
			}
			if err := l.Destroy(); err != nil {
				t.Fatal(err)
			}
			if _, st, err = s.Open("g"); err != nil || st.Members != nil || len(st.Offsets) != 0 {
				t.Fatalf("after Destroy: %+v (%v)", st, err)
			}
			if gs, _ := s.Groups(); len(gs) != 0 {
				t.Fatalf("after Destroy groups %v", gs)
			}
		})
	}
}
