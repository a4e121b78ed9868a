package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/wire"
)

// recordingProxy forwards TCP connections to target and records every
// client->broker frame.
type recordingProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	frames [][]byte
}

func startRecordingProxy(t *testing.T, ln net.Listener, target string) *recordingProxy {
	p := &recordingProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.handle(c)
		}
	}()
	return p
}

func (p *recordingProxy) handle(c net.Conn) {
	defer c.Close()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(c, up) }()
	for {
		frame, err := wire.ReadFrame(c, 1<<30)
		if err != nil {
			return
		}
		p.mu.Lock()
		p.frames = append(p.frames, frame)
		p.mu.Unlock()
		out := binary.BigEndian.AppendUint32(nil, uint32(len(frame)))
		if _, err := up.Write(append(out, frame...)); err != nil {
			return
		}
	}
}

// TestRecordedClientTrafficDecodes drives a real franz-go client through a
// recording proxy and checks that every request it sent decodes. With
// KAAS_WRITE_FUZZ_SEEDS=1 it also writes the frames as the wire fuzz seed
// corpus (wire/testdata/fuzz/FuzzDecodeRequest).
func TestRecordedClientTrafficDecodes(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	proxyAddr := ln.Addr().String()
	ln.Close()
	_, addr := testBroker(t, "--advertised-addr", proxyAddr)
	proxyLn, err := net.Listen("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	p := startRecordingProxy(t, proxyLn, addr)

	ctx := ctxT(t, 20*time.Second)
	createTopic(t, proxyAddr, "traffic", 3, map[string]*string{"retention.ms": sp("3600000")})
	cl := newClient(t, proxyAddr, kgo.DefaultProduceTopic("traffic"))
	for i := 0; i < 50; i++ {
		cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("value")}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cons := newClient(t, proxyAddr, kgo.ConsumeTopics("traffic"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	n := 0
	for n < 50 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += len(fs.Records())
	}
	adm := newAdmin(t, proxyAddr)
	_, _ = adm.DescribeTopicConfigs(ctx, "traffic")
	_, _ = adm.ListStartOffsets(ctx, "traffic")
	_, _ = adm.DeleteTopics(ctx, "traffic")

	p.mu.Lock()
	frames := append([][]byte(nil), p.frames...)
	p.mu.Unlock()
	if len(frames) < 10 {
		t.Fatalf("recorded only %d frames", len(frames))
	}
	keys := map[int16]bool{}
	for i, f := range frames {
		hdr, body, err := wire.ParseHeader(f)
		if err != nil {
			t.Fatalf("frame %d header: %v", i, err)
		}
		if _, err := wire.DecodeBody(hdr, body); err != nil {
			t.Fatalf("frame %d (%s v%d): %v", i, kmsg.NameForKey(hdr.Key), hdr.Version, err)
		}
		keys[hdr.Key] = true
	}
	for _, k := range []kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.Produce, kmsg.Fetch, kmsg.CreateTopics, kmsg.InitProducerID} {
		if !keys[k.Int16()] {
			t.Errorf("recorded traffic has no %s request", kmsg.NameForKey(k.Int16()))
		}
	}
	if os.Getenv("KAAS_WRITE_FUZZ_SEEDS") != "" {
		dir := filepath.Join("..", "..", "wire", "testdata", "fuzz", "FuzzDecodeRequest")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		seen := map[int16]int{}
		for _, f := range frames {
			k := int16(binary.BigEndian.Uint16(f))
			if seen[k] >= 3 || len(f) > 64<<10 {
				continue
			}
			seen[k]++
			name := fmt.Sprintf("franz-go-%s-%x", kmsg.NameForKey(k), sha256.Sum256(f))[:40]
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", f)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
