package groupstore

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

// The coordinator claim closes, for a group's files, the gap the leader
// claim closes for a partition's: a coordinator stalled past dead-after
// between the fence check that admitted a write and the write itself still
// writes after its successor loaded the group. The successor records its
// claim before it reads anything, and rewrites the log it loaded (the
// stalled one's descriptor then names a file nobody reads); every writer
// reads the claim after its fsync, before the write counts as done, and
// replaces files (compaction, membership, deletion) only under the claim's
// lock and while no newer claim exists.

// A claim is the position of the assignment file (controller epoch, then
// version) from which a broker coordinates a group: a later coordinator of
// the group loads it from a later file. formatClaim names one in messages.
func formatClaim(p assignment.Position) string { return fmt.Sprintf("%d.%d", p.Epoch, p.Version) }

// encodeClaim is the claim file's content.
func encodeClaim(p assignment.Position) []byte {
	return fmt.Appendf(nil, "%d %d\n", p.Epoch, p.Version)
}

// ErrSuperseded: a coordinator with a later claim has loaded the group (or
// had written it since this log was opened); nothing this log wrote since
// then counts, and it writes nothing more.
var ErrSuperseded = errors.New("group store: a newer coordinator claimed the group")

const (
	claimName = "claim"
	claimLock = "claim.lock"
	// claimLockWait bounds the wait for the claim lock, as the leader
	// claim's: a holder on a node lost with its NFS lease is gone.
	claimLockWait = 5 * time.Second
)

func readClaim(dir string) (assignment.Position, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, claimName))
	if errors.Is(err, os.ErrNotExist) {
		return assignment.Position{}, false, nil
	}
	if err != nil {
		return assignment.Position{}, false, fmt.Errorf("group store: read claim: %w", err)
	}
	e, v, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	epoch, err1 := strconv.ParseInt(e, 10, 64)
	version, err2 := strconv.ParseInt(v, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		// Written whole by rename: damaged means tampered with. Taking it
		// for a newer claim keeps a coordinator from acknowledging on it.
		return assignment.Position{}, false, fmt.Errorf("group store: claim in %s unreadable: %q", dir, b)
	}
	return assignment.Position{Epoch: epoch, Version: version}, true, nil
}

// superseded reports whether the group's claim is later than the log's.
func (l *fileLog) superseded() error {
	c, ok, err := readClaim(l.dir)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", ErrSuperseded, err)
	case ok && l.claim.Less(c):
		return fmt.Errorf("%w: %s, this coordinator's %s", ErrSuperseded, formatClaim(c), formatClaim(l.claim))
	}
	return nil
}

// fenced runs op under the claim lock once the claim is this log's: it
// fails with ErrSuperseded when a later claim holds the group, or, for a
// log opened before the group's directory existed, when another coordinator
// wrote the group since (the state this log loaded is stale). Without
// claims it runs op.
func (l *fileLog) fenced(op func() error) error {
	if !l.claims {
		return op()
	}
	if l.broken != nil && errors.Is(l.broken, ErrSuperseded) {
		return l.broken
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return fmt.Errorf("group store: %w", err)
	}
	unlock, _, err := filelock.Acquire(filepath.Join(l.dir, claimLock), 0o644, claimLockWait)
	if unlock == nil {
		return fmt.Errorf("group store: claim lock: %w", err)
	}
	defer unlock()
	if !l.claimed {
		if err := l.takeClaim(); err != nil {
			return err
		}
	} else if err := l.superseded(); err != nil {
		l.broken = err
		return err
	}
	return op()
}

// takeClaim records the log's claim (the caller holds the lock). A log
// opened on no files claims at its first write: if files appeared since,
// another coordinator wrote them and this log's state is stale.
func (l *fileLog) takeClaim() error {
	c, ok, err := readClaim(l.dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSuperseded, err)
	}
	if ok && l.claim.Less(c) {
		return fmt.Errorf("%w: %s, this coordinator's %s", ErrSuperseded, formatClaim(c), formatClaim(l.claim))
	}
	if l.lazy {
		for _, name := range []string{logName, membersName} {
			if _, err := os.Stat(filepath.Join(l.dir, name)); err == nil {
				l.broken = fmt.Errorf("%w: %s written since this coordinator loaded the group", ErrSuperseded, name)
				return l.broken
			}
		}
	}
	if !ok || c != l.claim {
		// Not fsynced, as the leader claim is not: it only matters while
		// this coordinator and one it fences both run.
		if _, err := atomicfile.WriteWith(l.dir, claimName, encodeClaim(l.claim), atomicfile.Options{Mode: 0o644, Volatile: true}); err != nil {
			return fmt.Errorf("group store: write claim: %w", err)
		}
	}
	l.claimed, l.lazy = true, false
	return nil
}
