package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rs/zerolog"

	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/atomicfile"
	"github.com/kaas-project/kaas/storage/disklog"
)

// clusterDir holds broker-level files beside the partition directories.
const clusterDir = "__cluster"

// topicsFile is the local topic registry of single-node --data-dir mode.
const topicsFile = "topics.json"

// openDiskStorage opens the disk log engine under dir, with the topic
// registry at <dir>/__cluster/topics.json, so that topics and their data
// survive a restart. Every partition is led locally.
func openDiskStorage(dir string, sync disklog.SyncMode, log zerolog.Logger, opts ...disklog.Option) (storage.Opener, supervisor.Registry, []supervisor.TopicRecord, error) {
	opener, err := disklog.NewOpener(dir, log, append([]disklog.Option{disklog.Sync(sync)}, opts...)...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	reg := &fileRegistry{dir: filepath.Join(dir, clusterDir)}
	if err := os.MkdirAll(reg.dir, 0o755); err != nil {
		return nil, nil, nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	topics, err := reg.load()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	return opener, reg, topics, nil
}

// registryDoc is topics.json.
type registryDoc struct {
	Format  int                      `json:"format"`
	Version int64                    `json:"version"`
	Topics  []supervisor.TopicRecord `json:"topics"`
}

// fileRegistry persists the local topic registry: tmp file, fsync, rename,
// directory fsync. Saves run on goroutines and may arrive out of order; an
// older version than the last one written by this process is ignored.
type fileRegistry struct {
	dir string

	mu      sync.Mutex
	written int64
}

func (r *fileRegistry) path() string { return filepath.Join(r.dir, topicsFile) }

func (r *fileRegistry) load() ([]supervisor.TopicRecord, error) {
	b, err := os.ReadFile(r.path())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc registryDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", r.path(), err)
	}
	if doc.Format != 1 {
		return nil, fmt.Errorf("%s: unknown format %d", r.path(), doc.Format)
	}
	return doc.Topics, nil
}

// Save implements supervisor.Registry.
func (r *fileRegistry) Save(version int64, topics []supervisor.TopicRecord) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if version <= r.written {
		return nil
	}
	if topics == nil {
		topics = []supervisor.TopicRecord{}
	}
	b, err := json.MarshalIndent(registryDoc{Format: 1, Version: version, Topics: topics}, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(r.dir, topicsFile, append(b, '\n'), 0o644); err != nil {
		return err
	}
	r.written = version
	return nil
}
