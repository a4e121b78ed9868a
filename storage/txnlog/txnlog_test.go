package txnlog

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFileSaveLoadCompactsAndCutsTornTail(t *testing.T) {
	dir := t.TempDir()
	s, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load("a"); ok || err != nil {
		t.Fatalf("empty store: ok=%v err=%v", ok, err)
	}
	st := State{ID: "a", ProducerID: 7, Epoch: 1, TimeoutMs: 60000, Status: Ongoing,
		Partitions: []TP{{Topic: "t", Partition: 2}}, Groups: []string{"g"}, Marker: &Marker{ProducerID: 7, Epoch: 3, Bumped: true}}
	for i := 0; i < 3; i++ {
		st.Epoch = int16(i)
		if err := s.Save(st); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(s.Root, s.name("a"))
	// A torn append: half a frame after the valid records.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte{0, 0, 0, 40, 1, 2}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	s2, _ := NewFile(dir)
	got, ok, err := s2.Load("a")
	if err != nil || !ok || !reflect.DeepEqual(got, st) {
		t.Fatalf("Load = %+v %v %v, want %+v", got, ok, err, st)
	}
	// Compacted to one record, the torn tail gone: a later Save is read back.
	if _, n, torn, _ := readLog(path); n != 1 || torn {
		t.Fatalf("after load: %d records, torn=%v; want 1, false", n, torn)
	}
	st.Status = CompleteCommit
	if err := s2.Save(st); err != nil {
		t.Fatal(err)
	}
	got, _, _ = reopen(t, dir).Load("a")
	if got.Status != CompleteCommit {
		t.Fatalf("status after save = %v", got.Status)
	}
	ids, err := s2.IDs()
	if err != nil || !reflect.DeepEqual(ids, []string{"a"}) {
		t.Fatalf("IDs = %v %v", ids, err)
	}
}

func TestFileCompactsLongLogOnSave(t *testing.T) {
	s, _ := NewFile(t.TempDir())
	st := State{ID: "x"}
	for i := 0; i < compactAfter+5; i++ {
		st.UpdateMs = int64(i)
		if err := s.Save(st); err != nil {
			t.Fatal(err)
		}
	}
	last, n, _, err := readLog(filepath.Join(s.Root, s.name("x")))
	if err != nil || n > compactAfter || last.UpdateMs != int64(compactAfter+4) {
		t.Fatalf("log holds %d records, last %+v, err %v", n, last, err)
	}
}

func TestFileTornFirstRecordIsRemoved(t *testing.T) {
	s, _ := NewFile(t.TempDir())
	path := filepath.Join(s.Root, s.name("y"))
	if err := os.WriteFile(path, []byte{0, 0, 0, 9, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Load("y"); ok || err != nil {
		t.Fatalf("Load torn = %v %v", ok, err)
	}
	if err := s.Save(State{ID: "y", Epoch: 3}); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := s.Load("y"); !ok || got.Epoch != 3 {
		t.Fatalf("Load = %+v %v", got, ok)
	}
}

// reopen reopens the file store at dir (a fresh process's view).
func reopen(t *testing.T, dir string) *File {
	t.Helper()
	s, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestFileIDsOfLongAndShortIDs(t *testing.T) {
	s, _ := NewFile(t.TempDir())
	long := string(make([]byte, 300))
	for _, id := range []string{"b", "a/x", long} {
		if err := s.Save(State{ID: id}); err != nil {
			t.Fatal(err)
		}
	}
	ids, err := s.IDs()
	if err != nil || !reflect.DeepEqual(ids, []string{long, "a/x", "b"}) {
		t.Fatalf("IDs = %q %v", ids, err)
	}
}

func TestRemove(t *testing.T) {
	file, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Store{"file": file, "memory": NewMemory()} {
		t.Run(name, func(t *testing.T) {
			if err := s.Save(State{ID: "a", ProducerID: 7, Status: CompleteCommit}); err != nil {
				t.Fatal(err)
			}
			if err := s.Remove("a"); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := s.Load("a"); ok || err != nil {
				t.Fatalf("after Remove: ok=%v err=%v", ok, err)
			}
			if ids, err := s.IDs(); len(ids) != 0 || err != nil {
				t.Fatalf("ids %v err %v", ids, err)
			}
			if err := s.Remove("never"); err != nil {
				t.Fatalf("removing an id with no state: %v", err)
			}
		})
	}
}
