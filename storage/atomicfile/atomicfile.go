// Package atomicfile replaces small files crash-safely: write a temporary
// file in the same directory, fsync it, rename it over the target, fsync the
// directory. A reader sees the old or the new content, never a mix, and
// after a crash the same holds.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// TmpSuffix ends the temporary file's name (readers ignore such files).
const TmpSuffix = ".tmp"

// Write replaces dir/name with data.
func Write(dir, name string, data []byte, mode os.FileMode) error {
	tmp := filepath.Join(dir, name+TmpSuffix)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err == nil {
		err = SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
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
