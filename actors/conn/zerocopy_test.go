package conn

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/storage"
	"github.com/kaas-project/kaas/wire"
)

// fakeFileRecords stands for file-backed records: it remembers how it was
// written.
type fakeFileRecords struct {
	b        []byte
	wroteTo  io.Writer
	appended bool
	closed   bool
}

func (r *fakeFileRecords) Len() int { return len(r.b) }
func (r *fakeFileRecords) AppendTo(dst []byte) ([]byte, error) {
	r.appended = true
	return append(dst, r.b...), nil
}
func (r *fakeFileRecords) WriteTo(w io.Writer) (int64, error) {
	r.wroteTo = w
	n, err := w.Write(r.b)
	return int64(n), err
}
func (r *fakeFileRecords) Close() error { r.closed = true; return nil }

var _ storage.Records = (*fakeFileRecords)(nil)

// TestFetchFrameWriter: a Fetch response with records attached is written
// as encoded bytes interleaved with the records, large file-backed records
// straight to the TCP connection (sendfile), small ones through the write
// buffer; every records piece is closed; the bytes equal kmsg's encoding.
func TestFetchFrameWriter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	big := &fakeFileRecords{b: bytes.Repeat([]byte("B"), 100<<10)}
	small := &fakeFileRecords{b: bytes.Repeat([]byte("s"), 300)}
	mem := storage.BytesRecords(bytes.Repeat([]byte("m"), 5000))

	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	for i, name := range []string{"a", "b", "c", "d"} {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = name
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = int32(i)
		rp.RecordBatches = []byte{}
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
	}
	fr := &fetchResponse{FetchResponse: resp, recs: map[[2]int]storage.Records{{0, 0}: big, {1, 0}: small, {3, 0}: mem}}
	hdr := wire.RequestHeader{Key: 1, Version: 12, CorrelationID: 7, Flexible: true}
	f := encodeFrame(hdr, fr)
	w := bufio.NewWriterSize(c, 64<<10)
	if err := writeFrame(w, c, f); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	out := <-got

	if _, ok := big.wroteTo.(*net.TCPConn); !ok {
		t.Fatalf("large records written to %T, want the *net.TCPConn (sendfile)", big.wroteTo)
	}
	if !small.appended || small.wroteTo != nil {
		t.Fatal("small records not copied through the buffer")
	}
	if !big.closed || !small.closed {
		t.Fatal("records not closed")
	}
	// The same response encoded by kmsg with the batches inline.
	resp.Topics[0].Partitions[0].RecordBatches = big.b
	resp.Topics[1].Partitions[0].RecordBatches = small.b
	resp.Topics[3].Partitions[0].RecordBatches = mem
	if want := wire.AppendResponse(nil, hdr, resp); !bytes.Equal(out, want) {
		t.Fatalf("wrote %d bytes, kmsg encodes %d", len(out), len(want))
	}
}
