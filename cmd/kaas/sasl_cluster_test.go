package main

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kaas-project/kaas/storage/delegation"
	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles/tlstest"
)

// writeScramUsers writes a credentials file holding SCRAM-SHA-256 and
// SCRAM-SHA-512 credentials for each user, whose password is user+"-secret".
func writeScramUsers(t *testing.T, users ...string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "users.json")
	writeScramUsersTo(t, f, users...)
	return f
}

// writeScramUsersTo writes writeScramUsers' file to f.
func writeScramUsersTo(t *testing.T, f string, users ...string) {
	t.Helper()
	creds := sasl.Credentials{Users: map[string]map[string]sasl.ScramCredential{}}
	for _, u := range users {
		creds.Users[u] = map[string]sasl.ScramCredential{}
		for _, m := range []string{sasl.ScramSHA256, sasl.ScramSHA512} {
			c, err := sasl.NewScramCredential(m, u+"-secret", 4096)
			if err != nil {
				t.Fatal(err)
			}
			creds.Users[u][m] = c
		}
	}
	b, err := json.Marshal(creds)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// kafkaCode is the Kafka error code in err, or 0.
func kafkaCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return 0
}

// TestSASLSSLClusterWithACLs: three brokers in cluster mode with one
// SASL_SSL listener each (no PLAINTEXT anywhere), mutual TLS on the
// heartbeat port and ACLs. The brokers send each other transaction markers
// as the inter-broker SASL user. franz-go, kcat, sarama and kafkajs, each
// logged in as its own SCRAM user, produce and consume what their ACLs
// grant, and every request beyond that is refused with Kafka's error code.
func TestSASLSSLClusterWithACLs(t *testing.T) {
	kcat := requireTool(t, "kcat")
	jsDir := kafkajsDir(t)
	ca := tlstest.NewCA(t, "kaas cluster CA")
	tlsDir := t.TempDir()
	ca.WriteDir(t, tlsDir, ca.Issue(t, pkix.Name{CommonName: "kaas"}, time.Time{}))
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	passFile := filepath.Join(t.TempDir(), "password")
	for f, b := range map[string][]byte{caFile: ca.CertPEM, passFile: []byte("kaas-broker-secret\n")} {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	users := writeScramUsers(t, "admin", "kaas-broker", "franz", "kcat", "kafkajs", "sarama")

	api := startAPIServer(t)
	c := newKaasCluster(t, api, append([]string{
		"--tls-dir", tlsDir, "--heartbeat-tls",
		"--sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", "--sasl-credentials-file", users,
		"--inter-broker-sasl-user", "kaas-broker", "--inter-broker-sasl-password-file", passFile,
		"--authorizer", "acl", "--super-users", "User:admin;User:kaas-broker",
		"--delegation-token-secret-key", "cluster-token-secret",
	}, clusterFlags...)...)
	c.listener = "SASL_SSL"
	for _, n := range []string{"kaas-0", "kaas-1", "kaas-2"} {
		c.start(n)
	}
	waitUntil(t, 60*time.Second, "a controller elected", func() bool {
		_, ctrl, _ := c.ledBy()
		return ctrl != ""
	})
	tlsCfg := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
	as := func(user string, opts ...kgo.Opt) *kgo.Client {
		return c.client(append([]kgo.Opt{kgo.DialTLSConfig(tlsCfg.Clone()), kgo.SASL(scramMech(user, user+"-secret", true))}, opts...)...)
	}

	// No PLAINTEXT: a plaintext Kafka request gets no answer.
	raw := rawConn(t, c.brokers["kaas-0"].kafka)
	_, _ = raw.Write(frame(18, 0, 1, nil))
	assertClosed(t, raw, "plaintext request to a SASL_SSL-only broker")

	// The admin (a super user) creates the topics and the ACLs.
	admin := as("admin")
	adm := kadm.NewClient(admin)
	ctx := ctxFor(t, 240*time.Second)
	if r, err := adm.CreateTopic(ctx, 6, 1, nil, "franz-t"); err != nil || r.Err != nil {
		t.Fatalf("create franz-t: %v %v", err, r.Err)
	}
	waitUntil(t, 60*time.Second, "franz-t led 2 partitions per broker", func() bool {
		led, _, _ := c.ledBy()
		return led["kaas-0"] == 2 && led["kaas-1"] == 2 && led["kaas-2"] == 2
	})
	for _, topic := range []string{"franz-wo", "kcat-t", "js-t", "sarama-t", "secret-t"} {
		if r, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, r.Err)
		}
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("franz-t").Allow("User:franz").Operations(kadm.OpRead, kadm.OpWrite))
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("franz-wo").Allow("User:franz").Operations(kadm.OpWrite))
	mustCreateACLs(t, adm, kadm.NewACLs().Groups("franz-g").Allow("User:franz").Operations(kadm.OpRead))
	mustCreateACLs(t, adm, kadm.NewACLs().TransactionalIDs("franz-tx").Allow("User:franz").Operations(kadm.OpWrite))
	for _, u := range []string{"kcat", "sarama"} {
		mustCreateACLs(t, adm, kadm.NewACLs().Topics(u+"-t").Allow("User:"+u).Operations(kadm.OpRead, kadm.OpWrite))
		mustCreateACLs(t, adm, kadm.NewACLs().Groups(u+"-g").Allow("User:"+u).Operations(kadm.OpRead))
	}
	mustCreateACLs(t, adm, kadm.NewACLs().Topics("js-t").Allow("User:kafkajs").Operations(kadm.OpRead, kadm.OpWrite))
	mustCreateACLs(t, adm, kadm.NewACLs().Groups("js-g").Allow("User:kafkajs").Operations(kadm.OpRead))
	const resources = 10 // franz-t, franz-wo, franz-g, franz-tx, kcat-t, kcat-g, sarama-t, sarama-g, js-t, js-g
	for id := 0; id < 3; id++ {
		waitUntil(t, 30*time.Second, fmt.Sprintf("broker %d holds every ACL", id), func() bool {
			req := kmsg.NewPtrDescribeACLsRequest()
			req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
			req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			r, err := admin.Broker(id).Request(ctxFor(t, 5*time.Second), req)
			if err != nil {
				return false
			}
			resp := r.(*kmsg.DescribeACLsResponse)
			return resp.ErrorCode == 0 && len(resp.Resources) == resources
		})
	}

	// A delegation token franz creates through kaas-0 logs in on kaas-2
	// (the tokens are on the shared volume) as franz, with franz's ACLs.
	t.Run("delegation-token", func(t *testing.T) {
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		r, err := as("franz").Broker(0).Request(ctxFor(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		tok := r.(*kmsg.CreateDelegationTokenResponse)
		if tok.ErrorCode != 0 || tok.PrincipalName != "franz" {
			t.Fatalf("create through kaas-0: %+v", tok)
		}
		auth := scram.Auth{User: tok.TokenID, Pass: delegation.Password(tok.HMAC), IsToken: true}
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.brokers["kaas-2"].kafka), kgo.DialTLSConfig(tlsCfg.Clone()),
			kgo.SASL(auth.AsSha512Mechanism()), kgo.RetryTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "franz-wo", Value: []byte("by token")}).FirstErr(); err != nil {
			t.Fatalf("produce to franz-wo with franz's token via kaas-2: %v", err)
		}
		if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "secret-t", Value: []byte("x")}).FirstErr(); kafkaCode(err) != kerr.TopicAuthorizationFailed.Code {
			t.Fatalf("produce to secret-t with franz's token: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
	})

	t.Run("franz-go", func(t *testing.T) {
		// A transaction over partitions led by all three brokers: the
		// coordinator writes the markers to the other two over SASL_SSL.
		prod := as("franz", kgo.TransactionalID("franz-tx"), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for p := int32(0); p < 6; p++ {
			v := fmt.Sprintf("franz-%d", p)
			want[v] = true
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: "franz-t", Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("transactional produce to franz-t[%d]: %v", p, err)
			}
		}
		if err := prod.EndTransaction(ctxFor(t, 60*time.Second), kgo.TransactionEndTry(true)); err != nil {
			t.Fatalf("commit: %v", err)
		}
		// read_committed sees the records only once every partition has its
		// commit marker.
		cons := as("franz", kgo.ConsumerGroup("franz-g"), kgo.ConsumeTopics("franz-t"), kgo.DisableAutoCommit(),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		cctx := ctxFor(t, 90*time.Second)
		for len(want) > 0 {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				t.Fatalf("read_committed consumer in franz-g: %d committed records not seen; errors %v", len(want), fs.Errors())
			}
			fs.EachRecord(func(r *kgo.Record) { delete(want, string(r.Value)) })
		}
		if err := cons.CommitUncommittedOffsets(cctx); err != nil {
			t.Fatalf("offset commit in franz-g: %v", err)
		}
		markersAuthenticated := false
		for _, b := range c.brokers {
			markersAuthenticated = markersAuthenticated || strings.Contains(b.log.String(), `"principal":"User:kaas-broker"`)
		}
		if !markersAuthenticated {
			t.Error("no broker logged the inter-broker user in: the markers did not cross brokers")
		}

		cl := as("franz", kgo.RetryTimeout(5*time.Second))
		// Topic write refused.
		if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "secret-t", Value: []byte("x")}).FirstErr(); kafkaCode(err) != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("produce to secret-t: %v, want TOPIC_AUTHORIZATION_FAILED", err)
		}
		// Topic read refused where only Write is granted.
		if err := cl.ProduceSync(ctxFor(t, 30*time.Second), &kgo.Record{Topic: "franz-wo", Value: []byte("w")}).FirstErr(); err != nil {
			t.Fatalf("produce to franz-wo (Write granted): %v", err)
		}
		mreq := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("franz-wo")
		mreq.Topics = append(mreq.Topics, mt)
		md, err := mreq.RequestWith(ctxFor(t, 10*time.Second), cl)
		if err != nil || len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != 1 {
			t.Fatalf("Metadata franz-wo: %v %+v", err, md)
		}
		freq := kmsg.NewPtrFetchRequest()
		freq.MaxWaitMillis, freq.MaxBytes, freq.SessionEpoch = 100, 1<<20, -1
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = "franz-wo", md.Topics[0].TopicID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		freq.Topics = append(freq.Topics, ft)
		fr, err := cl.Broker(int(md.Topics[0].Partitions[0].Leader)).Request(ctxFor(t, 10*time.Second), freq)
		if err != nil {
			t.Fatalf("Fetch franz-wo: %v", err)
		}
		if f := fr.(*kmsg.FetchResponse); len(f.Topics) != 1 || len(f.Topics[0].Partitions) != 1 || f.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("Fetch franz-wo: %+v, want TOPIC_AUTHORIZATION_FAILED", f)
		}
		// A group not granted.
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey, fc.CoordinatorKeys = "other-g", []string{"other-g"}
		if r, err := fc.RequestWith(ctxFor(t, 10*time.Second), cl); err != nil || len(r.Coordinators) != 1 || r.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
			t.Errorf("FindCoordinator other-g: %v %+v, want GROUP_AUTHORIZATION_FAILED", err, r)
		}
		if _, err := kadm.NewClient(cl).FetchOffsets(ctxFor(t, 10*time.Second), "other-g"); kafkaCode(err) != kerr.GroupAuthorizationFailed.Code {
			t.Errorf("OffsetFetch other-g: %v, want GROUP_AUTHORIZATION_FAILED", err)
		}
		// Describe: secret-t asked by name is refused, and a listing of
		// every topic leaves out the topics franz may not describe.
		mreq = kmsg.NewPtrMetadataRequest()
		mt.Topic = kmsg.StringPtr("secret-t")
		mreq.Topics = append(mreq.Topics, mt)
		if md, err := mreq.RequestWith(ctxFor(t, 10*time.Second), cl); err != nil || len(md.Topics) != 1 || md.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("Metadata secret-t: %v %+v, want TOPIC_AUTHORIZATION_FAILED", err, md)
		}
		all := kmsg.NewPtrMetadataRequest()
		md, err = all.RequestWith(ctxFor(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, tp := range md.Topics {
			listed = append(listed, *tp.Topic)
		}
		if strings.Join(slices.Sorted(slices.Values(listed)), ",") != "franz-t,franz-wo" {
			t.Errorf("Metadata of all topics as franz lists %v, want [franz-t franz-wo]", listed)
		}
		// Cluster-level requests: creating a topic (refused per topic, as
		// Kafka does), managing ACLs, describing the cluster.
		fadm := kadm.NewClient(cl)
		if r, err := fadm.CreateTopic(ctxFor(t, 10*time.Second), 1, 1, nil, "franz-new"); kafkaCode(err) != kerr.TopicAuthorizationFailed.Code && kafkaCode(r.Err) != kerr.TopicAuthorizationFailed.Code {
			t.Errorf("CreateTopics franz-new: %v %v, want TOPIC_AUTHORIZATION_FAILED", err, r.Err)
		}
		res, err := fadm.CreateACLs(ctxFor(t, 10*time.Second), kadm.NewACLs().Topics("secret-t").Allow("User:franz").Operations(kadm.OpRead))
		if err == nil && (len(res) != 1 || kafkaCode(res[0].Err) != kerr.ClusterAuthorizationFailed.Code) {
			t.Errorf("CreateAcls as franz: %+v, want CLUSTER_AUTHORIZATION_FAILED", res)
		} else if err != nil && kafkaCode(err) != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("CreateAcls as franz: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
		}
		if r, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctxFor(t, 10*time.Second), cl); err != nil || r.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("DescribeCluster as franz: %v %+v, want CLUSTER_AUTHORIZATION_FAILED", err, r)
		}
	})

	seed := c.brokers["kaas-1"].kafka
	t.Run("kcat", func(t *testing.T) {
		auth := []string{"-b", seed, "-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanisms=SCRAM-SHA-512",
			"-X", "sasl.username=kcat", "-X", "sasl.password=kcat-secret", "-X", "ssl.ca.location=" + caFile}
		runTool(t, 60*time.Second, "", "one\ntwo\n", kcat, append(auth, "-P", "-t", "kcat-t")...)
		r := runTool(t, 90*time.Second, "", "", kcat, append(auth, "-X", "auto.offset.reset=earliest", "-c", "2", "-G", "kcat-g", "kcat-t")...)
		if !strings.Contains(r.Stdout, "one") || !strings.Contains(r.Stdout, "two") {
			t.Fatalf("kcat consumed %q in group kcat-g", r.Stdout)
		}
		r, err := runToolErr(60*time.Second, "", "x\n", nil, kcat, append(auth, "-P", "-t", "secret-t")...)
		if err == nil || !strings.Contains(strings.ToLower(r.Stderr), "topic authorization failed") {
			t.Errorf("kcat produce to secret-t: %v\n%s", err, r.Stderr)
		}
	})

	t.Run("sarama", func(t *testing.T) {
		cfg := saramaConfig(sarama.V2_8_0_0)
		cfg.Net.TLS.Enable, cfg.Net.TLS.Config = true, tlsCfg.Clone()
		cfg.Net.SASL.Enable, cfg.Net.SASL.Handshake = true, true
		cfg.Net.SASL.Mechanism = sarama.SASLTypeSCRAMSHA512
		cfg.Net.SASL.User, cfg.Net.SASL.Password = "sarama", "sarama-secret"
		cfg.Net.SASL.SCRAMClientGeneratorFunc = func() sarama.SCRAMClient { return &saramaSCRAM{} }
		cfg.Producer.Return.Successes = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
		p, err := sarama.NewSyncProducer([]string{seed}, cfg)
		if err != nil {
			t.Fatalf("sarama producer: %v", err)
		}
		defer p.Close()
		for i := 0; i < 3; i++ {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "sarama-t", Value: sarama.StringEncoder(fmt.Sprintf("s-%d", i))}); err != nil {
				t.Fatalf("sarama produce to sarama-t: %v", err)
			}
		}
		g, err := sarama.NewConsumerGroup([]string{seed}, "sarama-g", cfg)
		if err != nil {
			t.Fatalf("sarama consumer group: %v", err)
		}
		defer g.Close()
		h := &saramaGroupHandler{want: 3, done: make(chan struct{})}
		gctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		go func() {
			for gctx.Err() == nil {
				if err := g.Consume(gctx, []string{"sarama-t"}, h); err != nil && gctx.Err() == nil {
					t.Logf("sarama consume: %v", err)
					time.Sleep(200 * time.Millisecond)
				}
			}
		}()
		select {
		case <-h.done:
		case <-gctx.Done():
			t.Fatalf("sarama group sarama-g consumed %d of 3", len(h.got))
		}
		cancel()
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "secret-t", Value: sarama.StringEncoder("x")}); !errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
			t.Errorf("sarama produce to secret-t: %v, want %v", err, sarama.ErrTopicAuthorizationFailed)
		}
	})

	t.Run("kafkajs", func(t *testing.T) {
		res := runNode(t, jsDir, 90*time.Second, "sasl-produce-consume.js", seed, "js-t", "js-g", "5", caFile, "scram-sha-512", "kafkajs", "kafkajs-secret", "secret-t")
		var out struct {
			Produced, Consumed int
			Denied             string
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &out); err != nil {
			t.Fatalf("kafkajs output %q: %v", res.Stdout, err)
		}
		if out.Produced != 5 || out.Consumed < 5 || out.Denied != "TOPIC_AUTHORIZATION_FAILED" {
			t.Errorf("kafkajs: %+v, want 5 produced and consumed in js-g, secret-t refused with TOPIC_AUTHORIZATION_FAILED", out)
		}
	})
}
