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
	"github.com/kaas-project/kaas/storage/filelock"
)

// clusterDir holds broker-level files beside the partition directories.
const clusterDir = "__cluster"

// topicsFile is the local topic registry of single-node --data-dir mode.
const topicsFile = "topics.json"

// localLockFile is the lock a local-mode broker holds on its data dir, in
// clusterDir.
const localLockFile = "local-broker.lock"

// lockLocalDataDir takes a local-mode broker's exclusive lock on its
// --data-dir, as Kafka takes one on each log dir: two local brokers on one
// directory would each lead every partition and write over each other's
// records. Cluster-mode brokers share the volume by design (the leader
// claims keep one writer per partition) and take none; neither does a
// broker in memory. unlock releases the lock (a process that dies releases
// it too).
func lockLocalDataDir(cfg *serveConfig) (unlock func(), err error) {
	if cfg.DataDir == "" || cfg.clusterMode() || !filelock.Supported {
		return func() {}, nil
	}
	dir := filepath.Join(cfg.DataDir, clusterDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", cfg.DataDir, err)
	}
	path := filepath.Join(dir, localLockFile)
	unlock, locked, err := filelock.Acquire(path, 0o644, 0)
	if err != nil {
		if unlock != nil {
			unlock()
		}
		return nil, fmt.Errorf("--data-dir %s: lock %s: %w", cfg.DataDir, path, err)
	}
	if !locked {
		unlock()
		return nil, fmt.Errorf("--data-dir %s is in use by another kaas broker (it holds the lock on %s): each local broker needs a data dir of its own", cfg.DataDir, path)
	}
	return unlock, nil
}

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
