package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/partition"
	"github.com/kaas-project/kaas/actors/share"
	"github.com/kaas-project/kaas/actors/supervisor"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/groupstore"
	"github.com/kaas-project/kaas/storage/sharestate"
	"github.com/kaas-project/kaas/storage/txnlog"
)

// runDumpLog is `kaas dump-log`: what Kafka's kafka-dump-log.sh prints of a
// segment file, for the segments on the shared volume (record batches as
// produced, so Kafka's own tool reads them too where Java is at hand). Each
// batch's header and whether its CRC holds; with --deep-iteration every
// record, with --print-data-log their keys, values and headers too, and
// with --offsets-decoder a __consumer_offsets record's key and value
// decoded, as Kafka's flag of that name does. It also prints kaas's own
// files on the volume, chosen by where they lie: a group's offsets log
// (__groups/<group dir>/offsets.log), a transactional id's log
// (__transactions/<name>.log), a share-partition's state
// (__share/<group dir>/<topic>-<partition>.state), a segment's index
// (.index, and an older layout's .timeindex), checked against the segment
// beside it, and a partition's producer snapshot (producers.snapshot). A
// file with an invalid batch, record, state or index, an index entry the
// segment does not match, or bytes that are not a whole one, is an error
// (after printing it all).
func runDumpLog(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dump-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	files := fs.String("files", "", "comma-separated `files` to dump; also taken as arguments")
	deep := fs.Bool("deep-iteration", false, "print every record, not only each batch")
	data := fs.Bool("print-data-log", false, "print every record with its key, value and headers (implies --deep-iteration)")
	offsets := fs.Bool("offsets-decoder", false, "print a __consumer_offsets segment's keys and values decoded as group metadata and committed offsets (implies --print-data-log)")
	sanity := fs.Bool("index-sanity-check", false, "check an index against its trailer and the segment beside it, without printing its entries")
	verifyOnly := fs.Bool("verify-index-only", false, "print only where an index and the segment beside it disagree")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kaas dump-log [--deep-iteration] [--print-data-log] [--offsets-decoder] [--index-sanity-check] [--verify-index-only] FILE ...")
		fmt.Fprintln(stderr, "  FILE: a segment (.log), its index (.index, .timeindex), a partition's producers.snapshot, a group's offsets log (__groups/*/offsets.log), a transactional id's log (__transactions/*.log) or a share-partition's state (__share/*/*.state)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	paths := fs.Args()
	if *files != "" {
		paths = append(strings.Split(*files, ","), paths...)
	}
	if len(paths) == 0 {
		fs.Usage()
		return errors.New("dump-log: no file given")
	}
	var bad []string
	for _, p := range paths {
		kind := volumeFileKind(p)
		if kind == "" {
			return fmt.Errorf("dump-log: %s: not a segment (.log), index (.index, .timeindex), producer snapshot (.snapshot), group offsets log, transaction log or share-partition state", p)
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("dump-log: %w", err)
		}
		var ok bool
		st, err := f.Stat()
		if err == nil {
			fmt.Fprintf(stdout, "Dumping %s\n", p)
			switch kind {
			case "group":
				ok, err = dumpGroupLog(stdout, f, st.Size())
			case "transaction":
				ok = dumpTxnLog(stdout, f, st.Size())
			case "share":
				ok, err = dumpShareState(stdout, f)
			case "index":
				ok, err = dumpIndex(stdout, p, *sanity, *verifyOnly)
			case "snapshot":
				ok = dumpProducerSnapshot(stdout, p)
			default:
				ok, err = dumpSegment(stdout, p, bufio.NewReaderSize(f, 1<<20), st.Size(), *deep || *data || *offsets, *data || *offsets, *offsets)
			}
		}
		f.Close()
		if err != nil {
			return fmt.Errorf("dump-log: %s: %w", p, err)
		}
		if !ok {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("dump-log: invalid data in %s", strings.Join(bad, ", "))
	}
	return nil
}

// volumeFileKind tells the files dump-log reads apart by where they lie on
// the volume: "group", "transaction", "share", "segment", "index",
// "snapshot", or "" for none of them.
func volumeFileKind(path string) string {
	dir, grand := filepath.Base(filepath.Dir(path)), filepath.Base(filepath.Dir(filepath.Dir(path)))
	switch ext := filepath.Ext(path); {
	case grand == groupstore.Dir && filepath.Base(path) == groupstore.LogName:
		return "group"
	case dir == txnlog.Dir && ext == ".log":
		return "transaction"
	case grand == sharestate.Dir && ext == sharestate.StateSuffix:
		return "share"
	case ext == ".log":
		return "segment"
	case ext == ".index" || ext == ".timeindex":
		return "index"
	case ext == ".snapshot":
		return "snapshot"
	}
	return ""
}

// dumpGroupLog prints a group's offsets log: its header's group, then each
// record with its position.
func dumpGroupLog(w io.Writer, r io.Reader, size int64) (valid bool, err error) {
	good, err := groupstore.ReadLog(r, func(f groupstore.Frame) error {
		rec := f.Record
		switch {
		case rec == nil:
			fmt.Fprintf(w, "position: %d group: %s\n", f.Pos, printable([]byte(f.Group)))
		case rec.TxnEnd != nil:
			fmt.Fprintf(w, "position: %d txnEnd producerId: %d producerEpoch: %d commit: %t\n", f.Pos, rec.TxnEnd.ProducerID, rec.TxnEnd.Epoch, rec.TxnEnd.Commit)
		case rec.Meta != nil:
			fmt.Fprintf(w, "position: %d meta type: %s protocolType: %s emptySince: %d\n", f.Pos, rec.Meta.Kind, rec.Meta.ProtocolType, rec.Meta.EmptySince)
		case rec.Delete:
			fmt.Fprintf(w, "position: %d delete topic: %s partition: %d\n", f.Pos, rec.TP.Topic, rec.TP.Partition)
		default:
			c, what := rec.Commit, "commit"
			if rec.Txn != nil {
				what = fmt.Sprintf("txnCommit producerId: %d producerEpoch: %d", rec.Txn.ProducerID, rec.Txn.Epoch)
			}
			fmt.Fprintf(w, "position: %d %s topic: %s partition: %d offset: %d leaderEpoch: %d metadata: %s commitTimestamp: %d expireTimestamp: %d",
				f.Pos, what, rec.TP.Topic, rec.TP.Partition, c.Offset, c.LeaderEpoch, printable([]byte(c.Metadata)), c.CommitTime, c.ExpireTime)
			if c.TopicID != ([16]byte{}) {
				fmt.Fprintf(w, " topicId: %s", supervisor.FormatUUID(c.TopicID))
			}
			fmt.Fprintln(w)
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return notWhole(w, good, size, "record"), nil
}

// dumpTxnLog prints each state a transactional id's log holds; the last
// is the id's.
func dumpTxnLog(w io.Writer, r io.Reader, size int64) (valid bool) {
	good := txnlog.ReadLog(r, func(pos int64, st txnlog.State) {
		parts := make([]string, len(st.Partitions))
		for i, tp := range st.Partitions {
			parts[i] = fmt.Sprintf("%s-%d", tp.Topic, tp.Partition)
		}
		fmt.Fprintf(w, "position: %d transactionalId: %s producerId: %d producerEpoch: %d lastProducerId: %d lastProducerEpoch: %d "+
			"state: %s timeoutMs: %d partitions: [%s] groups: [%s] startTimestamp: %d updateTimestamp: %d",
			pos, printable([]byte(st.ID)), st.ProducerID, st.Epoch, st.LastProducerID, st.LastEpoch,
			st.Status, st.TimeoutMs, strings.Join(parts, ","), strings.Join(st.Groups, ","), st.StartMs, st.UpdateMs)
		if m := st.Marker; m != nil {
			fmt.Fprintf(w, " markerProducerId: %d markerProducerEpoch: %d markerBumped: %t", m.ProducerID, m.Epoch, m.Bumped)
		}
		fmt.Fprintln(w)
	})
	return notWhole(w, good, size, "record")
}

// dumpShareState prints a share-partition's state: its start offset and
// the state and delivery count of the records from it, in runs.
func dumpShareState(w io.Writer, r io.Reader) (valid bool, err error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return false, err
	}
	snap, err := sharestate.Decode(b)
	if err != nil {
		fmt.Fprintf(w, "Found %d bytes that are not a share-partition state: %v\n", len(b), err)
		return false, nil
	}
	id := "none"
	if snap.TopicID != ([16]byte{}) {
		id = supervisor.FormatUUID(snap.TopicID)
	}
	fmt.Fprintf(w, "topicId: %s startOffset: %d records: %d\n", id, snap.Start, len(snap.States))
	for i := 0; i < len(snap.States); {
		j := i + 1
		for j < len(snap.States) && snap.States[j] == snap.States[i] && snap.Counts[j] == snap.Counts[i] {
			j++
		}
		fmt.Fprintf(w, "| offsets: %d-%d state: %s deliveryCount: %d\n", snap.Start+int64(i), snap.Start+int64(j-1), share.State(snap.States[i]), snap.Counts[i])
		i = j
	}
	return true, nil
}

// dumpIndex prints a segment's index (path: its .index, or an older
// layout's .timeindex) and checks it against the segment beside it (the
// .log of the same name): each entry must be a batch boundary holding the
// entry's offset, with the largest timestamp of the batches before it, and
// the trailer must say where the segment ends. sanity prints no entries
// and says when all holds, verifyOnly prints only what does not hold.
// valid is false when the index is one the broker would rebuild or does
// not match the segment; err is a failure to read.
func dumpIndex(w io.Writer, path string, sanity, verifyOnly bool) (valid bool, err error) {
	idx, ierr := disklog.ReadIndexFile(path)
	if ierr != nil && !errors.Is(ierr, disklog.ErrIndexInvalid) {
		return false, ierr
	}
	tr, timeIndex := idx.Trailer, filepath.Ext(path) == ".timeindex"
	if !sanity && !verifyOnly {
		for _, e := range idx.Entries {
			switch {
			case timeIndex:
				fmt.Fprintf(w, "timestamp: %d offset: %d\n", e.MaxTimestamp, e.MaxTimestampOffset)
			case tr.FirstLayout:
				fmt.Fprintf(w, "offset: %d position: %d\n", e.Offset, e.Position)
			default:
				fmt.Fprintf(w, "offset: %d position: %d timestamp: %d timestampOffset: %d\n", e.Offset, e.Position, e.MaxTimestamp, e.MaxTimestampOffset)
			}
		}
		if tr != (disklog.IndexTrailer{}) { // the trailer held
			layout := "one-file"
			if tr.FirstLayout {
				layout = "index+timeindex"
			}
			fmt.Fprintf(w, "trailer baseOffset: %d nextOffset: %d size: %d maxTimestamp: %d maxTimestampOffset: %d leaderEpoch: %d entries: %d layout: %s\n",
				tr.BaseOffset, tr.NextOffset, tr.Size, tr.MaxTimestamp, tr.MaxTimestampOffset, tr.LeaderEpoch, len(idx.Entries), layout)
		}
	}
	valid = ierr == nil
	if valid {
		if !sanity && !verifyOnly {
			fmt.Fprintln(w, "Index CRC valid")
		}
	} else {
		fmt.Fprintf(w, "Index is invalid (the broker rebuilds it from the segment when it opens the partition): %v\n", ierr)
	}
	if ierr == nil || len(idx.Entries) > 0 {
		segPath := strings.TrimSuffix(path, filepath.Ext(path)) + ".log"
		matched, err := checkIndexAgainstSegment(w, path, segPath, idx)
		if errors.Is(err, os.ErrNotExist) && !sanity && !verifyOnly {
			fmt.Fprintf(w, "No segment %s beside the index: entries not checked\n", segPath)
			err = nil
		}
		if err != nil {
			return false, err
		}
		valid = valid && matched
	}
	if sanity && valid {
		fmt.Fprintf(w, "%s passed sanity check.\n", path)
	}
	return valid, nil
}

// checkIndexAgainstSegment walks the batch headers of the segment at
// segPath up to the length the index covers and reports, in
// kafka-dump-log.sh's words where it has them, each entry of idx (read
// from path) and each trailer field the segment contradicts.
func checkIndexAgainstSegment(w io.Writer, path, segPath string, idx disklog.IndexFile) (matched bool, err error) {
	seg, err := os.Open(segPath)
	if err != nil {
		return false, err
	}
	defer seg.Close()
	st, err := seg.Stat()
	if err != nil {
		return false, err
	}
	end := min(st.Size(), idx.Trailer.Size) // bytes past it are not the index's (a deposed leader's)
	type batchAt struct{ offset, maxTSBefore, maxTSOffsetBefore int64 }
	batches := map[int64]batchAt{}
	maxTS, maxTSOffset, next := int64(-1), int64(-1), idx.Trailer.BaseOffset
	head := make([]byte, batch.HeaderSize)
	var problems []string
	pos := int64(0)
	for pos < end {
		var h batch.Header
		_, err := seg.ReadAt(head, pos)
		if err == nil {
			h, err = batch.ParseHeader(head)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("  Segment bytes at position %d are not a batch header (%v): the check stops there", pos, err))
			break
		}
		batches[pos] = batchAt{h.BaseOffset, maxTS, maxTSOffset}
		if h.MaxTimestamp > maxTS || maxTSOffset < 0 {
			maxTS, maxTSOffset = h.MaxTimestamp, h.BaseOffset
		}
		next = h.NextOffset()
		pos += int64(h.Size())
	}
	var offsetMismatches, tsMismatches []string
	for _, e := range idx.Entries {
		b, ok := batches[e.Position]
		switch {
		case !ok:
			offsetMismatches = append(offsetMismatches, fmt.Sprintf("  Index offset: %d, position: %d is not a batch boundary", e.Offset, e.Position))
		case b.offset != e.Offset:
			offsetMismatches = append(offsetMismatches, fmt.Sprintf("  Index offset: %d, log offset: %d", e.Offset, b.offset))
		case b.maxTSBefore != e.MaxTimestamp || b.maxTSOffsetBefore != e.MaxTimestampOffset:
			tsMismatches = append(tsMismatches, fmt.Sprintf("  Index timestamp: %d, log timestamp: %d (offset %d, log offset %d)",
				e.MaxTimestamp, b.maxTSBefore, e.MaxTimestampOffset, b.maxTSOffsetBefore))
		}
	}
	if tr := idx.Trailer; len(problems) == 0 && tr.Size > 0 {
		if pos != tr.Size {
			problems = append(problems, fmt.Sprintf("  Trailer size: %d, batches end at: %d", tr.Size, pos))
		}
		if next != tr.NextOffset {
			problems = append(problems, fmt.Sprintf("  Trailer next offset: %d, log next offset: %d", tr.NextOffset, next))
		}
		if maxTS != tr.MaxTimestamp || maxTSOffset != tr.MaxTimestampOffset {
			problems = append(problems, fmt.Sprintf("  Trailer max timestamp: %d at offset %d, log max timestamp: %d at offset %d", tr.MaxTimestamp, tr.MaxTimestampOffset, maxTS, maxTSOffset))
		}
	}
	for _, group := range []struct {
		title string
		lines []string
	}{{"Mismatches in :", offsetMismatches}, {"Found timestamp mismatch in :", tsMismatches}, {"Trailer does not match the segment in :", problems}} {
		if len(group.lines) > 0 {
			fmt.Fprintf(w, "%s%s\n%s\n", group.title, path, strings.Join(group.lines, "\n"))
		}
	}
	return len(offsetMismatches)+len(tsMismatches)+len(problems) == 0, nil
}

// dumpProducerSnapshot prints a partition's producer snapshot: the offset
// it covers, then each producer with its epoch, open transaction and last
// timestamp, and the batches it remembers for de-duplication, oldest
// first. valid is false for a file that fails its checksum or decoding.
func dumpProducerSnapshot(w io.Writer, path string) (valid bool) {
	b, err := disklog.ReadSnapshotFile(path)
	var prods *partition.Producers
	var off int64
	if err == nil {
		prods, off, err = partition.LoadSnapshot(b)
	}
	if err != nil {
		fmt.Fprintf(w, "Not a producer snapshot: %v\n", err)
		return false
	}
	entries := prods.Entries()
	fmt.Fprintf(w, "Snapshot offset: %d producers: %d\n", off, len(entries))
	for _, e := range entries {
		last := e.FencedAt // a transaction marker's time, when it is the latest
		if n := len(e.Batches); n > 0 {
			last = max(last, e.Batches[n-1].Timestamp)
		} else if last == 0 {
			last = -1
		}
		fmt.Fprintf(w, "producerId: %d producerEpoch: %d currentTxnFirstOffset: %d lastTimestamp: %d batches: %d\n",
			e.ID, e.Epoch, prods.TxnFirstOffset(e.ID), last, len(e.Batches))
		for _, m := range e.Batches {
			fmt.Fprintf(w, "| firstSequence: %d lastSequence: %d firstOffset: %d lastOffset: %d offsetDelta: %d timestamp: %d\n",
				m.FirstSeq, m.LastSeq, m.FirstOffset, m.LastOffset, m.LastOffset-m.FirstOffset, m.Timestamp)
		}
	}
	return true
}

// notWhole reports whether the good bytes are the whole file, saying so
// when they are not.
func notWhole(w io.Writer, good, size int64, what string) bool {
	if good < size {
		fmt.Fprintf(w, "Found %d bytes at position %d that are not a whole %s\n", size-good, good, what)
		return false
	}
	return true
}

// dumpSegment prints the segment of size bytes r reads (from path), one
// batch in memory at a time, and reports whether every byte of it is a
// valid batch; err is a failure to read it.
func dumpSegment(w io.Writer, path string, r io.Reader, size int64, deep, data, offsets bool) (valid bool, err error) {
	if base, ok := segmentBase(path); ok {
		fmt.Fprintf(w, "Log starting offset: %d\n", base)
	}
	valid = true
	pos := 0
	head := make([]byte, batch.HeaderSize)
	for {
		n, err := io.ReadFull(r, head)
		if err == io.EOF {
			return valid, nil
		}
		var h batch.Header
		if err == nil {
			h, err = batch.ParseHeader(head)
		}
		if err == nil && int64(pos)+int64(h.Size()) > size {
			err = fmt.Errorf("%w: a batch of %d bytes, %d left in the file", io.ErrUnexpectedEOF, h.Size(), size-int64(pos))
		}
		var whole []byte
		if err == nil {
			whole = make([]byte, h.Size())
			copy(whole, head)
			var m int
			m, err = io.ReadFull(r, whole[len(head):])
			n += m
		}
		if err != nil {
			if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, batch.ErrCorrupt) && !errors.Is(err, batch.ErrUnsupportedMagic) {
				return false, err
			}
			rest, rerr := io.Copy(io.Discard, r)
			if rerr != nil {
				return false, rerr
			}
			fmt.Fprintf(w, "Found %d bytes at position %d that are not a whole batch: %v\n", int64(n)+rest, pos, err)
			return false, nil
		}
		_, verr := batch.Validate(whole)
		if verr != nil {
			valid = false
		}
		printBatch(w, h, pos, verr)
		if deep && verr == nil {
			if err := printRecords(w, whole, h, data, offsets); err != nil {
				fmt.Fprintf(w, "| records at position %d cannot be read: %v\n", pos, err)
				valid = false
			}
		}
		pos += h.Size()
	}
}

// segmentBase is the base offset a segment's name gives
// (<leader epoch %08x>-<base offset %020d>.log).
func segmentBase(path string) (int64, bool) {
	name := strings.TrimSuffix(filepath.Base(path), ".log")
	_, digits, ok := strings.Cut(name, "-")
	if !ok {
		digits = name
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil
}

// printBatch prints one batch header in kafka-dump-log.sh's words.
func printBatch(w io.Writer, h batch.Header, pos int, verr error) {
	fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d producerId: %d producerEpoch: %d "+
		"partitionLeaderEpoch: %d isTransactional: %t isControl: %t position: %d %s: %d size: %d magic: %d compresscodec: %s crc: %d isvalid: %t\n",
		h.BaseOffset, h.LastOffset(), h.NumRecords, h.BaseSequence, h.LastSequence(), h.ProducerID, h.ProducerEpoch,
		h.LeaderEpoch, h.IsTransactional(), h.IsControl(), pos, timestampType(h), h.MaxTimestamp, h.Size(), h.Magic, codecName(h.Codec()), h.CRC, verr == nil)
	if verr != nil {
		fmt.Fprintf(w, "| invalid: %v\n", verr)
	}
}

// timestampType names what a batch's timestamps are.
func timestampType(h batch.Header) string {
	if h.Attributes&batch.AttrTimestampType != 0 {
		return "LogAppendTime"
	}
	return "CreateTime"
}

func codecName(c int16) string {
	switch c {
	case 0:
		return "none"
	case 1:
		return "gzip"
	case 2:
		return "snappy"
	case 3:
		return "lz4"
	case 4:
		return "zstd"
	}
	return fmt.Sprintf("unknown(%d)", c)
}

// printRecords prints each record of the valid batch b: its offset,
// timestamp and sizes, a control batch's marker, and with data the key,
// value and headers (with offsets, the key and value decoded as
// __consumer_offsets records).
func printRecords(w io.Writer, b []byte, h batch.Header, data, offsets bool) error {
	p, err := batch.Payload(b, h)
	if err != nil {
		return err
	}
	for i := int32(0); i < h.NumRecords; i++ {
		length, n := binary.Varint(p)
		if n <= 0 || length < 0 || int64(len(p)-n) < length {
			return fmt.Errorf("record %d: bad length", i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(p[:n+int(length)]); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		p = p[n+int(length):]
		ts := h.FirstTimestamp + r.TimestampDelta64
		if h.Attributes&batch.AttrTimestampType != 0 {
			ts = h.MaxTimestamp // every record has the batch's append time
		}
		line := fmt.Sprintf("| offset: %d %s: %d keySize: %d valueSize: %d", h.BaseOffset+int64(r.OffsetDelta),
			timestampType(h), ts, nullableLen(r.Key), nullableLen(r.Value))
		if h.HasProducer() && !h.IsControl() {
			line += fmt.Sprintf(" sequence: %d", h.BaseSequence+r.OffsetDelta)
		}
		keys := make([]string, len(r.Headers))
		for j, hd := range r.Headers {
			keys[j] = hd.Key
		}
		line += fmt.Sprintf(" headerKeys: [%s]", strings.Join(keys, ","))
		if h.IsControl() {
			line += " " + controlRecord(r)
		} else if offsets {
			line += " " + decodeOffsetsRecord(r.Key, r.Value)
		} else if data {
			line += fmt.Sprintf(" key: %s payload: %s", printable(r.Key), printable(r.Value))
			for _, hd := range r.Headers {
				line += fmt.Sprintf(" header %s: %s", hd.Key, printable(hd.Value))
			}
		}
		fmt.Fprintln(w, line)
	}
	return nil
}

// controlRecord describes a control record: an end-transaction marker
// names its outcome and coordinator epoch.
func controlRecord(r kmsg.Record) string {
	if len(r.Key) < 4 {
		return "controlRecord: unreadable"
	}
	switch t := int16(binary.BigEndian.Uint16(r.Key[2:])); t {
	case batch.ControlCommit, batch.ControlAbort:
		outcome := "COMMIT"
		if t == batch.ControlAbort {
			outcome = "ABORT"
		}
		epoch := int32(-1)
		if len(r.Value) >= 6 {
			epoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		}
		return fmt.Sprintf("endTxnMarker: %s coordinatorEpoch: %d", outcome, epoch)
	default:
		return fmt.Sprintf("controlRecord: type %d", t)
	}
}

func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// printable is b as text, quoted when it is not plain printable UTF-8.
func printable(b []byte) string {
	if b == nil {
		return "null"
	}
	s := string(b)
	if q := strconv.Quote(s); q[1:len(q)-1] != s {
		return q
	}
	return s
}

// decodeOffsetsRecord decodes a __consumer_offsets record as Kafka's
// --offsets-decoder prints it: the key's type (its version: 0 and 1 a
// committed offset, 2 a classic group's metadata) and fields, the value's
// version and fields, <DELETE> for a tombstone.
func decodeOffsetsRecord(key, value []byte) string {
	type decoded struct {
		Type    string `json:"type,omitempty"`
		Version string `json:"version,omitempty"`
		Data    any    `json:"data"`
	}
	js := func(v decoded) string {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprintf("unprintable: %v", err)
		}
		return string(b)
	}
	if len(key) < 2 {
		return "key: unreadable payload: unreadable"
	}
	var k, v decoded
	k.Type = strconv.Itoa(int(int16(binary.BigEndian.Uint16(key))))
	var readValue func() (any, error)
	switch k.Type {
	case "0", "1":
		var ck kmsg.OffsetCommitKey
		if ck.ReadFrom(key) != nil {
			return "key: unreadable payload: unreadable"
		}
		k.Data = map[string]any{"group": ck.Group, "topic": ck.Topic, "partition": ck.Partition}
		readValue = func() (any, error) {
			var cv kmsg.OffsetCommitValue
			if err := cv.ReadFrom(value); err != nil {
				return nil, err
			}
			d := map[string]any{"offset": cv.Offset, "leaderEpoch": cv.LeaderEpoch, "metadata": cv.Metadata, "commitTimestamp": cv.CommitTimestamp}
			if cv.Version == 1 {
				d["expireTimestamp"] = cv.ExpireTimestamp
			}
			return d, nil
		}
	case "2":
		var gk kmsg.GroupMetadataKey
		if gk.ReadFrom(key) != nil {
			return "key: unreadable payload: unreadable"
		}
		k.Data = map[string]any{"group": gk.Group}
		readValue = func() (any, error) {
			var gv kmsg.GroupMetadataValue
			if err := gv.ReadFrom(value); err != nil {
				return nil, err
			}
			members := make([]map[string]any, len(gv.Members))
			for i, m := range gv.Members {
				members[i] = map[string]any{"memberId": m.MemberID, "groupInstanceId": m.InstanceID, "clientId": m.ClientID, "clientHost": m.ClientHost,
					"rebalanceTimeout": m.RebalanceTimeoutMillis, "sessionTimeout": m.SessionTimeoutMillis, "subscription": m.Subscription, "assignment": m.Assignment}
			}
			return map[string]any{"protocolType": gv.ProtocolType, "generation": gv.Generation, "protocol": gv.Protocol, "leader": gv.Leader,
				"currentStateTimestamp": gv.CurrentStateTimestamp, "members": members}, nil
		}
	default:
		return fmt.Sprintf("key: {\"type\":%q} payload: unknown key type", k.Type)
	}
	if value == nil {
		return "key: " + js(k) + " payload: <DELETE>"
	}
	var err error
	if len(value) < 2 {
		return "key: " + js(k) + " payload: unreadable"
	}
	if v.Data, err = readValue(); err != nil {
		return "key: " + js(k) + " payload: unreadable"
	}
	v.Version = strconv.Itoa(int(int16(binary.BigEndian.Uint16(value))))
	return "key: " + js(k) + " payload: " + js(v)
}
