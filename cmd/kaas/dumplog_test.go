package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/storage/groupstore"
	"github.com/kaas-project/kaas/storage/sharestate"
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

// kaas dump-log reads the volume's other files, from the volume fixture: a
// group's offsets log, a transactional id's log, a share-partition's state
// and, with --offsets-decoder, __consumer_offsets; then a share state with
// records, a GroupMetadata record and a tombstone, damaged logs and a file
// it does not know.
func TestDumpLogReadsTheVolumesFiles(t *testing.T) {
	dir := t.TempDir()
	readTarGz(t, volumeFixture, dir)
	data := filepath.Join(dir, "data")
	dump := func(args ...string) (string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := run(append([]string{"dump-log"}, args...), &out, &errOut)
		return out.String() + errOut.String(), code
	}
	expect := func(got string, wants ...string) {
		t.Helper()
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("output lacks %q:\n%s", want, got)
			}
		}
	}
	billing := filepath.Join(data, "__groups", groupstore.DirName("billing"), "offsets.log")
	got, code := dump(billing)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	expect(got, "position: 0 group: billing\n", "meta type: classic",
		"commit topic: events partition: 0 offset: 50 leaderEpoch: -1 metadata: b0 commitTimestamp: ",
		"commit topic: events partition: 2 offset: 70 leaderEpoch: -1 metadata: b2 ")
	open := filepath.Join(data, "__transactions", groupstore.DirName("tx-open")+".log")
	got, code = dump(open)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	expect(lines[len(lines)-1], "transactionalId: tx-open ", "state: Ongoing timeoutMs: 10000 partitions: [ledger-0,ledger-1]")
	got, code = dump(filepath.Join(data, "__share", groupstore.DirName("sharers"), "events-1.state"))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	expect(got, "startOffset: 42 records: 0\n")
	segs, _ := filepath.Glob(filepath.Join(data, "__consumer_offsets-*", "*.log"))
	got, code = dump(append([]string{"--offsets-decoder"}, segs...)...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	expect(got, `key: {"type":"1","data":{"group":"billing","partition":1,"topic":"events"}} payload: {"version":"3","data":{"commitTimestamp":`,
		`"leaderEpoch":-1,"metadata":"b1","offset":60}}`)

	// A share state with records, in runs of state and delivery count.
	share := filepath.Join(t.TempDir(), sharestate.Dir, "g", "t-0.state")
	if err := os.MkdirAll(filepath.Dir(share), 0o755); err != nil {
		t.Fatal(err)
	}
	snap := sharestate.Snapshot{Start: 5, States: []uint8{1, 1, 2, 0}, Counts: []int16{1, 1, 1, 0}}
	if err := os.WriteFile(share, sharestate.Encode(snap), 0o644); err != nil {
		t.Fatal(err)
	}
	got, _ = dump(share)
	expect(got, "topicId: none startOffset: 5 records: 4\n", "| offsets: 5-6 state: acquired deliveryCount: 1\n",
		"| offsets: 7-7 state: acknowledged deliveryCount: 1\n", "| offsets: 8-8 state: available deliveryCount: 0\n")

	// A classic group's GroupMetadata and an offset's tombstone.
	gk := kmsg.GroupMetadataKey{Version: 2, Group: "g"}
	gv := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 4, Protocol: kmsg.StringPtr("range"), Leader: kmsg.StringPtr("m1"),
		CurrentStateTimestamp: 1000,
		Members:               []kmsg.GroupMetadataValueMember{{MemberID: "m1", ClientID: "c1", ClientHost: "/10.0.0.1", RebalanceTimeoutMillis: 60000, SessionTimeoutMillis: 45000, Assignment: []byte{1, 2}}}}
	ok := kmsg.OffsetCommitKey{Version: 1, Group: "g", Topic: "t", Partition: 3}
	seg := filepath.Join(t.TempDir(), "00000000-00000000000000000000.log")
	b := batch.Build(batch.Spec{ProducerID: -1, Timestamp: 1000, Keys: [][]byte{gk.AppendTo(nil), ok.AppendTo(nil)}, Values: [][]byte{gv.AppendTo(nil), nil}})
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, code = dump("--offsets-decoder", seg)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, got)
	}
	expect(got, `key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"currentStateTimestamp":1000,"generation":4,"leader":"m1",`,
		`"members":[{"assignment":"AQI=","clientHost":"/10.0.0.1","clientId":"c1","groupInstanceId":null,"memberId":"m1","rebalanceTimeout":60000,"sessionTimeout":45000,"subscription":""}],"protocol":"range","protocolType":"consumer"}}`,
		`key: {"type":"1","data":{"group":"g","partition":3,"topic":"t"}} payload: <DELETE>`)

	// A torn tail after a group's and a transaction's log: reported, the
	// whole records printed before it.
	for _, src := range []string{billing, open} {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		// The copy keeps the two directories that say what the file is.
		rel, _ := filepath.Rel(filepath.Dir(filepath.Dir(filepath.Dir(src))), src)
		torn := filepath.Join(t.TempDir(), rel)
		if err := os.MkdirAll(filepath.Dir(torn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(torn, append(raw, 0, 0, 0, 9, 1), 0o644); err != nil {
			t.Fatal(err)
		}
		got, code = dump(torn)
		if code == 0 {
			t.Fatalf("%s with a torn tail passed:\n%s", torn, got)
		}
		expect(got, "position: 0 ", fmt.Sprintf("Found 5 bytes at position %d that are not a whole record", len(raw)), "invalid data in "+torn)
	}
	if got, code = dump(filepath.Join(data, "acls.json")); code == 0 || !strings.Contains(got, "not a segment") {
		t.Errorf("acls.json: exit %d:\n%s", code, got)
	}
}

// kaas dump-log reads a partition's indexes and producer snapshot as a
// broker on --data-dir wrote them: every index entry names the batch at its
// position, the trailer where the segment ends, the snapshot the producers
// that wrote (an idempotent one, a transactional one with a transaction
// left open); then damaged copies, an index beside the wrong segment and a
// damaged snapshot fail.
func TestDumpLogReadsIndexesAndProducerSnapshot(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startDiskBroker(t, dir)
	ctx := ctxT(t, 60*time.Second)
	segBytes, interval := "4096", "600"
	if _, err := newAdmin(t, addr).CreateTopic(ctx, 1, 1, map[string]*string{"segment.bytes": &segBytes, "index.interval.bytes": &interval}, "indexed"); err != nil {
		t.Fatal(err)
	}
	idem := newClient(t, addr, kgo.DefaultProduceTopic("indexed"), kgo.ProducerBatchCompression(kgo.NoCompression()))
	var idemLast int64
	const idemRecords = 40
	for i := range idemRecords {
		r, err := idem.ProduceSync(ctx, &kgo.Record{Value: []byte(strings.Repeat("v", 200) + strconv.Itoa(i))}).First()
		if err != nil {
			t.Fatal(err)
		}
		idemLast = r.Offset
	}
	idemID, idemEpoch, err := idem.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	txn := newClient(t, addr, kgo.DefaultProduceTopic("indexed"), kgo.TransactionalID("dump-index-txn"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("committed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	open, err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("left open")}).First()
	if err != nil {
		t.Fatal(err)
	}
	txnID, txnEpoch, err := txn.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stop() // the partition's close writes the index trailers

	// A broker writes producers.snapshot at an open that finds none, at a
	// maintenance tick after the log grew (every 30 s here: none ran) and
	// when it hands a partition over; a stop closes without one. Without
	// the one written when the topic was created, a restart writes the
	// state recovered from the log.
	snaps, _ := filepath.Glob(filepath.Join(dir, "indexed-0-*", "producers.snapshot"))
	if len(snaps) != 1 {
		t.Fatalf("snapshots %v", snaps)
	}
	if err := os.Remove(snaps[0]); err != nil {
		t.Fatal(err)
	}
	addr, stop = startDiskBroker(t, dir)
	waitUntil(t, 10*time.Second, "the partition reopened", func() bool {
		o, err := newAdmin(t, addr).ListEndOffsets(ctx, "indexed")
		e, _ := o.Lookup("indexed", 0)
		return err == nil && e.Err == nil && e.Offset == open.Offset+1
	})
	stop()

	dump := func(args ...string) (string, int) {
		t.Helper()
		out, errOut, code := runKaas(t, append([]string{"dump-log"}, args...)...)
		return out + errOut, code
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "indexed-0-*", "*.log"))
	if len(logs) < 3 {
		t.Fatalf("want several segments, got %v", logs)
	}
	entryLine := regexp.MustCompile(`(?m)^offset: (\d+) position: (\d+) timestamp: (-?\d+) timestampOffset: (-?\d+)$`)
	trailerLine := regexp.MustCompile(`(?m)^trailer baseOffset: (\d+) nextOffset: (\d+) size: (\d+) `)
	t.Run("index", func(t *testing.T) {
		for i, segPath := range logs {
			seg, err := os.ReadFile(segPath)
			if err != nil {
				t.Fatal(err)
			}
			batchAt := map[int64]int64{} // position -> base offset, read with the batch package
			var next int64
			for pos := 0; pos < len(seg); {
				h, err := batch.ParseHeader(seg[pos:])
				if err != nil {
					t.Fatal(err)
				}
				batchAt[int64(pos)], next = h.BaseOffset, h.NextOffset()
				pos += h.Size()
			}
			idx := strings.TrimSuffix(segPath, ".log") + ".index"
			got, code := dump(idx)
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", idx, code, got)
			}
			entries := entryLine.FindAllStringSubmatch(got, -1)
			if len(entries) < 2 {
				t.Fatalf("%s: %d entries, want several:\n%s", idx, len(entries), got)
			}
			for _, e := range entries {
				off, _ := strconv.ParseInt(e[1], 10, 64)
				pos, _ := strconv.ParseInt(e[2], 10, 64)
				if base, ok := batchAt[pos]; !ok || base != off {
					t.Errorf("%s: entry %q: the batch at that position has offset %d (a boundary: %t)", idx, e[0], base, ok)
				}
			}
			tr := trailerLine.FindStringSubmatch(got)
			if tr == nil || tr[2] != strconv.FormatInt(next, 10) || tr[3] != strconv.Itoa(len(seg)) {
				t.Errorf("%s: trailer %q; segment ends at offset %d after %d bytes", idx, tr, next, len(seg))
			}
			if !strings.HasPrefix(got, "Dumping "+idx+"\n") || !strings.Contains(got, "\nIndex CRC valid\n") {
				t.Errorf("%s:\n%s", idx, got)
			}
			if i == len(logs)-1 && next != open.Offset+1 {
				t.Errorf("the last segment ends at %d, the open transaction's record is at %d", next, open.Offset)
			}
			if got, code := dump("--index-sanity-check", idx); code != 0 || got != "Dumping "+idx+"\n"+idx+" passed sanity check.\n" {
				t.Errorf("sanity check: exit %d\n%s", code, got)
			}
			if got, code := dump("--verify-index-only", idx); code != 0 || got != "Dumping "+idx+"\n" {
				t.Errorf("verify only: exit %d\n%s", code, got)
			}
		}
	})

	t.Run("damaged index", func(t *testing.T) {
		idx := strings.TrimSuffix(logs[0], ".log") + ".index"
		good, err := os.ReadFile(idx)
		if err != nil {
			t.Fatal(err)
		}
		seg, err := os.ReadFile(logs[0])
		if err != nil {
			t.Fatal(err)
		}
		other, err := os.ReadFile(logs[1])
		if err != nil {
			t.Fatal(err)
		}
		// copyAs writes an index and a segment under the first segment's names.
		copyAs := func(index, segment []byte) string {
			d := t.TempDir()
			p := filepath.Join(d, filepath.Base(idx))
			if err := os.WriteFile(p, index, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, filepath.Base(logs[0])), segment, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		flipped := bytes.Clone(good)
		flipped[20+3] ^= 1 // the second entry's offset (20-byte entries: offset, position, timestamp, its offset)
		p := copyAs(flipped, seg)
		for _, flag := range []string{"--index-sanity-check", "--verify-index-only"} {
			got, code := dump(flag, p)
			if code == 0 || !strings.Contains(got, "Index is invalid (the broker rebuilds it from the segment when it opens the partition): invalid index: index entries fail their CRC-32C") ||
				!strings.Contains(got, "Mismatches in :"+p+"\n  Index offset: ") || strings.Contains(got, "passed sanity check") {
				t.Errorf("%s on a flipped entry: exit %d\n%s", flag, code, got)
			}
		}
		p = copyAs(good[:len(good)-10], seg)
		if got, code := dump(p); code == 0 || !strings.Contains(got, "Index is invalid (the broker rebuilds it from the segment when it opens the partition): invalid index: no index trailer") {
			t.Errorf("a cut index: exit %d\n%s", code, got)
		}
		// An intact index beside another segment: its CRC holds, the segment disagrees.
		p = copyAs(good, other)
		got, code := dump("--verify-index-only", p)
		if code == 0 || strings.Contains(got, "Index is invalid") || !strings.Contains(got, "Mismatches in :"+p+"\n  Index offset: 0, log offset: ") ||
			!strings.Contains(got, "Trailer does not match the segment in :"+p+"\n") || !strings.Contains(got, "\n  Trailer next offset: ") {
			t.Errorf("an index beside another segment: exit %d\n%s", code, got)
		}
		if after, _ := os.ReadFile(idx); !bytes.Equal(after, good) {
			t.Error("dump-log changed the index it read")
		}
	})

	t.Run("producer snapshot", func(t *testing.T) {
		got, code := dump(snaps[0])
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, got)
		}
		want := []string{
			fmt.Sprintf("Snapshot offset: %d producers: 2\n", open.Offset+1),
			fmt.Sprintf("producerId: %d producerEpoch: %d currentTxnFirstOffset: -1 lastTimestamp: ", idemID, idemEpoch),
			fmt.Sprintf("producerId: %d producerEpoch: %d currentTxnFirstOffset: %d lastTimestamp: ", txnID, txnEpoch, open.Offset),
			fmt.Sprintf("| firstSequence: %d lastSequence: %d firstOffset: %d lastOffset: %d offsetDelta: 0 timestamp: ", idemRecords-1, idemRecords-1, idemLast, idemLast),
			// The open transaction's batch is the first of the producer's current epoch.
			fmt.Sprintf("batches: 1\n| firstSequence: 0 lastSequence: 0 firstOffset: %d lastOffset: %d offsetDelta: 0 timestamp: ", open.Offset, open.Offset),
		}
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("output lacks %q:\n%s", w, got)
			}
		}
		// The idempotent producer's last five batches are remembered, the oldest first.
		if first := fmt.Sprintf("| firstSequence: %d ", idemRecords-5); !strings.Contains(got, " batches: 5\n"+first) {
			t.Errorf("output lacks the idempotent producer's five batches from sequence %d:\n%s", idemRecords-5, got)
		}
		raw, err := os.ReadFile(snaps[0])
		if err != nil {
			t.Fatal(err)
		}
		raw[5] ^= 1
		bad := filepath.Join(t.TempDir(), "producers.snapshot")
		if err := os.WriteFile(bad, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, code := dump(bad); code == 0 || !strings.Contains(got, "Not a producer snapshot: ") || !strings.Contains(got, "fails its checksum") {
			t.Errorf("a damaged snapshot: exit %d\n%s", code, got)
		}
	})

	t.Run("first layout", func(t *testing.T) {
		// testdata/layout1 was written by kaas's first index layout (storage/disklog TestOpensFirstLayout).
		old := filepath.Join("..", "..", "storage", "disklog", "testdata", "layout1", "00000001-00000000000000000010")
		got, code := dump(old + ".timeindex")
		if code != 0 || !strings.Contains(got, "\ntimestamp: -1 offset: -1\ntimestamp: 1061 offset: 12\ntimestamp: 1081 offset: 16\n") ||
			!strings.Contains(got, "layout: index+timeindex\nIndex CRC valid\n") {
			t.Errorf("exit %d\n%s", code, got)
		}
		if got, code := dump(old + ".index"); code != 0 || !strings.Contains(got, "\noffset: 14 position: 558\n") {
			t.Errorf("exit %d\n%s", code, got)
		}
	})
}
