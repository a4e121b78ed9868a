//go:build linux

package diskspace

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestOf(t *testing.T) {
	dir := t.TempDir()
	total, available := Of(dir)
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if want := int64(st.Blocks) * st.Bsize; total != want {
		t.Errorf("total %d, statfs says %d", total, want)
	}
	if available <= 0 || available > total {
		t.Errorf("available %d of %d", available, total)
	}
	if total, available := Of(filepath.Join(dir, "missing")); total != -1 || available != -1 {
		t.Errorf("a missing directory: %d, %d; want -1, -1", total, available)
	}
}
