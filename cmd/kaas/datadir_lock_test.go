package main

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLocalDataDirIsLocked: a local broker holds a lock on its --data-dir,
// as a Kafka broker holds one on each log dir. A second broker on the dir
// (a process, or one in-process) is refused at start with a message naming
// the directory, and the first one serves on; the lock goes with the
// process that held it, so after a kill -9 the next broker starts on the
// dir and finds every acknowledged record, and a broker stopped cleanly
// releases it.
func TestLocalDataDirIsLocked(t *testing.T) {
	dir := t.TempDir()
	first := startKaas(t, "--data-dir", dir)
	ctx := ctxT(t, time.Minute)
	cl := newClient(t, first.Addr, kgo.DefaultProduceTopic("locked"), kgo.AllowAutoTopicCreation())
	for i := range 10 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const refusal = "is in use by another kaas broker"
	second := exec.CommandContext(ctx, kaasBinary(t), "--data-dir", dir, "--kafka-addr", freeAddr(t), "--http-addr", freeAddr(t))
	out, err := second.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 || !strings.Contains(string(out), refusal) || !strings.Contains(string(out), dir) {
		t.Fatalf("a second broker on the data dir: %v\n%s", err, out)
	}
	cfg, err := parseServe([]string{"--data-dir", dir, "--kafka-addr", freeAddr(t), "--http-addr", ""}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := startBroker(context.Background(), cfg, io.Discard); err == nil || !strings.Contains(err.Error(), refusal) {
		if b != nil {
			b.shutdown()
		}
		t.Fatalf("an in-process broker on the data dir: %v", err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("10")).FirstErr(); err != nil {
		t.Fatalf("the first broker after the refusals: %v", err)
	}
	first.kill()
	next := startKaas(t, "--data-dir", dir)
	cons := newClient(t, next.Addr, kgo.ConsumeTopics("locked"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < 11 {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("read after the kill: %v (read %v)", err, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if strings.Join(got, ",") != "0,1,2,3,4,5,6,7,8,9,10" {
		t.Fatalf("read after the kill: %v", got)
	}
	cons.Close()
	next.stop(t)
	_, stop := startBrokerArgs(t, "--data-dir", dir, "--kafka-addr", freeAddr(t), "--http-addr", "")
	stop()
}
