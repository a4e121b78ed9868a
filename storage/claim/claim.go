// Package claim fences a coordinator's files on the shared volume: a group's
// offset log, a transactional id's state. Time-based fencing assumes a
// broker does not stall between the fence check that admitted a write and
// the write itself; one that does still writes after its successor loaded
// the state. So the successor records its claim before it reads anything,
// every writer reads the claim after its fsync, before the write counts as
// done, and files are replaced only under the claim's lock and while no
// later claim exists.
//
// A claim is the position of the assignment file (controller epoch, then
// version) from which a broker coordinates the state: a later coordinator
// loads it from a later file.
package claim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kaas-project/kaas/storage/assignment"
	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/filelock"
)

// ErrSuperseded: a coordinator with a later claim has loaded the state;
// nothing the holder of the earlier claim wrote since counts, and it writes
// nothing more.
var ErrSuperseded = errors.New("a newer coordinator claimed the files")

// lockWait bounds the wait for a claim's lock, as the leader claim's: a
// holder on a node lost with its NFS lease is gone.
const lockWait = 5 * time.Second

// File is one claim: Dir/Name, locked through Dir/Name.lock.
type File struct{ Dir, Name string }

// Format names a claim in messages.
func Format(p assignment.Position) string { return fmt.Sprintf("%d.%d", p.Epoch, p.Version) }

func encode(p assignment.Position) []byte { return fmt.Appendf(nil, "%d %d\n", p.Epoch, p.Version) }

// Read returns the recorded claim; ok is false when there is none.
func (f File) Read() (p assignment.Position, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(f.Dir, f.Name))
	if errors.Is(err, os.ErrNotExist) {
		return assignment.Position{}, false, nil
	}
	if err != nil {
		return assignment.Position{}, false, fmt.Errorf("read claim: %w", err)
	}
	e, v, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	epoch, err1 := strconv.ParseInt(e, 10, 64)
	version, err2 := strconv.ParseInt(v, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return assignment.Position{}, false, fmt.Errorf("claim %s unreadable: %q", filepath.Join(f.Dir, f.Name), b)
	}
	return assignment.Position{Epoch: epoch, Version: version}, true, nil
}

// Held fails with ErrSuperseded unless mine is the recorded claim: a later
// claim is there, or none (the files were removed by a later coordinator,
// which removes the claim with them), or one that cannot be read (written
// whole by rename, a damaged claim was tampered with, and taking it for a
// later one keeps a coordinator from acknowledging on it).
func (f File) Held(mine assignment.Position) error {
	c, ok, err := f.Read()
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", ErrSuperseded, err)
	case !ok:
		return fmt.Errorf("%w: the claim of %s is gone", ErrSuperseded, Format(mine))
	case c != mine:
		return fmt.Errorf("%w: %s, this coordinator's %s", ErrSuperseded, Format(c), Format(mine))
	}
	return nil
}

// Lock takes the claim's lock, creating Dir's lock file.
func (f File) Lock() (unlock func(), err error) {
	unlock, _, err = filelock.Acquire(filepath.Join(f.Dir, f.Name+".lock"), 0o644, lockWait)
	if unlock == nil {
		return nil, fmt.Errorf("claim lock: %w", err)
	}
	return unlock, nil
}

// Take records mine unless a later claim is there (ErrSuperseded); the
// caller holds the lock. taken is false when mine was already recorded.
// The claim is not fsynced, as the leader claim is not: it only matters
// while its holder and a coordinator it fences both run.
func (f File) Take(mine assignment.Position) (taken bool, err error) {
	c, ok, err := f.Read()
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrSuperseded, err)
	}
	if ok && mine.Less(c) {
		return false, fmt.Errorf("%w: %s, this coordinator's %s", ErrSuperseded, Format(c), Format(mine))
	}
	if ok && c == mine {
		return false, nil
	}
	if _, err := atomicfile.WriteWith(f.Dir, f.Name, encode(mine), atomicfile.Options{Mode: 0o644, Volatile: true}); err != nil {
		return false, fmt.Errorf("write claim: %w", err)
	}
	return true, nil
}
