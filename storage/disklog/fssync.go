package disklog

import (
	"fmt"
	"os"
	"sync"
)

// SyncMode is how a log makes its appends durable.
type SyncMode int

const (
	// SyncFiles fdatasyncs each log's segments (and its directory when
	// segments were created): one device flush per log per group commit.
	SyncFiles SyncMode = iota
	// SyncFilesystem makes every log of the Opener durable with one
	// syncfs(2) of the data directory's filesystem per round: logs that
	// ask while a round runs share the next one. A broker leading
	// thousands of partitions then issues one flush per round instead of
	// one per partition. It flushes everything dirty on that filesystem,
	// so it suits a volume given to kaas (the shared RWX volume), not a
	// disk shared with unrelated write-heavy tenants. Linux only; elsewhere
	// it falls back to SyncFiles.
	SyncFilesystem
)

// ParseSyncMode reads a --fsync flag value: "file" or "syncfs".
func ParseSyncMode(s string) (SyncMode, error) {
	switch s {
	case "file":
		return SyncFiles, nil
	case "syncfs":
		return SyncFilesystem, nil
	}
	return 0, fmt.Errorf("unknown fsync mode %q (want file or syncfs)", s)
}

// Sync sets how the Opener's logs make appends durable.
func Sync(m SyncMode) Option { return func(o *options) { o.sync = m } }

// fsSyncer runs syncfs rounds for every log of an Opener. A caller waits
// for a round that starts after it asked, so everything it wrote before
// asking is durable when it returns.
type fsSyncer struct {
	dir *os.File // any descriptor on the filesystem; syncfs reports writeback errors seen since the last call through it

	mu      sync.Mutex
	waiting []chan error
	running bool
}

func newFSSyncer(dir string) (*fsSyncer, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("disklog: open %s for syncfs: %w", dir, err)
	}
	if err := syncfs(d); err != nil {
		d.Close()
		return nil, fmt.Errorf("disklog: syncfs %s: %w", dir, err)
	}
	return &fsSyncer{dir: d}, nil
}

// sync blocks until a syncfs round that began after the call has ended.
func (s *fsSyncer) sync() error {
	done := make(chan error, 1)
	s.mu.Lock()
	s.waiting = append(s.waiting, done)
	if !s.running {
		s.running = true
		go s.rounds()
	}
	s.mu.Unlock()
	return <-done
}

func (s *fsSyncer) rounds() {
	for {
		s.mu.Lock()
		batch := s.waiting
		s.waiting = nil
		if len(batch) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		fsyncs.Add(1)
		err := syncfs(s.dir)
		if err != nil {
			err = fmt.Errorf("syncfs: %w", err)
		}
		for _, c := range batch {
			c <- err
		}
	}
}

func (s *fsSyncer) close() error { return s.dir.Close() }
