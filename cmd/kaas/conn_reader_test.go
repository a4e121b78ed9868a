package main

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connReaders counts the goroutines reading a connection's requests.
func connReaders(t *testing.T) int { return goroutinesIn(t, "conn.(*connActor).read(") }

// TestFailedReauthenticationLeavesNoReader: a re-authentication that
// fails while a Fetch waits, with more requests pipelined behind it than a
// connection takes in flight (64), closes the connection once the Fetch is
// answered; its reader goroutine ends with it rather than waiting for ever
// for room the requests nobody serves never give back.
func TestFailedReauthenticationLeavesNoReader(t *testing.T) {
	e := newSecureEnv(t)
	if r, err := kadm.NewClient(secureClient(t, e.plain)).CreateTopic(ctxFor(t, 10*time.Second), 1, 1, nil, "idle"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	before := connReaders(t)
	f := kmsg.NewRequestFormatter()
	for range 3 {
		c := tlsRaw(t, e, e.saslSSL)
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		if r := rawSASL(t, c, "alice", "alice-secret"); r.ErrorCode != 0 {
			t.Fatalf("SaslAuthenticate: %d", r.ErrorCode)
		}
		fetch := kmsg.NewPtrFetchRequest()
		fetch.SetVersion(11)
		fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 1500, 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "idle"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		fetch.Topics = append(fetch.Topics, ft)
		burst := f.AppendRequest(nil, fetch, 3)
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.SetVersion(1)
		hs.Mechanism = "PLAIN"
		burst = append(burst, f.AppendRequest(nil, hs, 4)...)
		au := kmsg.NewPtrSASLAuthenticateRequest()
		au.SetVersion(1)
		au.SASLAuthBytes = []byte("\x00alice\x00wrong")
		burst = append(burst, f.AppendRequest(nil, au, 5)...)
		for i := range 200 {
			burst = append(burst, f.AppendRequest(nil, kmsg.NewPtrMetadataRequest(), int32(6+i))...)
		}
		if _, err := c.Write(burst); err != nil {
			t.Fatal(err)
		}
		// The Fetch's, the handshake's and the failed authentication's
		// answers, then the connection closes.
		for i := range 3 {
			_, err := readFrame(t, c)
			if err != nil {
				t.Fatalf("answer %d: %v", i, err)
			}
		}
		assertClosed(t, c, "requests after a failed re-authentication")
		c.Close()
	}
	waitUntil(t, 10*time.Second, "the closed connections' readers gone", func() bool { return connReaders(t) <= before })
}
