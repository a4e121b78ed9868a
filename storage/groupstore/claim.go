package groupstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/claim"
)

// The coordinator claim (storage/claim) fences a group's files: the
// coordinator that loads the group records its claim before it reads
// anything and rewrites the log it loaded (a stalled earlier coordinator's
// descriptor then names a file nobody reads); every append reads the claim
// after its fsync, and compaction, membership saves and deletion replace
// files only under the claim's lock and while no later claim exists.

// ErrSuperseded: a coordinator with a later claim has loaded the group (or
// had written it since this log was opened); nothing this log wrote since
// then counts, and it writes nothing more.
var ErrSuperseded = claim.ErrSuperseded

// claimFile is the group's claim: claim, locked through claim.lock.
func (l *fileLog) claimFile() claim.File { return claim.File{Dir: l.dir, Name: "claim"} }

// superseded fails with ErrSuperseded unless the group's claim is the log's.
func (l *fileLog) superseded() error { return l.claimFile().Held(l.claim) }

// fenced runs op under the claim lock once the claim is this log's: it
// fails with ErrSuperseded when a later claim holds the group, or, for a
// log opened before the group's directory existed, when another coordinator
// wrote the group since (the state this log loaded is stale). Without
// claims it runs op.
func (l *fileLog) fenced(op func() error) error {
	if !l.claims {
		return op()
	}
	if errors.Is(l.broken, ErrSuperseded) {
		return l.broken
	}
	if err := atomicfile.Mkdir(l.dir); err != nil {
		return fmt.Errorf("group store: %w", err)
	}
	unlock, err := l.claimFile().Lock()
	if err != nil {
		return fmt.Errorf("group store: %w", err)
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
	if l.lazy {
		for _, name := range []string{LogName, membersName} {
			if _, err := os.Stat(filepath.Join(l.dir, name)); err == nil {
				l.broken = fmt.Errorf("%w: %s written since this coordinator loaded the group", ErrSuperseded, name)
				return l.broken
			}
		}
	}
	if _, err := l.claimFile().Take(l.claim); err != nil {
		return fmt.Errorf("group store: %w", err)
	}
	l.claimed, l.lazy = true, false
	return nil
}
