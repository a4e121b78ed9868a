package disklog

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kaas-project/kaas/storage"
)

// TestUnreadableMetadataFailsOpen: a metadata file that cannot be read (a
// directory in its place reads as EISDIR, as an NFS read may fail with EIO
// or ESTALE) fails the open and is left as it is, where damaged content
// would be rebuilt. Rebuilding would lose what the file holds: the start
// offset (deleted records would come back), the leader epochs, or a higher
// leader's claim. Once the file reads again, the open finds it all intact.
func TestUnreadableMetadataFailsOpen(t *testing.T) {
	root := t.TempDir()
	l := openLogT(t, testOpener(t, root), storage.LogConfig{Claim: true, ClaimEpoch: 1})
	if err := l.AssignEpoch(1, 0); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 4, 2, 10, 0)
	if err := l.AssignEpoch(2, l.NextOffset()); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 2, 2, 10, 100)
	if err := l.SetStartOffset(6); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	wantEpochs, wantNext := l.Epochs(), l.NextOffset()
	if len(wantEpochs) != 2 {
		t.Fatalf("epochs %v, want two", wantEpochs)
	}
	dir := l.Dir()
	cfg := storage.LogConfig{Claim: true, ClaimEpoch: 2}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{epochFile, startFile, claimFile} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			content, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			aside := path + ".test-aside"
			if err := os.Rename(path, aside); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := testOpener(t, root).Open(testID, cfg); err == nil {
				t.Fatalf("open with %s unreadable succeeded", name)
			}
			if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
				t.Fatalf("%s was replaced by the failed open (%v)", name, err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(aside, path); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err != nil || string(got) != string(content) {
				t.Fatalf("%s changed: %q (%v), want %q", name, got, err, content)
			}

			r := openLogT(t, testOpener(t, root), cfg)
			defer r.Close()
			if r.StartOffset() != 6 || r.NextOffset() != wantNext {
				t.Fatalf("reopened log spans [%d, %d), want [6, %d)", r.StartOffset(), r.NextOffset(), wantNext)
			}
			if got := r.Epochs(); !slices.Equal(got, wantEpochs) {
				t.Fatalf("reopened epochs %v, want %v", got, wantEpochs)
			}
		})
	}
}
