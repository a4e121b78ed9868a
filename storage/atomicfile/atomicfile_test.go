package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, "f", []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, "f", []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || string(b) != "two" {
		t.Fatalf("content %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "f"+TmpSuffix)); !os.IsNotExist(err) {
		t.Fatal("temporary file left behind")
	}
	if err := Write(filepath.Join(dir, "missing"), "f", nil, 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}
