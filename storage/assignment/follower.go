package assignment

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/rs/zerolog"
)

// DefaultPollInterval is the follower's backstop poll period.
const DefaultPollInterval = time.Second

// FollowerConfig configures a Follower.
type FollowerConfig struct {
	// Path is the assignment file to follow, usually Path(dataDir).
	Path string
	// PollInterval is the mtime/size/inode poll period (default 1 s).
	PollInterval time.Duration
	// DisableWatch turns fsnotify off, leaving the poll and Nudge (for tests
	// and for filesystems without change notification).
	DisableWatch bool
	// Self and SelfName identify this broker for the Changes given to OnChange.
	Self     int32
	SelfName string
	// MinEpoch is the initial controller-epoch floor (see SetMinEpoch).
	MinEpoch int64
	// Logger receives structured logs; the zero value logs nothing.
	Logger zerolog.Logger
	// OnChange is called with the previously accepted document (nil the first
	// time), the newly accepted one and their Diff for this broker. It is
	// called from Run's goroutine only, never concurrently with itself, and
	// must be cheap (send a message, do not do the work). prev and next must
	// be treated as read-only; they are shared with Current.
	OnChange func(prev, next *Assignment, d Changes)
}

// Follower tracks the assignment file for one broker. Sources: fsnotify on the
// file's directory (rename-aware: the directory is watched and events are
// filtered by file name), a poll of the file's size, mtime and inode every
// PollInterval as backstop, and Nudge (the controller's heartbeat push).
//
// It accepts a document only if it decodes and validates, its
// controller_epoch is at least the floor (SetMinEpoch) and at least that of
// the current document, and, within the current epoch, its
// assignment_version is higher. Anything else is logged and ignored; the last
// good document stays in force. An identical re-read is ignored silently.
type Follower struct {
	cfg      FollowerConfig
	dir      string
	base     string
	nudge    chan struct{}
	minEpoch atomic.Int64
	cur      atomic.Pointer[Assignment]

	// Owned by Run's goroutine.
	lastStat fs.FileInfo // file as of the last read (for the poll)
	lastRaw  []byte      // bytes of the last document read, accepted or not
	missing  bool        // last read found no file (logged once)
	running  sync.Mutex  // one Run at a time

	// hook, if set (tests), is told what each read led to: "accepted",
	// "identical", "invalid", "stale" (any rejected document), "missing",
	// "unreadable".
	hook func(outcome string)
}

func (f *Follower) note(outcome string) {
	if f.hook != nil {
		f.hook(outcome)
	}
}

// NewFollower returns a follower; call Run to start it.
func NewFollower(cfg FollowerConfig) *Follower {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	f := &Follower{
		cfg:   cfg,
		dir:   filepath.Dir(cfg.Path),
		base:  filepath.Base(cfg.Path),
		nudge: make(chan struct{}, 1),
	}
	f.minEpoch.Store(cfg.MinEpoch)
	return f
}

// Current returns the last accepted document, or nil if none yet. It is safe
// to call from any goroutine; the result must be treated as read-only.
func (f *Follower) Current() *Assignment { return f.cur.Load() }

// Nudge asks Run to re-read the file now. It never blocks; nudges that arrive
// while one is pending coalesce.
func (f *Follower) Nudge() {
	select {
	case f.nudge <- struct{}{}:
	default:
	}
}

// SetMinEpoch raises the controller-epoch floor to e (it never lowers it):
// documents with a lower controller_epoch are rejected from then on. The
// supervisor feeds it the Lease epoch. The current document stays in force.
func (f *Follower) SetMinEpoch(e int64) {
	for {
		old := f.minEpoch.Load()
		if e <= old || f.minEpoch.CompareAndSwap(old, e) {
			return
		}
	}
}

// MinEpoch returns the current controller-epoch floor.
func (f *Follower) MinEpoch() int64 { return f.minEpoch.Load() }

// Run follows the file until ctx is done. It reads the file once at start.
func (f *Follower) Run(ctx context.Context) {
	f.running.Lock()
	defer f.running.Unlock()
	log := f.cfg.Logger.With().Str("path", f.cfg.Path).Logger()

	var w *fsnotify.Watcher
	closeWatch := func() {
		if w != nil {
			_ = w.Close()
			w = nil
		}
	}
	defer closeWatch()
	watchErrLogged := false
	tryWatch := func() {
		if f.cfg.DisableWatch || w != nil {
			return
		}
		nw, err := fsnotify.NewWatcher()
		if err == nil {
			if err = nw.Add(f.dir); err != nil {
				_ = nw.Close()
			}
		}
		if err != nil {
			if !watchErrLogged {
				log.Debug().Err(err).Str("dir", f.dir).Msg("assignment watch unavailable, polling")
				watchErrLogged = true
			}
			return
		}
		watchErrLogged = false
		w = nw
		// The file may have changed while nothing watched it.
		f.reload(log, "watch")
	}

	tryWatch()
	if w == nil {
		f.reload(log, "start")
	}
	ticker := time.NewTicker(f.cfg.PollInterval)
	defer ticker.Stop()
	for {
		var events <-chan fsnotify.Event
		var errs <-chan error
		if w != nil {
			events, errs = w.Events, w.Errors
		}
		select {
		case <-ctx.Done():
			return
		case <-f.nudge:
			f.reload(log, "nudge")
		case <-ticker.C:
			tryWatch()
			f.poll(log)
		case ev, ok := <-events:
			switch {
			case !ok:
				closeWatch()
			case filepath.Base(ev.Name) == f.base:
				f.reload(log, "fsnotify")
			case filepath.Clean(ev.Name) == filepath.Clean(f.dir) && ev.Has(fsnotify.Remove|fsnotify.Rename):
				closeWatch() // the directory went away; tryWatch re-adds it
			}
		case err, ok := <-errs:
			if !ok {
				closeWatch()
				continue
			}
			// Typically an event-queue overflow: events may be lost.
			log.Warn().Err(err).Msg("assignment watch error, re-reading")
			f.reload(log, "fsnotify-error")
		}
	}
}

// poll re-reads the file if its size, mtime or inode changed since the last
// read.
func (f *Follower) poll(log zerolog.Logger) {
	fi, err := os.Stat(f.cfg.Path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) || !f.missing {
			f.reload(log, "poll")
		}
		return
	}
	if last := f.lastStat; last != nil && os.SameFile(last, fi) &&
		last.Size() == fi.Size() && last.ModTime().Equal(fi.ModTime()) {
		return
	}
	f.reload(log, "poll")
}

// read returns the file's bytes and the stat of the same open file.
func (f *Follower) read() ([]byte, fs.FileInfo, error) {
	fh, err := os.Open(f.cfg.Path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	data, err := io.ReadAll(fh)
	return data, fi, err
}

func (f *Follower) reload(log zerolog.Logger, source string) {
	data, fi, err := f.read()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if !f.missing {
				log.Info().Str("source", source).Msg("assignment file not found yet")
			}
			f.missing = true
			f.lastStat = nil
			f.note("missing")
			return
		}
		log.Warn().Err(err).Str("source", source).Msg("assignment unreadable, keeping last good")
		f.note("unreadable")
		return
	}
	f.missing = false
	f.lastStat = fi
	if f.lastRaw != nil && bytes.Equal(data, f.lastRaw) {
		f.note("identical")
		return // identical re-read
	}
	f.lastRaw = data
	next, err := Decode(data)
	if err != nil {
		ev := log.Warn().Err(err).Str("source", source).Int("bytes", len(data))
		if cur := f.cur.Load(); cur != nil {
			ev = ev.Int64("kept_epoch", cur.ControllerEpoch).Int64("kept_version", cur.AssignmentVersion)
		}
		ev.Msg("assignment rejected: invalid file, keeping last good")
		f.note("invalid")
		return
	}
	f.consider(log, source, next)
}

func (f *Follower) consider(log zerolog.Logger, source string, next *Assignment) {
	cur := f.cur.Load()
	reject := func(reason string) {
		defer f.note("stale")
		ev := log.Warn().Str("source", source).Str("reason", reason).
			Int64("epoch", next.ControllerEpoch).Int64("version", next.AssignmentVersion).
			Str("controller", next.Controller).Int64("min_epoch", f.minEpoch.Load())
		if cur != nil {
			ev = ev.Int64("kept_epoch", cur.ControllerEpoch).Int64("kept_version", cur.AssignmentVersion)
		}
		ev.Msg("assignment rejected, keeping last good")
	}
	if floor := f.minEpoch.Load(); next.ControllerEpoch < floor {
		reject("controller epoch below the lease epoch")
		return
	}
	if cur != nil {
		switch np, cp := PositionOf(next), PositionOf(cur); {
		case np.Epoch < cp.Epoch:
			reject("stale controller epoch")
			return
		case np.Less(cp):
			reject("stale assignment version")
			return
		case np == cp:
			if !Equal(cur, next) {
				reject("different content under the current epoch and version")
				return
			}
			f.note("identical")
			return
		}
	}
	f.cur.Store(next)
	d := Diff(cur, next, f.cfg.Self, f.cfg.SelfName)
	log.Info().Str("source", source).Int64("epoch", next.ControllerEpoch).
		Int64("version", next.AssignmentVersion).Str("controller", next.Controller).
		Int("take", len(d.Take)).Int("relinquish", len(d.Relinquish)).
		Int("epoch_changed", len(d.EpochChanged)).
		Int("slots_gained", len(d.SlotsGained)).Int("slots_lost", len(d.SlotsLost)).
		Msg("assignment accepted")
	if f.cfg.OnChange != nil {
		f.cfg.OnChange(cur, next, d)
	}
	f.note("accepted")
}
