//go:build linux

package memlog

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/kaas-project/kaas/storage/sendfile"
)

// TestSentBytesSurviveChunkReuse sends a chunk's bytes with sendfile to a
// loopback connection whose reader has not read them yet, frees the chunk
// and writes other bytes into the chunk the arena hands out next. The
// socket still holds the sent pages, not copies of them: the reader must
// get the bytes as they were sent.
func TestSentBytesSurviveChunkReuse(t *testing.T) {
	a := newArena()
	if a == nil {
		t.Fatal("no memfd arena on Linux")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	dst, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	src := <-accepted
	defer src.Close()

	const n = 64 << 10 // fits the socket buffers: sendfile returns before any read
	sent := bytes.Repeat([]byte("sent"), n/4)
	c := a.get()
	if _, err := a.io.WriteAt(sent, c.off); err != nil {
		t.Fatal(err)
	}
	if w, err, handled := sendfile.Range(src.(*net.TCPConn), a.f, c.off, n); !handled || err != nil || w != n {
		t.Fatalf("sendfile: %d bytes, %v, handled %v", w, err, handled)
	}
	c.release()
	reused := a.get()
	if reused.off != c.off {
		t.Fatalf("the arena handed out the chunk at %d, not the freed one at %d", reused.off, c.off)
	}
	if _, err := a.io.WriteAt(bytes.Repeat([]byte("new!"), n/4), reused.off); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(dst, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, sent) {
		i := 0
		for i < n && got[i] == sent[i] {
			i++
		}
		t.Fatalf("the reader got bytes written after the send, from byte %d: %q", i, got[i:min(i+16, n)])
	}
}
