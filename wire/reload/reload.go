// Package reload keeps what was parsed from mounted files current: the
// files are stat'ed at most once per CheckEvery when the value is asked
// for, and parsed again when a modification time or size changed. Kubelet
// swaps a mounted Secret's files atomically, so a renewed certificate or
// credentials file is picked up without a restart. A change that fails to
// parse keeps the last good value.
package reload

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// CheckEvery bounds how often the files are stat'ed.
const CheckEvery = time.Second

// Files is the value parsed from a set of files, re-parsed when they change.
type Files[T any] struct {
	paths    []string
	optional map[string]bool
	parse    func() (T, error)
	now      func() time.Time
	// OnReload, if set, is told about every reload and every distinct
	// failed one (the previous value stays in use on failure).
	OnReload func(err error)

	mu      sync.Mutex
	checked time.Time
	stamp   string
	value   T
	lastErr string
}

// Open parses the files once; an error there is the caller's to report.
// paths are the files whose changes trigger a re-parse; optional ones may
// be missing. now is the clock (time.Now outside tests).
func Open[T any](paths, optional []string, parse func() (T, error), now func() time.Time) (*Files[T], error) {
	f := &Files[T]{paths: paths, parse: parse, now: now, optional: map[string]bool{}}
	for _, p := range optional {
		f.optional[p] = true
	}
	stamp, err := f.fingerprint()
	if err != nil {
		return nil, err
	}
	if f.value, err = parse(); err != nil {
		return nil, err
	}
	f.stamp, f.checked = stamp, now()
	return f, nil
}

// fingerprint is the modification time and size of every file.
func (f *Files[T]) fingerprint() (string, error) {
	var b strings.Builder
	for _, p := range f.paths {
		st, err := os.Stat(p)
		if err != nil {
			if f.optional[p] && errors.Is(err, os.ErrNotExist) {
				b.WriteString("-;")
				continue
			}
			return "", err
		}
		fmt.Fprintf(&b, "%d/%d;", st.ModTime().UnixNano(), st.Size())
	}
	return b.String(), nil
}

// Refresh is Get without waiting for CheckEvery: for a writer of the files
// that reads its own change back.
func (f *Files[T]) Refresh() T {
	f.mu.Lock()
	f.checked = time.Time{}
	f.mu.Unlock()
	return f.Get()
}

// Get returns the current value, re-parsing the files first if they
// changed since the last check (at most once per CheckEvery).
func (f *Files[T]) Get() T {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.checked) < CheckEvery {
		return f.value
	}
	f.checked = now
	stamp, err := f.fingerprint()
	if err == nil && stamp != f.stamp {
		var v T
		if v, err = f.parse(); err == nil {
			f.value, f.stamp = v, stamp
			if f.OnReload != nil {
				f.OnReload(nil)
			}
		}
	}
	if err != nil && err.Error() != f.lastErr && f.OnReload != nil {
		f.OnReload(err)
	}
	f.lastErr = ""
	if err != nil {
		f.lastErr = err.Error()
	}
	return f.value
}
