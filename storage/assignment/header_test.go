package assignment

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadHeader(t *testing.T) {
	dir := t.TempDir()
	a := &Assignment{Format: 1, ControllerEpoch: 12, AssignmentVersion: 345, Controller: "kaas-0", ControllerHeartbeat: "x:9094",
		Brokers: []Broker{{ID: 0, Name: "kaas-0", Host: "h", Port: 9092, State: Alive}}, Topics: map[string]Topic{},
		ConsumerGroups: ConsumerGroups{Slots: []string{"kaas-0"}}}
	if err := WriteFile(dir, a); err != nil {
		t.Fatal(err)
	}
	e, v, err := ReadHeader(Path(dir))
	if err != nil || e != 12 || v != 345 {
		t.Fatalf("header: %d %d %v", e, v, err)
	}
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte("garbage"), 0o644)
	if _, _, err := ReadHeader(bad); err == nil {
		t.Fatal("garbage accepted")
	}
	if _, _, err := ReadHeader(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing file accepted")
	}
}
