package sharestate

import (
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
	want := Snapshot{Start: 42, States: []uint8{1, 0, 3, 2}, Counts: []int16{1, 2, 5, 1}}
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
