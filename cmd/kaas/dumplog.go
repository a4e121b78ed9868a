package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
)

// runDumpLog is `kaas dump-log`: what Kafka's kafka-dump-log.sh prints of a
// segment file, for the segments on the shared volume (record batches as
// produced, so Kafka's own tool reads them too where Java is at hand). Each
// batch's header and whether its CRC holds; with --deep-iteration every
// record, with --print-data-log their keys, values and headers too. A file
// with an invalid batch or bytes that are not a whole batch is an error
// (after printing it all).
func runDumpLog(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dump-log", flag.ContinueOnError)
	fs.SetOutput(stderr)
	files := fs.String("files", "", "comma-separated segment `files` (.log); also taken as arguments")
	deep := fs.Bool("deep-iteration", false, "print every record, not only each batch")
	data := fs.Bool("print-data-log", false, "print every record with its key, value and headers (implies --deep-iteration)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: kaas dump-log [--deep-iteration] [--print-data-log] FILE.log ...")
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
		return errors.New("dump-log: no segment file given")
	}
	var bad []string
	for _, p := range paths {
		if filepath.Ext(p) != ".log" {
			return fmt.Errorf("dump-log: %s: only segment files (.log) can be dumped", p)
		}
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("dump-log: %w", err)
		}
		var ok bool
		st, err := f.Stat()
		if err == nil {
			ok, err = dumpSegment(stdout, p, bufio.NewReaderSize(f, 1<<20), st.Size(), *deep || *data, *data)
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

// dumpSegment prints the segment of size bytes r reads (from path), one
// batch in memory at a time, and reports whether every byte of it is a
// valid batch; err is a failure to read it.
func dumpSegment(w io.Writer, path string, r io.Reader, size int64, deep, data bool) (valid bool, err error) {
	fmt.Fprintf(w, "Dumping %s\n", path)
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
			if err := printRecords(w, whole, h, data); err != nil {
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
// value and headers.
func printRecords(w io.Writer, b []byte, h batch.Header, data bool) error {
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
