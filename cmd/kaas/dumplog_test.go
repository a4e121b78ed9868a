package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/storage/batch"
)

// kaas dump-log reads the segments a broker wrote on --data-dir: an
// idempotent gzip batch with headers, a transaction's batch and its commit
// marker; then a damaged copy is reported invalid.
func TestDumpLogReadsSegments(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startDiskBroker(t, dir)
	ctx := ctxT(t, 60*time.Second)
	if _, err := newAdmin(t, addr).CreateTopic(ctx, 1, 1, nil, "dumped"); err != nil {
		t.Fatal(err)
	}
	plain := newClient(t, addr, kgo.DefaultProduceTopic("dumped"), kgo.ProducerBatchCompression(kgo.GzipCompression()))
	rec := &kgo.Record{Key: []byte("k1"), Value: []byte("hello"), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}}
	long := &kgo.Record{Value: []byte(strings.Repeat("compressible ", 100))} // so that gzip pays
	if err := plain.ProduceSync(ctx, rec, &kgo.Record{Value: []byte("bin\x00ary")}, long).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn := newClient(t, addr, kgo.DefaultProduceTopic("dumped"), kgo.TransactionalID("dump-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Key: []byte("t"), Value: []byte("in txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// Wait for the marker to be written before a clean shutdown.
	waitUntil(t, 10*time.Second, "the commit marker written", func() bool {
		o, err := newAdmin(t, addr).ListEndOffsets(ctx, "dumped")
		e, _ := o.Lookup("dumped", 0)
		return err == nil && e.Offset == 5
	})
	stop()

	segs, _ := filepath.Glob(filepath.Join(dir, "dumped-0-*", "*.log"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"dump-log", "--print-data-log", segs[0]}, &out, &errOut); code != 0 {
		t.Fatalf("dump-log exited %d: %s\n%s", code, errOut.String(), out.String())
	}
	got := out.String()
	for _, want := range []string{
		"Dumping " + segs[0] + "\nLog starting offset: 0\n",
		"baseOffset: 0 lastOffset: 2 count: 3 baseSequence: 0 lastSequence: 2 producerId: ",
		"isTransactional: false isControl: false position: 0 CreateTime: ",
		"compresscodec: gzip crc: ",
		"| offset: 0 CreateTime: ",
		"keySize: 2 valueSize: 5 sequence: 0 headerKeys: [h] key: k1 payload: hello header h: v\n",
		"keySize: -1 valueSize: 7 sequence: 1 headerKeys: [] key: null payload: \"bin\\x00ary\"\n",
		"keySize: -1 valueSize: 1300 sequence: 2 headerKeys: [] key: null payload: compressible compressible ",
		"baseOffset: 3 lastOffset: 3 count: 1 ",
		"isTransactional: true isControl: false",
		"key: t payload: in txn\n",
		"baseOffset: 4 lastOffset: 4 count: 1 ",
		"isTransactional: true isControl: true",
		"| offset: 4 CreateTime: ",
		"endTxnMarker: COMMIT coordinatorEpoch: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "isvalid: true"); n != 3 {
		t.Errorf("%d valid batches, want 3:\n%s", n, got)
	}

	// Without --deep-iteration, batches only.
	out.Reset()
	if code := run([]string{"dump-log", "--files", segs[0]}, &out, &errOut); code != 0 || strings.Contains(out.String(), "| offset") {
		t.Fatalf("batches only: exit %d\n%s", code, out.String())
	}

	// A flipped byte in the second batch, and a torn tail.
	b, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	pos := regexp.MustCompile(`baseOffset: 3 .* position: (\d+) `).FindStringSubmatch(got)
	if pos == nil {
		t.Fatalf("no position for the batch at offset 3:\n%s", got)
	}
	at, _ := strconv.Atoi(pos[1])
	b[at+70] ^= 0xff
	b = append(b, 0, 0, 0)
	damaged := filepath.Join(t.TempDir(), "00000000-00000000000000000000.log")
	if err := os.WriteFile(damaged, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := run([]string{"dump-log", "--deep-iteration", damaged}, &out, &errOut); code == 0 {
		t.Fatalf("a damaged segment passed:\n%s", out.String())
	}
	got = out.String()
	for _, want := range []string{"isvalid: false", "| invalid: ", "crc32c mismatch", "Found 3 bytes at position " + strconv.Itoa(len(b)-3) + " that are not a whole batch"} {
		if !strings.Contains(got, want) {
			t.Errorf("damaged output lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(errOut.String(), "invalid data in "+damaged) {
		t.Errorf("stderr %q", errOut.String())
	}
	if n := strings.Count(got, "isvalid: true"); n != 2 {
		t.Errorf("%d valid batches around the damaged one, want 2:\n%s", n, got)
	}

	// A length field past the end of the file: reported, not allocated.
	huge := append([]byte(nil), b[:len(b)-3]...)
	huge[at+8], huge[at+9], huge[at+10], huge[at+11] = 0x7f, 0xff, 0xff, 0xff
	if err := os.WriteFile(damaged, huge, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"dump-log", damaged}, &out, &errOut); code == 0 ||
		!strings.Contains(out.String(), "bytes at position "+pos[1]+" that are not a whole batch") {
		t.Fatalf("a length past the end: exit %d\n%s", code, out.String())
	}

	// A batch with LogAppendTime: each record has the batch's append time,
	// not the producer's timestamps.
	lat := batch.Build(batch.Spec{ProducerID: -1, Timestamp: 1000, Values: [][]byte{[]byte("a"), []byte("b")}})
	batch.SetLogAppendTime(lat, 5000)
	latFile := filepath.Join(t.TempDir(), "00000000-00000000000000000000.log")
	if err := os.WriteFile(latFile, lat, 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"dump-log", "--deep-iteration", latFile}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "LogAppendTime: 5000 size: ") || strings.Count(out.String(), "LogAppendTime: 5000 keySize: ") != 2 {
		t.Fatalf("LogAppendTime batch: exit %d\n%s", code, out.String())
	}

	// Not a segment.
	if code := run([]string{"dump-log", filepath.Join(filepath.Dir(segs[0]), "leader-epoch-checkpoint")}, &out, &errOut); code == 0 {
		t.Fatal("dump-log accepted a file that is not a segment")
	}
}
