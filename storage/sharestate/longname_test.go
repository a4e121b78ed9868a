package sharestate

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/groupstore"
)

// longest is the longest topic name Kafka allows.
var longest = strings.Repeat("L", 249)

func TestStem(t *testing.T) {
	fits := strings.Repeat("a", maxPlainStem)
	cases := []struct {
		topic  string
		hashed bool
	}{
		{"t", false},
		{"my.topic_1-x", false},
		{fits, false},
		{fits + "a", true},
		{longest, true},
		{strings.Repeat("M", 249), true},
	}
	seen := map[string]string{}
	for _, c := range cases {
		st := stem(c.topic)
		if !c.hashed {
			if st != c.topic {
				t.Errorf("stem of a %d-byte name: %q, want the name", len(c.topic), st)
			}
			continue
		}
		if len(st) != 33 || !strings.HasPrefix(st, "~") || strings.Trim(st[1:], "0123456789abcdef") != "" {
			t.Errorf("stem of a %d-byte name: %q, want ~ and 32 hex digits", len(c.topic), st)
		}
		if other, ok := seen[st]; ok {
			t.Errorf("%d-byte names %.8q… and %.8q… share stem %s", len(c.topic), c.topic, other, st)
		}
		seen[st] = c.topic
		if stem(c.topic) != st {
			t.Errorf("stem of %.8q… changed between calls", c.topic)
		}
	}
}

// The longest plain stem and the highest partition make every file the
// store writes, and atomicfile's longer temporary name, on a real file
// system (which refuses names over NAME_MAX).
func TestLongestPlainStemFits(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	topic := strings.Repeat("a", maxPlainStem)
	const p = int32(2147483647)
	at := assignment.Position{Epoch: 1, Version: 1}
	unlock, err := s.Claim("g", topic, p, at)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := s.SaveAt("g", topic, p, at, 0, Snapshot{Start: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("g", topic, p, &Snapshot{Start: 2}, 5); err != nil {
		t.Fatal(err)
	}
	dir, base := s.files("g", topic, p)
	if base != topic+"-2147483647" {
		t.Fatalf("base %q, want the topic's own name", base)
	}
	if _, err := atomicfile.WriteWith(dir, base+StateSuffix, Encode(Snapshot{Start: 3}), atomicfile.Options{Mode: 0o644, UniqueTmp: true}); err != nil {
		t.Fatalf("a write with a unique temporary name: %v", err)
	}
	if snap, ok, err := s.Load("g", topic, p); !ok || err != nil || snap.Start != 3 {
		t.Fatalf("load: %+v %v %v", snap, ok, err)
	}
}

// groupFiles lists the files in group g's directory.
func groupFiles(t *testing.T, s *Store) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(s.dir, groupstore.DirName("g")))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// A 249-character topic's share-partition goes through every file the
// store keeps (snapshot, mark, claim and its lock), is listed under its
// full name, and DropTopics judges it by that name; a short name's files
// keep their names.
func TestLongTopicName(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Claims = true
	at := assignment.Position{Epoch: 1, Version: 1}
	for _, topic := range []string{longest, "t"} {
		unlock, err := s.Claim("g", topic, 3, at)
		if err != nil {
			t.Fatalf("claim of a %d-character topic: %v", len(topic), err)
		}
		unlock()
		want := Snapshot{TopicID: [16]byte{byte(len(topic))}, Start: 7, States: []uint8{1, 2}, Counts: []int16{1, 1}}
		if err := s.SaveAt("g", topic, 3, at, 0, want); err != nil {
			t.Fatalf("save of a %d-character topic: %v", len(topic), err)
		}
		if got, ok, err := s.Load("g", topic, 3); !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("load of a %d-character topic: %+v %v %v, want %+v", len(topic), got, ok, err, want)
		}
		if err := s.SaveMark("g", topic, 3, 9); err != nil {
			t.Fatal(err)
		}
		if m, err := s.LoadMark("g", topic, 3); m != 9 || err != nil {
			t.Fatalf("mark of a %d-character topic: %d %v", len(topic), m, err)
		}
		// The claim that fences the leader: another claim refuses its save.
		unlock, err = s.Claim("g", topic, 3, assignment.Position{Epoch: 2, Version: 1})
		if err != nil {
			t.Fatal(err)
		}
		unlock()
		if err := s.SaveAt("g", topic, 3, at, 9, want); !errors.Is(err, ErrSuperseded) {
			t.Fatalf("save of a %d-character topic under a claim taken since: %v, want ErrSuperseded", len(topic), err)
		}
	}
	st := stem(longest)
	want := []string{st + "-3.claim", st + "-3.claim.lock", st + "-3.mark", st + "-3.state", st + "-3.topic",
		"t-3.claim", "t-3.claim.lock", "t-3.mark", "t-3.state"}
	slices.Sort(want)
	if got := groupFiles(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(s.dir, groupstore.DirName("g"), st+"-3.topic"))
	if err != nil || string(b) != longest {
		t.Fatalf("topic record %q, %v; want the full name", b, err)
	}
	parts, err := s.Partitions("g")
	if err != nil || !reflect.DeepEqual(parts, map[string][]int32{longest: {3}, "t": {3}}) {
		t.Fatalf("partitions %v, %v", parts, err)
	}

	var asked []string
	n, err := s.DropTopics(func(topic string, id [16]byte) bool {
		asked = append(asked, topic)
		return false
	})
	if err != nil || n != 0 {
		t.Fatalf("dropped %d, %v; want none", n, err)
	}
	slices.Sort(asked)
	if !reflect.DeepEqual(asked, []string{longest, "t"}) {
		t.Fatalf("gone asked of %q, want the full names", asked)
	}
	if got := groupFiles(t, s); !reflect.DeepEqual(got, want) {
		t.Fatalf("files after a DropTopics that drops none: %q, want %q", got, want)
	}

	n, err = s.DropTopics(func(topic string, id [16]byte) bool { return topic == longest && id == [16]byte{249} })
	if err != nil || n != 1 {
		t.Fatalf("dropped %d, %v; want 1", n, err)
	}
	if got, want := groupFiles(t, s), []string{"t-3.claim", "t-3.claim.lock", "t-3.mark", "t-3.state"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("files after the long topic's drop: %q, want %q", got, want)
	}
}

// Delete removes a long topic's record with its last file; an admin
// removal (Set nil) keeps its mark, and so the record, until DropTopics.
func TestLongTopicRecordRemoval(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save("g", longest, 0, Snapshot{Start: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("g", longest, 0); err != nil {
		t.Fatal(err)
	}
	if got := groupFiles(t, s); len(got) != 0 {
		t.Fatalf("files after Delete: %q, want none", got)
	}

	if err := s.Save("g", longest, 0, Snapshot{Start: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("g", longest, 0, nil, 5); err != nil {
		t.Fatal(err)
	}
	st := stem(longest)
	if got, want := groupFiles(t, s), []string{st + "-0.mark", st + "-0.topic"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("files after an admin removal: %q, want %q", got, want)
	}
	if parts, err := s.Partitions("g"); err != nil || len(parts) != 0 {
		t.Fatalf("partitions after an admin removal: %v, %v; want none", parts, err)
	}
	n, err := s.DropTopics(func(topic string, _ [16]byte) bool { return topic == longest })
	if err != nil || n != 1 {
		t.Fatalf("dropped %d, %v; want 1", n, err)
	}
	if got := groupFiles(t, s); len(got) != 0 {
		t.Fatalf("files after DropTopics: %q, want none", got)
	}

	// A record left alone (a removal cut short after the other files) is
	// the topic's too.
	if err := s.Save("g", longest, 0, Snapshot{Start: 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(s.dir, groupstore.DirName("g"), st+"-0"+StateSuffix)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DropTopics(func(string, [16]byte) bool { return false }); err != nil || n != 0 {
		t.Fatalf("dropped %d, %v of a live topic; want none", n, err)
	}
	if got := groupFiles(t, s); !reflect.DeepEqual(got, []string{st + "-0.topic"}) {
		t.Fatalf("files: %q, want the record", got)
	}
	if n, err := s.DropTopics(func(topic string, _ [16]byte) bool { return topic == longest }); err != nil || n != 1 {
		t.Fatalf("dropped %d, %v; want 1", n, err)
	}
	if got := groupFiles(t, s); len(got) != 0 {
		t.Fatalf("files after DropTopics: %q, want none", got)
	}
}

// A record that is missing or does not name a topic of its stem makes
// the share-partition's topic unknown: listed as an error, never dropped;
// the next save writes it again.
func TestLongTopicBadRecord(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"missing": os.Remove,
		"damaged": func(path string) error { return os.WriteFile(path, []byte(longest[:200]), 0o644) },
		"empty":   func(path string) error { return os.WriteFile(path, nil, 0o644) },
	} {
		t.Run(name, func(t *testing.T) {
			s, err := New(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			want := Snapshot{TopicID: [16]byte{1}, Start: 4, States: []uint8{}, Counts: []int16{}}
			if err := s.Save("g", longest, 2, want); err != nil {
				t.Fatal(err)
			}
			if err := s.Save("g", "t", 0, want); err != nil {
				t.Fatal(err)
			}
			dir, base := s.files("g", longest, 2)
			if err := damage(filepath.Join(dir, base+topicSuffix)); err != nil {
				t.Fatal(err)
			}
			parts, err := s.Partitions("g")
			if err == nil || !reflect.DeepEqual(parts, map[string][]int32{"t": {0}}) {
				t.Fatalf("partitions %v, %v; want t's and an error", parts, err)
			}
			n, err := s.DropTopics(func(string, [16]byte) bool { return true })
			if err == nil || n != 1 {
				t.Fatalf("dropped %d, %v; want t's and an error", n, err)
			}
			if got, ok, err := s.Load("g", longest, 2); !ok || err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("snapshot after DropTopics: %+v %v %v, want it kept", got, ok, err)
			}
			if err := s.Save("g", longest, 2, want); err != nil {
				t.Fatal(err)
			}
			parts, err = s.Partitions("g")
			if err != nil || !reflect.DeepEqual(parts, map[string][]int32{longest: {2}}) {
				t.Fatalf("partitions after a save: %v, %v", parts, err)
			}
		})
	}
}
