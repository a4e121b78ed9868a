package sharestate

import (
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load("g", "t", 0); ok || err != nil {
		t.Fatalf("load before save: ok %v err %v", ok, err)
	}
	want := Snapshot{Start: 42, States: []uint8{1, 0, 3, 2, 4}, Counts: []int16{1, 2, 5, 1, 3}}
	if err := s.Save("g", "t", 0, want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.Load("g", "t", 0)
	if !ok || err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("load: %+v ok %v err %v, want %+v", got, ok, err, want)
	}
	if _, ok, _ := s.Load("g", "t", 1); ok {
		t.Fatal("another partition has the snapshot")
	}
	if _, ok, _ := s.Load("other", "t", 0); ok {
		t.Fatal("another group has the snapshot")
	}
	if err := s.Save("g", "my-topic", 12, want); err != nil {
		t.Fatal(err)
	}
	parts, err := s.Partitions("g")
	if err != nil || !reflect.DeepEqual(parts, map[string][]int32{"t": {0}, "my-topic": {12}}) {
		t.Fatalf("partitions: %v %v", parts, err)
	}
	if parts, err := s.Partitions("none"); err != nil || len(parts) != 0 {
		t.Fatalf("partitions of a group without state: %v %v", parts, err)
	}
}

func TestDecodeRefusesDamage(t *testing.T) {
	good := Encode(Snapshot{Start: 7, States: []uint8{0, 1}, Counts: []int16{1, 1}})
	cases := map[string][]byte{
		"empty":      {},
		"truncated":  good[:len(good)-1],
		"flipped":    append(append([]byte{}, good[:10]...), append([]byte{good[10] ^ 1}, good[11:]...)...),
		"extra byte": append(append([]byte{}, good...), 0),
		"state 5":    Encode(Snapshot{Start: 7, States: []uint8{0, 5}, Counts: []int16{1, 1}}),
	}
	for name, b := range cases {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, err := Decode(good); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptFileIsAnError(t *testing.T) {
	data := t.TempDir()
	s, err := New(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save("g", "t", 3, Snapshot{Start: 1}); err != nil {
		t.Fatal(err)
	}
	dir, name := s.path("g", "t", 3)
	if err := os.WriteFile(filepath.Join(dir, name), []byte("garbage!!"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load("g", "t", 3); ok || err == nil {
		t.Fatalf("corrupt file: ok %v err %v", ok, err)
	}
}

func TestDeleteAndMarks(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("g", "t", 0); err != nil {
		t.Fatalf("delete of nothing: %v", err)
	}
	if m, err := s.LoadMark("g", "t", 0); m != 0 || err != nil {
		t.Fatalf("mark before any: %d %v", m, err)
	}
	if err := s.Save("g", "t", 0, Snapshot{Start: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMark("g", "t", 0, 77); err != nil {
		t.Fatal(err)
	}
	if m, err := s.LoadMark("g", "t", 0); m != 77 || err != nil {
		t.Fatalf("mark: %d %v", m, err)
	}
	parts, err := s.Partitions("g")
	if err != nil || !reflect.DeepEqual(parts, map[string][]int32{"t": {0}}) {
		t.Fatalf("partitions with a mark: %v %v", parts, err)
	}
	if err := s.Delete("g", "t", 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load("g", "t", 0); ok || err != nil {
		t.Fatalf("load after delete: ok %v err %v", ok, err)
	}
	if parts, _ := s.Partitions("g"); len(parts) != 0 {
		t.Fatalf("partitions after delete: %v", parts)
	}
}

func TestEncodeKeepsTopicID(t *testing.T) {
	want := Snapshot{TopicID: [16]byte{7, 1, 2, 3, 15: 9}, Start: 3, States: []uint8{2, 0}, Counts: []int16{4, 1}}
	got, err := Decode(Encode(want))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode: %+v %v, want %+v", got, err, want)
	}
	if !got.Of(want.TopicID) || got.Of([16]byte{8}) {
		t.Fatalf("Of: a snapshot belongs to its own topic id only")
	}
}

// encodeNoID writes format version 1, as a store without topic ids did.
func encodeNoID(snap Snapshot) []byte {
	p := []byte{versionNoID}
	p = binary.BigEndian.AppendUint64(p, uint64(snap.Start))
	p = binary.BigEndian.AppendUint32(p, uint32(len(snap.States)))
	for i, st := range snap.States {
		p = append(p, st)
		p = binary.BigEndian.AppendUint16(p, uint16(snap.Counts[i]))
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(p)))
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(p, castagnoli))
	return append(out, p...)
}

func TestDecodeWithoutTopicID(t *testing.T) {
	want := Snapshot{Start: 11, States: []uint8{1, 3}, Counts: []int16{2, 1}}
	got, err := Decode(encodeNoID(want))
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode: %+v %v, want %+v", got, err, want)
	}
	if !got.Of([16]byte{5}) {
		t.Fatal("a snapshot without a topic id is taken for the current topic's")
	}
	// Saved again, it carries the id.
	got.TopicID = [16]byte{5}
	again, err := Decode(Encode(got))
	if err != nil || again.TopicID != got.TopicID {
		t.Fatalf("re-encoded: %+v %v", again, err)
	}
}

func TestDropTopics(t *testing.T) {
	s, err := New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	oldID, newID := [16]byte{1}, [16]byte{2}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Save("g", "t", 0, Snapshot{TopicID: oldID, Start: 5}))
	must(s.SaveMark("g", "t", 0, 77))
	must(s.Save("g", "t", 1, Snapshot{TopicID: newID, Start: 6}))
	must(s.Save("h", "t", 0, Snapshot{TopicID: oldID, Start: 5}))
	must(s.Save("h", "keep", 0, Snapshot{TopicID: oldID, Start: 5}))
	must(s.SaveMark("h", "t", 3, 9)) // a mark without a snapshot
	n, err := s.DropTopics(func(topic string, id [16]byte) bool {
		return topic == "t" && id != newID
	})
	if err != nil || n != 3 {
		t.Fatalf("dropped %d, %v; want 3", n, err)
	}
	if _, ok, _ := s.Load("g", "t", 0); ok {
		t.Fatal("the old topic's snapshot is left")
	}
	if m, _ := s.LoadMark("g", "t", 0); m != 0 {
		t.Fatal("the old topic's mark is left")
	}
	if m, _ := s.LoadMark("h", "t", 3); m != 0 {
		t.Fatal("a mark without a snapshot is left")
	}
	for _, k := range []struct {
		g, topic string
		p        int32
	}{{"g", "t", 1}, {"h", "keep", 0}} {
		if _, ok, _ := s.Load(k.g, k.topic, k.p); !ok {
			t.Fatalf("%v: removed", k)
		}
	}
}
