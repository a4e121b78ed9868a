package disklog

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/storage/atomicfile"
)

// fsyncs counts fdatasync and directory fsync calls of the package: every
// one is a device flush, the cost that bounds handoffs and group commit.
var fsyncs atomic.Int64

// Fsyncs returns how many fsyncs (file and directory) this process issued
// through disklog.
func Fsyncs() int64 { return fsyncs.Load() }

// syncDir fsyncs a directory so that creations, renames and unlinks in it
// are durable.
func syncDir(dir string) error {
	fsyncs.Add(1)
	return atomicfile.SyncDir(dir)
}

// writeFileAtomic replaces dir/name with data (tmp, fsync, rename, dir fsync).
func writeFileAtomic(dir, name string, data []byte, mode os.FileMode) error {
	fsyncs.Add(2) // the file and its directory
	if err := atomicfile.Write(dir, name, data, mode); err != nil {
		return fmt.Errorf("disklog: %w", err)
	}
	return nil
}

// overwriteFile writes data over path in place (creating the file only the
// first time), then cuts what is left of a longer old content; no fsync,
// no temporary file, no rename. Only self-validating accelerators and the
// fixed-width leader claim use it: a reader racing the write, or a crash
// before the next fsync, may see a torn file, which fails its checksum and
// reads as absent (rebuilt from the log), never as other valid content.
//
// Creating a file is the expensive step of a metadata update: on the
// shared volume's NFS every create is a synchronous round trip to the
// server, and on a local filesystem too a create costs far more CPU than an
// overwrite (BenchmarkLeadershipMove's "close-created" against "close"
// shows what creating costs a move). A leadership move rewrites about six
// of these files per partition, so a drain of a thousand partitions would
// otherwise create and rename thousands of temporary files.
func overwriteFile(path string, data []byte, mode os.FileMode) error {
	if err := overwriteRaw(path, data, mode); err != nil {
		return fmt.Errorf("disklog: overwrite %s: %w", filepath.Base(path), err)
	}
	return nil
}

// checksummed frames a small text file: body, then "crc <hex>\n".
func checksummed(body []byte) []byte {
	b := append(body, "crc "...)
	b = appendPadded(b, uint64(crc32.Checksum(body, castagnoli)), 16, 8)
	return append(b, '\n')
}

// unchecksummed returns the body of a checksummed file, or false.
func unchecksummed(b []byte) ([]byte, bool) {
	i := bytes.LastIndex(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if i < 0 || !bytes.HasSuffix(b, []byte("\n")) {
		return nil, false
	}
	body, tail := b[:i+1], strings.TrimSpace(string(b[i+1:]))
	v, ok := strings.CutPrefix(tail, "crc ")
	if !ok {
		return nil, false
	}
	c, err := strconv.ParseUint(v, 16, 32)
	if err != nil || uint32(c) != crc32.Checksum(body, castagnoli) {
		return nil, false
	}
	return body, true
}

// The leader-epoch checkpoint is Kafka's format plus an optional "sealed"
// line and a CRC line:
//
//	0
//	<count>
//	<epoch> <start offset>
//	...
//	sealed <offset>
//	crc <crc32c of the lines above, hex>
//
// "sealed" is the base offset below which every segment had an index
// trailer matching its successor when the log was last opened: the next
// open takes those segments as they are and reads their trailers only when
// a read, a timestamp lookup or retention needs them (see recover).
func encodeEpochs(eps []storage.EpochEntry, sealed int64) []byte {
	b := make([]byte, 0, 32+24*len(eps))
	b = append(strconv.AppendInt(append(b, "0\n"...), int64(len(eps)), 10), '\n')
	for _, e := range eps {
		b = append(strconv.AppendInt(b, int64(e.Epoch), 10), ' ')
		b = append(strconv.AppendInt(b, e.StartOffset, 10), '\n')
	}
	if sealed > 0 {
		b = append(strconv.AppendInt(append(b, "sealed "...), sealed, 10), '\n')
	}
	return checksummed(b)
}

func decodeEpochs(b []byte) ([]storage.EpochEntry, int64, error) {
	body, ok := unchecksummed(b)
	if !ok {
		return nil, 0, errors.New("checksum mismatch or truncated file")
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) < 2 || lines[0] != "0" {
		return nil, 0, errors.New("unknown format")
	}
	var sealed int64
	if v, ok := strings.CutPrefix(lines[len(lines)-1], "sealed "); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return nil, 0, fmt.Errorf("bad sealed offset %q", v)
		}
		sealed, lines = n, lines[:len(lines)-1]
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, 0, errors.New("bad entry count")
	}
	out := make([]storage.EpochEntry, 0, n)
	for _, ln := range lines[2:] {
		var e storage.EpochEntry
		if _, err := fmt.Sscanf(ln, "%d %d", &e.Epoch, &e.StartOffset); err != nil {
			return nil, 0, fmt.Errorf("bad entry %q", ln)
		}
		if k := len(out); k > 0 && (e.Epoch <= out[k-1].Epoch || e.StartOffset < out[k-1].StartOffset) {
			return nil, 0, fmt.Errorf("entry %q is not after %v", ln, out[k-1])
		}
		out = append(out, e)
	}
	return out, sealed, nil
}

// writeEpochs replaces the checkpoint without fsync: it is checksummed and
// rebuilt from the epoch-stamped segment names when a crash damages it, and
// every new epoch also creates a segment, whose directory fsync (the first
// Sync) makes it durable before anything is acknowledged under it. Kafka
// likewise keeps the checkpoint flush off the critical path (KAFKA-15046);
// here it keeps two fsyncs out of every leadership move.
func writeEpochs(dir string, eps []storage.EpochEntry, sealed int64, mode os.FileMode) error {
	return overwriteFile(filepath.Join(dir, epochFile), encodeEpochs(eps, sealed), mode)
}

// errDamaged marks a metadata file whose content does not decode: it is
// rebuilt from the segments. A file that cannot be read at all (EIO, a
// stale NFS handle, a permission change) is not: its content may be
// intact, so the open fails and is retried rather than rebuilding over it.
var errDamaged = errors.New("damaged")

// readEpochs returns the checkpoint's entries and sealed offset, and
// whether the file exists. A decode failure wraps errDamaged.
func readEpochs(dir string) ([]storage.EpochEntry, int64, bool, error) {
	b, err := readFileRaw(filepath.Join(dir, epochFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("disklog: read %s: %w", epochFile, err)
	}
	eps, sealed, err := decodeEpochs(b)
	if err != nil {
		return nil, 0, true, fmt.Errorf("%w: %w", errDamaged, err)
	}
	return eps, sealed, true, nil
}

// Small numeric files ("0\n<number>\ncrc <hex>\n"): the log start offset
// and the leader claim.
func encodeNumber(n int64) []byte {
	return checksummed(append(strconv.AppendInt(append(make([]byte, 0, 48), "0\n"...), n, 10), '\n'))
}

// readNumber returns the number in dir/name, or false when the file is
// missing or damaged.
func readNumber(dir, name string) (int64, bool) {
	n, st := readNumberState(dir, name)
	return n, st == numberValid
}

// numberState tells a missing small file from a damaged or unreadable one.
type numberState int

const (
	numberValid numberState = iota
	numberMissing
	numberDamaged    // torn (a write in flight or a crash), or garbage
	numberUnreadable // the read itself failed; the content may be intact
)

// numberBuf holds a small numeric file: "0\n<int64>\ncrc <8 hex>\n" is at
// most 36 bytes.
type numberBuf [96]byte

func readNumberState(dir, name string) (int64, numberState) {
	n, st, _ := readNumberErr(dir, name)
	return n, st
}

// readNumberErr is readNumberState with the read error of an unreadable
// file.
func readNumberErr(dir, name string) (int64, numberState, error) {
	var buf numberBuf
	b, err := readSmall(filepath.Join(dir, name), buf[:])
	if errors.Is(err, os.ErrNotExist) {
		return 0, numberMissing, nil
	}
	if err != nil {
		return 0, numberUnreadable, fmt.Errorf("disklog: read %s: %w", name, err)
	}
	n, st := parseNumber(b)
	return n, st, nil
}

func parseNumber(b []byte) (int64, numberState) {
	body, ok := unchecksummed(b)
	if !ok {
		return 0, numberDamaged
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "0" {
		return 0, numberDamaged
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return 0, numberDamaged
	}
	return n, numberValid
}

// The log start offset file.
func encodeStart(off int64) []byte { return encodeNumber(off) }

// readStart returns the log start offset, or false when the file is
// missing or damaged (the first segment's base then), or an error when it
// cannot be read: taking the first segment's base instead would bring back
// records deleted below the start offset.
func readStart(dir string) (int64, bool, error) {
	off, st, err := readNumberErr(dir, startFile)
	if err != nil {
		return 0, false, err
	}
	return off, st == numberValid && off >= 0, nil
}

// The leader claim, written in place under its lock (no fsync: it only
// matters while the claimant and a deposed leader both run) by Open before
// it reads the log. The number is zero-padded to a fixed width, so every
// claim is the same 32 bytes written over the last one at offset 0: a
// reader never sees a shorter claim followed by a stale tail.
func encodeClaim(epoch int32) []byte {
	b := append(make([]byte, 0, 32), "0\n"...)
	if epoch < 0 {
		b = appendPadded(append(b, '-'), uint64(-int64(epoch)), 10, 10)
	} else {
		b = appendPadded(b, uint64(epoch), 10, 11)
	}
	return checksummed(append(b, '\n'))
}

// appendPadded appends n in base 10 or 16 (lower case), zero-padded to
// width digits: fmt's %0*d and %0*x without fmt's cost, on the path of
// every leadership move.
func appendPadded(b []byte, n uint64, base, width int) []byte {
	var d [20]byte
	v := strconv.AppendUint(d[:0], n, base)
	for range width - len(v) {
		b = append(b, '0')
	}
	return append(b, v...)
}

// readClaim returns the claimed epoch, or false when there is no readable
// claim.
func readClaim(dir string) (int32, bool) {
	e, st := readClaimState(dir)
	return e, st == numberValid
}

func readClaimState(dir string) (int32, numberState) {
	return claimState(readNumberState(dir, claimFile))
}

func claimState(e int64, st numberState) (int32, numberState) {
	if st == numberValid && (e < math.MinInt32 || e > math.MaxInt32) {
		return 0, numberDamaged
	}
	return int32(e), st
}
