package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

// BenchmarkProduceTLS measures acks=all produce throughput (as
// BenchmarkProduceAcksAll, 1 KiB records, in memory) to one broker through
// its PLAINTEXT listener (the baseline), its SSL listener and its SASL_SSL
// listener (SCRAM-SHA-512), in the same run:
//
//	go test ./cmd/kaas -run '^$' -bench BenchmarkProduceTLS -benchtime 128x
func BenchmarkProduceTLS(b *testing.B) {
	const topic, partitions = "bench", 6
	ca := tlstest.NewCA(b, "bench CA")
	dir := b.TempDir()
	ca.WriteDir(b, dir, ca.Issue(b, pkix.Name{CommonName: "kaas-0"}, time.Time{}))
	cred, err := sasl.NewScramCredential(sasl.ScramSHA512, "bench-secret", 4096)
	if err != nil {
		b.Fatal(err)
	}
	users := filepath.Join(b.TempDir(), "users.json")
	js, _ := json.Marshal(sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{"bench": {sasl.ScramSHA512: cred}}})
	if err := os.WriteFile(users, js, 0o600); err != nil {
		b.Fatal(err)
	}
	plainAddr, sslAddr, saslAddr := freeAddr(b), freeAddr(b), freeAddr(b)
	cfg, err := parseServe([]string{"--http-addr", "", "--log-level", "warn",
		"--listeners", fmt.Sprintf("PLAINTEXT://%s,SSL://%s,SASL_SSL://%s", plainAddr, sslAddr, saslAddr),
		"--advertised-listeners", fmt.Sprintf("PLAINTEXT://%s,SSL://%s,SASL_SSL://%s", plainAddr, sslAddr, saslAddr),
		"--tls-dir", dir, "--sasl-enabled-mechanisms", "SCRAM-SHA-512", "--sasl-credentials-file", users,
	}, func(string) string { return "" }, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	br, err := startBroker(ctx, cfg, io.Discard)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); br.shutdown() })
	adm := kadm.NewClient(newClient(b, plainAddr))
	if _, err := adm.CreateTopic(context.Background(), partitions, 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	clientTLS := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	for _, target := range []struct {
		name, addr string
		opts       []kgo.Opt
	}{
		{"plaintext", plainAddr, nil},
		{"tls", sslAddr, []kgo.Opt{kgo.DialTLSConfig(clientTLS)}},
		{"sasl_ssl_scram", saslAddr, []kgo.Opt{kgo.DialTLSConfig(clientTLS), kgo.SASL(scramMech("bench", "bench-secret", true))}},
	} {
		b.Run(target.name, func(b *testing.B) {
			benchProduce(b, target.addr, topic, 1024, target.opts...)
		})
	}
}
