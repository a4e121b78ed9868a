// Package atomicfile replaces small files crash-safely: write a temporary
// file in the same directory, fsync it, rename it over the target, fsync the
// directory. A reader sees the old or the new content, never a mix, and
// after a crash the same holds. Every file kaas replaces whole (topic
// metadata, partition manifests, assignment.json, compacted group logs) is
// written here, so that order lives in one place; so is the locked
// read-change-write of files that every broker may change (Update).
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kaas-project/kaas/storage/filelock"
)

// TmpSuffix ends the temporary file's name (readers ignore such files).
const TmpSuffix = ".tmp"

// Write replaces dir/name with data.
func Write(dir, name string, data []byte, mode os.FileMode) error {
	_, err := WriteWith(dir, name, data, Options{Mode: mode})
	return err
}

// Options are the variants of a write.
type Options struct {
	// Mode is the new file's permission bits.
	Mode os.FileMode
	// UniqueTmp names the temporary file "."+name+".tmp-<random>" instead
	// of name+TmpSuffix, so that writes of the same file may overlap (the
	// next one starts while the last one's directory fsync runs) and a
	// reader watching the directory can tell the target apart by name.
	UniqueTmp bool
	// Permit, when not nil, is waited for once the temporary file is
	// durable: the rename happens only if it delivers nil; otherwise the
	// temporary file is removed and that error returned. The caller can
	// overlap a last check (the controller re-verifying its Lease) with
	// the fsync instead of adding it.
	Permit <-chan error
	// Renamed, when not nil, is called as soon as the rename is done,
	// before the directory's fsync: from then on every reader sees the new
	// file. A failure after it means the new file is in place but its
	// rename may not survive a crash.
	Renamed func()
	// Volatile skips both fsyncs: every reader sees the whole new file from
	// the rename on, but a crash may lose it (a claim that matters only
	// while its writer and the writer it fences both run).
	Volatile bool
}

// Timing is where a write's time went.
type Timing struct {
	Visible time.Duration // until the rename: readers see the new file from here
	Create  time.Duration // the temporary file's creation
	TmpSync time.Duration // the temporary file's fsync
	Permit  time.Duration // waiting for the permit once the temporary file was durable
	Rename  time.Duration // the rename
	DirSync time.Duration // the directory's fsync after the rename
}

// WriteWith replaces dir/name with data: create the temporary file, write,
// fsync, close, (wait for the permit), rename, (call Renamed), fsync the
// directory. The temporary file is removed when the write fails before the
// rename.
func WriteWith(dir, name string, data []byte, opt Options) (Timing, error) {
	var tm Timing
	start := time.Now()
	step := start
	var (
		f   *os.File
		err error
	)
	if opt.UniqueTmp {
		f, err = os.CreateTemp(dir, "."+name+TmpSuffix+"-*")
	} else {
		f, err = os.OpenFile(filepath.Join(dir, name+TmpSuffix), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, opt.Mode)
	}
	tm.Create = time.Since(step)
	if err != nil {
		return tm, fmt.Errorf("write %s: %w", name, err)
	}
	tmp := f.Name()
	fail := func(what string, err error) (Timing, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return tm, fmt.Errorf("write %s: %s %s: %w", name, what, tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		return fail("write", err)
	}
	if opt.UniqueTmp {
		// CreateTemp makes the file 0600.
		if err := f.Chmod(opt.Mode); err != nil {
			return fail("chmod", err)
		}
	}
	step = time.Now()
	if !opt.Volatile {
		if err := f.Sync(); err != nil {
			return fail("fsync", err)
		}
	}
	tm.TmpSync = time.Since(step)
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return tm, fmt.Errorf("write %s: close %s: %w", name, tmp, err)
	}
	if opt.Permit != nil {
		step = time.Now()
		err := <-opt.Permit
		tm.Permit = time.Since(step)
		if err != nil {
			_ = os.Remove(tmp)
			return tm, err
		}
	}
	final := filepath.Join(dir, name)
	step = time.Now()
	err = os.Rename(tmp, final)
	tm.Rename = time.Since(step)
	if err != nil {
		_ = os.Remove(tmp)
		return tm, fmt.Errorf("write %s: rename %s: %w", name, tmp, err)
	}
	tm.Visible = time.Since(start)
	if opt.Renamed != nil {
		opt.Renamed()
	}
	if opt.Volatile {
		return tm, nil
	}
	step = time.Now()
	err = SyncDir(dir)
	tm.DirSync = time.Since(step)
	if err != nil {
		return tm, fmt.Errorf("write %s: fsync directory %s: %w", name, dir, err)
	}
	return tm, nil
}

// LockSuffix ends the name of the lock file Update takes beside the file
// it changes.
const LockSuffix = ".lock"

// updateWait bounds Update's wait for another process's update of the same
// file: a read and a write of a small file. A holder that died released
// the lock with its process.
const updateWait = 10 * time.Second

// Update changes dir/name, a file that several processes (the brokers
// sharing a volume) may change, without losing any one's change: it takes
// an exclusive lock on dir/name+LockSuffix (filelock: an open file
// description lock, which NFS forwards to the server), reads the file,
// calls change with its content (nil when there is none) and replaces the
// file with what change returns, then lets the lock go. Two brokers
// updating at once are serialized, and the second reads what the first
// wrote. change returning nil data writes nothing (a refused or
// validate-only change); its error is returned as is. dir is created if
// missing; opt.Mode is also the lock file's mode.
func Update(dir, name string, opt Options, change func(cur []byte) ([]byte, error)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("update %s: %w", name, err)
	}
	unlock, locked, err := filelock.Acquire(filepath.Join(dir, name+LockSuffix), opt.Mode, updateWait)
	if unlock != nil {
		defer unlock()
	}
	if err != nil {
		return fmt.Errorf("update %s: lock: %w", name, err)
	}
	if !locked {
		return fmt.Errorf("update %s: another process has held %s%s for %s", name, name, LockSuffix, updateWait)
	}
	cur, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("update %s: %w", name, err)
	}
	next, err := change(cur)
	if err != nil || next == nil {
		return err
	}
	_, err = WriteWith(dir, name, next, opt)
	return err
}

// SyncDir fsyncs a directory so renames and creations in it are durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Mkdir creates dir, whose parent must exist, and is no error when dir
// exists. The stores make their directories with it below the root they
// made when they opened, so that a root gone from under the broker (a
// volume unmounted, the data dir removed) fails the write rather than
// being made again, on whatever filesystem is left, where nothing would
// be durable.
func Mkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return nil
}
