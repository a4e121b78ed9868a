// Command etcd is a single-member embedded etcd for test environments: loopback only,
// no TLS, fsync disabled (data loss on a crash is fine for tests; speed matters).
//
//	etcd --data-dir DIR --client-url http://127.0.0.1:PORT --peer-url http://127.0.0.1:PORT
//
// It prints "etcd ready <client-url>" on stdout once it serves, and exits 0 on SIGTERM/SIGINT.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory (required)")
	clientURL := flag.String("client-url", "http://127.0.0.1:2379", "client listen and advertise URL")
	peerURL := flag.String("peer-url", "http://127.0.0.1:2380", "peer listen and advertise URL")
	logLevel := flag.String("log-level", "warn", "debug, info, warn, error")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("etcd: --data-dir is required")
	}
	cu, err := url.Parse(*clientURL)
	if err != nil {
		log.Fatalf("etcd: --client-url: %v", err)
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		log.Fatalf("etcd: --peer-url: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Name = "testenv"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = *logLevel
	cfg.LogOutputs = []string{"stderr"}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: start: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Server.Stop()
		log.Fatal("etcd: not ready after 60s")
	}
	fmt.Printf("etcd ready %s\n", cu)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Printf("etcd: %v, stopping", s)
		e.Close()
	case err := <-e.Err():
		e.Close()
		log.Fatalf("etcd: %v", err)
	}
}
