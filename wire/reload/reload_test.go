package reload_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kaas-project/kaas/wire/reload"
)

func TestFilesReparseOnChangeAndKeepLastGood(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "value")
	opt := filepath.Join(dir, "optional")
	write := func(s string, mtime time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	base := time.Unix(1_700_000_000, 0)
	write("one", base)
	parse := func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		if string(b) == "bad" {
			return "", errors.New("bad content")
		}
		return string(b), nil
	}
	now := base
	f, err := reload.Open([]string{path, opt}, []string{opt}, parse, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	var events []error
	f.OnReload = func(err error) { events = append(events, err) }

	write("two", base.Add(time.Second))
	if got := f.Get(); got != "one" {
		t.Fatalf("re-read before CheckEvery passed: %q", got)
	}
	now = now.Add(reload.CheckEvery)
	if got := f.Get(); got != "two" {
		t.Fatalf("after a change: %q, want two", got)
	}
	write("bad", base.Add(2*time.Second))
	now = now.Add(reload.CheckEvery)
	if got := f.Get(); got != "two" {
		t.Fatalf("a broken file must keep the last good value, got %q", got)
	}
	now = now.Add(reload.CheckEvery)
	f.Get() // the same failure again: reported once
	if err := os.WriteFile(opt, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	write("three", base.Add(3*time.Second))
	now = now.Add(reload.CheckEvery)
	if got := f.Get(); got != "three" {
		t.Fatalf("after the fix: %q, want three", got)
	}
	if len(events) != 3 || events[0] != nil || events[1] == nil || events[2] != nil {
		t.Fatalf("reload events %v, want [nil, error, nil]", events)
	}
	if _, err := reload.Open([]string{filepath.Join(dir, "missing")}, nil, parse, time.Now); err == nil {
		t.Fatal("a missing required file must fail Open")
	}
}
