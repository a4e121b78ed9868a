package main

import (
	"fmt"

	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/storage"
)

// openDiskStorage opens the disk log engine under dir.
func openDiskStorage(dir string) (storage.Opener, supervisor.Registry, []supervisor.TopicRecord, error) {
	return nil, nil, nil, fmt.Errorf("--data-dir %s: disk storage is not available in this build yet", dir)
}
