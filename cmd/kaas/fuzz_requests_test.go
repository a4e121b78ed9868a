package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaas-project/kaas/actors/actorsys"
	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/storage/batch"
	"github.com/kaas-project/kaas/wire"
)

// The request fuzzer's fixtures, which its realistic seeds name.
const (
	fuzzTopic = "fuzz"
	fuzzGroup = "fuzz-group"
	fuzzTxnID = "fuzz-txn"
)

// fuzzTopicID and fuzzProducerID stand in inputs for the fixture topic's
// id and the fixture transaction's producer id, which each broker draws
// anew: the harness writes the running broker's over them, so that an
// input names the same fixtures on every broker it is replayed on.
var (
	fuzzTopicID    = [16]byte([]byte("kaas-fuzz-topic!"))
	fuzzProducerID = int64(binary.BigEndian.Uint64([]byte("kaas-pid")))
)

// fuzzDenied is the principal of the harness's second connection (an
// unsecured OAUTHBEARER login on a SASL_PLAINTEXT listener), whom the
// fixtures' ACLs allow only to describe topics and groups: an input whose
// key byte has fuzzAsDenied set goes over it, through the refusals of the
// authorization rules. The first connection's principal, ANONYMOUS, may do
// anything.
const (
	fuzzDenied   = "fuzz-denied"
	fuzzAsDenied = 0x80
)

// The members the fixtures join to the KIP-848 and share groups (their
// clients choose their ids).
const (
	fuzz848Group    = "fuzz-848"
	fuzz848Member   = "fuzz-848-member-000000"
	fuzzShareGroup  = "fuzz-share"
	fuzzShareMember = "fuzz-share-member-0000"
)

const (
	// fuzzWaitCap bounds, in milliseconds, the waits a request asks for
	// itself (Fetch's MaxWaitMillis, a join's rebalance timeout): a broker
	// rightly sits on such a request that long.
	fuzzWaitCap = 25
	// fuzzLiveness is how long an answer may take before the broker is
	// taken to hang: generous, it asserts liveness, not speed.
	fuzzLiveness = 30 * time.Second
	// fuzzMaxInputs and fuzzMaxPartitions bound what one broker
	// accumulates (topics the inputs create) before the harness starts a
	// fresh one.
	fuzzMaxInputs     = 5000
	fuzzMaxPartitions = 20000
)

// fuzzBrokerArgs start the fuzzed broker: on a data dir (the storage
// production runs on; fdatasync per partition rather than a syncfs of the
// whole volume), the optional APIs served (telemetry, delegation tokens),
// the ACL authorizer allowing what no ACL names (every request goes
// through its rule), unsecured OAUTHBEARER logins on the SASL listener
// (fuzzDenied's), and group session timeouts short enough that no member a
// past input joined holds a later join for long.
var fuzzBrokerArgs = []string{
	"--http-addr", "", "--log-level", "warn", "--fsync", "file",
	"--client-telemetry",
	"--delegation-token-secret-key", "fuzz-secret",
	"--authorizer", "acl", "--allow-everyone-if-no-acl-found",
	"--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-unsecured",
	"--group-initial-rebalance-delay", "0",
	"--group-min-session-timeout", "1ms", "--group-max-session-timeout", "2s",
}

// resetKeys change what every later request sees (ACLs, broker and client
// configs, quotas, the registered brokers): when one succeeds in part the
// harness starts a fresh broker.
var resetKeys = map[int16]bool{
	kmsg.CreateACLs.Int16():              true,
	kmsg.AlterConfigs.Int16():            true,
	kmsg.IncrementalAlterConfigs.Int16(): true,
	kmsg.AlterClientQuotas.Int16():       true,
	kmsg.UpdateFeatures.Int16():          true,
	kmsg.UnregisterBroker.Int16():        true,
}

// FuzzRequests sends requests of every API key the broker serves, at every
// version it serves, to a real in-process broker over TCP. An input is the
// key, the version and the request body the fuzzer mutates; bodies that do
// not decode are skipped (FuzzDecodeRequest covers those). Each request
// must be answered within fuzzLiveness (but an acks=0 Produce), without a
// panic anywhere in the broker (handler, authorization or actor,
// actorsys.WatchPanics), its answer must decode at its version, and the
// connection must then still answer ApiVersions and Metadata (unless a
// failed SaslAuthenticate or acks=0 Produce closed it: then a new one). Seeds: each
// key's defaults from kmsg at every version, and realistic requests naming
// the fixtures (a topic with records, a group with an offset).
func FuzzRequests(f *testing.F) {
	h := &requestFuzzer{addr: freeAddr(f), saslAddr: freeAddr(f)}
	stopWatch := actorsys.WatchPanics(h.panicked)
	f.Cleanup(stopWatch)
	if err := h.start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(h.stop)
	for _, in := range h.seeds() {
		f.Add(in)
	}
	f.Fuzz(h.run)
}

// requestFuzzer is FuzzRequests' broker and connection.
type requestFuzzer struct {
	addr       string // PLAINTEXT, as ANONYMOUS
	saslAddr   string // SASL_PLAINTEXT, as fuzzDenied
	b          *broker
	stopBroker func()
	apis       map[int16]conn.API
	// topicID and producerID are the fixtures' on the running broker
	// (fuzzTopicID and fuzzProducerID stand for them in inputs).
	topicID    [16]byte
	producerID int64
	inputs     int // run against the running broker

	// c and r are the connection of the principal inputs are sent as
	// (denied: fuzzDenied); parkedC and parkedR the other principal's.
	c       net.Conn
	r       *bufio.Reader
	denied  bool
	parkedC net.Conn
	parkedR *bufio.Reader

	mu     sync.Mutex
	panics []actorsys.Panic
}

func (h *requestFuzzer) panicked(p actorsys.Panic) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.panics = append(h.panics, p)
}

// takePanics returns the panics recovered since the last call.
func (h *requestFuzzer) takePanics() []actorsys.Panic {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.panics
	h.panics = nil
	return p
}

// start starts a broker on h.addr and a new data dir, and makes its
// fixtures.
func (h *requestFuzzer) start() error {
	dir, err := os.MkdirTemp("", "kaas-fuzz-")
	if err != nil {
		return err
	}
	args := append([]string{"--listeners", "PLAINTEXT://" + h.addr + ",SASL_PLAINTEXT://" + h.saslAddr, "--data-dir", dir}, fuzzBrokerArgs...)
	cfg, err := parseServe(args, func(string) string { return "" }, io.Discard)
	if err != nil {
		_ = os.RemoveAll(dir)
		return err
	}
	var logOut io.Writer = io.Discard
	if os.Getenv("KAAS_TEST_LOGS") != "" {
		logOut = os.Stderr
	}
	ctx, cancel := context.WithCancel(context.Background())
	b, err := startBroker(ctx, cfg, logOut)
	if err != nil {
		cancel()
		_ = os.RemoveAll(dir)
		return fmt.Errorf("start broker: %w", err)
	}
	h.b, h.inputs = b, 0
	h.stopBroker = func() {
		cancel()
		b.shutdown()
		_ = os.RemoveAll(dir)
	}
	h.apis = map[int16]conn.API{}
	for _, a := range b.srv.APIs() {
		h.apis[a.Key] = a
	}
	if err := h.fixtures(); err != nil {
		h.stop()
		return fmt.Errorf("fixtures: %w", err)
	}
	h.takePanics() // none expected; an input is not blamed for them
	return nil
}

func (h *requestFuzzer) stop() {
	for _, denied := range []bool{true, false} { // both connections; ANONYMOUS's current after
		h.as(denied)
		h.hangUp()
	}
	if h.stopBroker != nil {
		h.stopBroker()
		h.stopBroker = nil
	}
}

func (h *requestFuzzer) restart(tb testing.TB) {
	h.stop()
	if err := h.start(); err != nil {
		tb.Fatalf("restarting the broker: %v", err)
	}
}

func (h *requestFuzzer) hangUp() {
	if h.c != nil {
		_ = h.c.Close()
		h.c, h.r = nil, nil
	}
}

// as makes the connection of ANONYMOUS (denied false) or of fuzzDenied
// the current one.
func (h *requestFuzzer) as(denied bool) {
	if denied != h.denied {
		h.c, h.r, h.parkedC, h.parkedR = h.parkedC, h.parkedR, h.c, h.r
		h.denied = denied
	}
}

// dial connects as the current principal.
func (h *requestFuzzer) dial() error {
	addr := h.addr
	if h.denied {
		addr = h.saslAddr
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	h.c, h.r = c, bufio.NewReader(c)
	if h.denied {
		if err := h.logIn(); err != nil {
			h.hangUp()
			return fmt.Errorf("log in as %s: %w", fuzzDenied, err)
		}
	}
	return nil
}

// logIn authenticates the connection as fuzzDenied.
func (h *requestFuzzer) logIn() error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = "OAUTHBEARER"
	resp, err := h.call(hs)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SaslHandshake: error %d", code)
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SASLAuthBytes = []byte("n,,\x01auth=Bearer " + unsignedToken(fuzzDenied, time.Now().Add(24*time.Hour), "") + "\x01\x01")
	if resp, err = h.call(au); err != nil {
		return err
	}
	if code := resp.(*kmsg.SASLAuthenticateResponse).ErrorCode; code != 0 {
		return fmt.Errorf("SaslAuthenticate: error %d", code)
	}
	return nil
}

// fixtures creates what the realistic seeds name: the topic (three
// partitions, records in the first), the classic group (an offset
// committed), the transaction (ongoing, a record in the topic's first
// partition), a member in the KIP-848 group and one in the share group.
func (h *requestFuzzer) fixtures() error {
	if err := h.aclFixture(); err != nil {
		return err
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = fuzzTopic, 3, 1
	ct.Topics = append(ct.Topics, t)
	ct.TimeoutMillis = 10000
	resp, err := h.call(ct)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		return fmt.Errorf("create topic %s: error %d", fuzzTopic, code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if tp, ok := h.b.views.Load().Topics[fuzzTopic]; ok && len(tp.Partitions) == 3 {
			h.topicID = tp.ID
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s not published", fuzzTopic)
		}
		time.Sleep(time.Millisecond)
	}
	pr := fuzzProduce()
	pr.Topics[0].TopicID = h.topicID
	pr.SetVersion(12)
	resp, err = h.call(pr)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("produce to %s: error %d", fuzzTopic, code)
	}
	oc := fuzzOffsetCommit()
	oc.Topics[0].TopicID = h.topicID
	resp, err = h.call(oc)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("commit %s's offset: error %d", fuzzGroup, code)
	}
	if err := h.transactionFixture(); err != nil {
		return err
	}
	if resp, err = h.call(fuzz848Join()); err != nil {
		return err
	}
	if code := resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
		return fmt.Errorf("join %s: error %d", fuzz848Group, code)
	}
	if resp, err = h.call(fuzzShareJoin()); err != nil {
		return err
	}
	if code := resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode; code != 0 {
		return fmt.Errorf("join %s: error %d", fuzzShareGroup, code)
	}
	return h.deniedFixture()
}

// aclFixture allows ANONYMOUS everything on every resource, and fuzzDenied
// only to describe topics and groups.
func (h *requestFuzzer) aclFixture() error {
	req := kmsg.NewPtrCreateACLsRequest()
	allow := func(principal string, t kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = t, name, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", op, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
	}
	for _, r := range []struct {
		t    kmsg.ACLResourceType
		name string
	}{
		{kmsg.ACLResourceTypeTopic, "*"}, {kmsg.ACLResourceTypeGroup, "*"}, {kmsg.ACLResourceTypeCluster, "kafka-cluster"},
		{kmsg.ACLResourceTypeTransactionalId, "*"}, {kmsg.ACLResourceTypeDelegationToken, "*"}, {kmsg.ACLResourceTypeUser, "*"},
	} {
		allow("User:ANONYMOUS", r.t, r.name, kmsg.ACLOperationAll)
	}
	allow("User:"+fuzzDenied, kmsg.ACLResourceTypeTopic, "*", kmsg.ACLOperationDescribe)
	allow("User:"+fuzzDenied, kmsg.ACLResourceTypeGroup, "*", kmsg.ACLOperationDescribe)
	resp, err := h.call(req)
	if err != nil {
		return err
	}
	for i, r := range resp.(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			return fmt.Errorf("create ACL %d: error %d %v", i, r.ErrorCode, r.ErrorMessage)
		}
	}
	return nil
}

// deniedFixture checks that the ACLs are in force: fuzzDenied may not
// produce to the fixture topic.
func (h *requestFuzzer) deniedFixture() error {
	h.as(true)
	defer h.as(false)
	pr := fuzzProduce()
	pr.SetVersion(12)
	resp, err := h.call(pr)
	if err != nil {
		return err
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		return fmt.Errorf("produce to %s as %s: error %d, want TOPIC_AUTHORIZATION_FAILED", fuzzTopic, fuzzDenied, code)
	}
	return nil
}

// transactionFixture begins the transaction of fuzzTxnID, a record
// produced in it.
func (h *requestFuzzer) transactionFixture() error {
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = new(fuzzTxnID), 60000
	resp, err := h.call(ip)
	if err != nil {
		return err
	}
	ipr := resp.(*kmsg.InitProducerIDResponse)
	if ipr.ErrorCode != 0 {
		return fmt.Errorf("init %s: error %d", fuzzTxnID, ipr.ErrorCode)
	}
	h.producerID = ipr.ProducerID
	ap := kmsg.NewPtrAddPartitionsToTxnRequest()
	ap.SetVersion(3)
	ap.TransactionalID, ap.ProducerID, ap.ProducerEpoch = fuzzTxnID, ipr.ProducerID, ipr.ProducerEpoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = fuzzTopic, []int32{0}
	ap.Topics = append(ap.Topics, at)
	if resp, err = h.call(ap); err != nil {
		return err
	}
	if code := resp.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("add %s-0 to %s: error %d", fuzzTopic, fuzzTxnID, code)
	}
	pr := fuzzProduce()
	pr.SetVersion(12)
	pr.TransactionID = new(fuzzTxnID)
	pr.Topics[0].Partitions[0].Records = fuzzBatch(ipr.ProducerID, ipr.ProducerEpoch)
	if resp, err = h.call(pr); err != nil {
		return err
	}
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		return fmt.Errorf("produce in %s: error %d", fuzzTxnID, code)
	}
	return nil
}

// call sends req at its version (the newest the broker serves when unset)
// on the harness's connection and returns the answer.
func (h *requestFuzzer) call(req kmsg.Request) (kmsg.Response, error) {
	if h.c == nil {
		if err := h.dial(); err != nil {
			return nil, err
		}
	}
	if req.GetVersion() == 0 {
		req.SetVersion(h.apis[req.Key()].MaxVersion)
	}
	_ = h.c.SetDeadline(time.Now().Add(fuzzLiveness))
	if _, err := h.c.Write(fuzzFrame(nil, req.Key(), req.GetVersion(), 1, req.IsFlexible(), req.AppendTo(nil))); err != nil {
		return nil, err
	}
	return h.answer(req, 1)
}

// answer reads the next frame as the answer to req with correlation id
// corr.
func (h *requestFuzzer) answer(req kmsg.Request, corr int32) (kmsg.Response, error) {
	b, err := readSizedFrame(h.r)
	if err != nil {
		return nil, err
	}
	rd := kbin.Reader{Src: b}
	if got := rd.Int32(); got != corr {
		return nil, fmt.Errorf("answer with correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		kmsg.SkipTags(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		return nil, fmt.Errorf("decode the %s v%d answer: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// fuzzFrame appends a request frame: size, header (client id "fuzz", the
// header's tag section when flexible), body.
func fuzzFrame(dst []byte, key, version int16, corr int32, flexible bool, body []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint16(dst, uint16(key))
	dst = binary.BigEndian.AppendUint16(dst, uint16(version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(corr))
	dst = kbin.AppendNullableString(dst, new(string("fuzz")))
	if flexible {
		dst = append(dst, 0)
	}
	dst = append(dst, body...)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// fuzzInput is an input of FuzzRequests: key, version, body.
func fuzzInput(key, version int16, body []byte) []byte {
	return append([]byte{byte(key), byte(version)}, body...)
}

// run is one input.
func (h *requestFuzzer) run(t *testing.T, in []byte) {
	if len(in) < 2 {
		return
	}
	key, version := int16(in[0]&^fuzzAsDenied), int16(in[1])
	api, ok := h.apis[key]
	if !ok || version < api.MinVersion || version > api.MaxVersion {
		return
	}
	denied := in[0]&fuzzAsDenied != 0
	if denied && (key == kmsg.SASLHandshake.Int16() || key == kmsg.SASLAuthenticate.Int16()) {
		return // would start a re-authentication (FuzzExchange fuzzes the mechanisms)
	}
	h.as(denied)
	body := bytes.ReplaceAll(in[2:], fuzzTopicID[:], h.topicID[:])
	body = bytes.ReplaceAll(body, binary.BigEndian.AppendUint64(nil, uint64(fuzzProducerID)), binary.BigEndian.AppendUint64(nil, uint64(h.producerID)))
	kind := kmsg.RequestForKey(key)
	kind.SetVersion(version)
	hdr := wire.RequestHeader{Key: key, Version: version, Flexible: kind.IsFlexible()}
	req, err := wire.DecodeBody(hdr, body)
	if err != nil {
		return
	}
	if boundWaits(req) {
		body = req.AppendTo(nil)
	}
	t.Cleanup(func() {
		if t.Failed() {
			h.restart(t) // the next input starts from the fixtures alone
		}
	})
	h.inputs++
	name := fmt.Sprintf("%s v%d", kmsg.NameForKey(key), version)
	resp, closed, err := h.exchange(req, body)
	if err != nil {
		t.Fatalf("%s: %v%s", name, err, h.panicReport())
	}
	if p := h.panicReport(); p != "" {
		t.Fatalf("%s: answered %s%s", name, describeResponse(resp), p)
	}
	if resp != nil && hasErrorCode(reflect.ValueOf(resp), kerr.UnknownServerError.Code) {
		// Kafka answers it to an exception it did not expect: never the
		// right answer to a request, however odd.
		t.Fatalf("%s: answered UNKNOWN_SERVER_ERROR: %s", name, describeResponse(resp))
	}
	if closed {
		// Only a failed SaslAuthenticate closes a connection after its
		// answer, and a failed acks=0 Produce in place of one: ask again
		// on a new one.
		if key != kmsg.SASLAuthenticate.Int16() && !acksZero(req) {
			t.Fatalf("%s: the broker closed the connection after answering %s", name, describeResponse(resp))
		}
		if err := h.stillServing(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if h.needsFreshBroker(key, resp) {
		h.restart(t)
	}
}

// exchange sends the input's request, then ApiVersions and Metadata on the
// same connection, and reads their answers. closed: the connection closed
// after the first answer.
func (h *requestFuzzer) exchange(req kmsg.Request, body []byte) (resp kmsg.Response, closed bool, err error) {
	if h.c == nil {
		if err := h.dial(); err != nil {
			return nil, false, err
		}
	}
	defer func() {
		if err != nil || closed {
			h.hangUp()
		}
	}()
	key, version := req.Key(), req.GetVersion()
	av, md := fuzzProbes()
	out := fuzzFrame(nil, key, version, 1, req.IsFlexible(), body)
	out = fuzzFrame(out, av.Key(), av.GetVersion(), 2, av.IsFlexible(), av.AppendTo(nil))
	out = fuzzFrame(out, md.Key(), md.GetVersion(), 3, md.IsFlexible(), md.AppendTo(nil))
	_ = h.c.SetDeadline(time.Now().Add(fuzzLiveness))
	if _, err := h.c.Write(out); err != nil {
		return nil, false, fmt.Errorf("send: %w", err)
	}
	silent := acksZero(req)
	if !silent {
		if resp, err = h.answer(req, 1); err != nil {
			return nil, false, fmt.Errorf("no answer: %w", err)
		}
	}
	if err := h.probesAnswered(av, md, 2); err != nil {
		if (resp != nil || silent) && errors.Is(err, io.EOF) {
			return resp, true, nil
		}
		return resp, false, fmt.Errorf("after answering %s: %w", describeResponse(resp), err)
	}
	return resp, false, nil
}

// acksZero: req is a Produce that gets no answer.
func acksZero(req kmsg.Request) bool {
	p, ok := req.(*kmsg.ProduceRequest)
	return ok && p.Acks == 0
}

// fuzzProbes are the requests that must be answered after each input.
func fuzzProbes() (*kmsg.ApiVersionsRequest, *kmsg.MetadataRequest) {
	av := kmsg.NewPtrApiVersionsRequest()
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = new(string(fuzzTopic))
	md.Topics = append(md.Topics, t)
	return av, md
}

// probesAnswered reads the answers to the probes sent with correlation ids
// from corr on.
func (h *requestFuzzer) probesAnswered(av *kmsg.ApiVersionsRequest, md *kmsg.MetadataRequest, corr int32) error {
	resp, err := h.answer(av, corr)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	if code := resp.(*kmsg.ApiVersionsResponse).ErrorCode; code != 0 {
		return fmt.Errorf("ApiVersions answered error %d", code)
	}
	resp, err = h.answer(md, corr+1)
	if err != nil {
		return fmt.Errorf("Metadata: %w", err)
	}
	if len(resp.(*kmsg.MetadataResponse).Brokers) == 0 {
		return errors.New("Metadata lists no broker")
	}
	return nil
}

// stillServing asks ApiVersions and Metadata on a new connection.
func (h *requestFuzzer) stillServing() error {
	h.hangUp()
	if err := h.dial(); err != nil {
		return err
	}
	av, md := fuzzProbes()
	out := fuzzFrame(nil, av.Key(), av.GetVersion(), 2, av.IsFlexible(), av.AppendTo(nil))
	out = fuzzFrame(out, md.Key(), md.GetVersion(), 3, md.IsFlexible(), md.AppendTo(nil))
	_ = h.c.SetDeadline(time.Now().Add(fuzzLiveness))
	if _, err := h.c.Write(out); err != nil {
		return fmt.Errorf("send on a new connection: %w", err)
	}
	if err := h.probesAnswered(av, md, 2); err != nil {
		h.hangUp()
		return fmt.Errorf("on a new connection: %w", err)
	}
	return nil
}

// panicReport describes the panics recovered since the last call ("" for
// none).
func (h *requestFuzzer) panicReport() string {
	var b bytes.Buffer
	for _, p := range h.takePanics() {
		fmt.Fprintf(&b, "\npanic in %s: %v\n%s", p.Where, p.Reason, p.Stack)
	}
	return b.String()
}

// needsFreshBroker: what the input did may change every later input's
// answer (resetKeys), or the broker holds more than the harness lets one
// accumulate, or a fixture is gone.
func (h *requestFuzzer) needsFreshBroker(key int16, resp kmsg.Response) bool {
	if resetKeys[key] && resp != nil && anySuccess(reflect.ValueOf(resp)) {
		return true
	}
	if d, ok := resp.(*kmsg.DeleteACLsResponse); ok {
		for _, r := range d.Results {
			if len(r.MatchingACLs) > 0 {
				return true // the fixtures' ACLs may be gone
			}
		}
	}
	v := h.b.views.Load()
	t, ok := v.Topics[fuzzTopic]
	return !ok || t.ID != h.topicID || h.inputs >= fuzzMaxInputs || len(v.Local) > fuzzMaxPartitions
}

// anySuccess: some ErrorCode in v is 0.
func anySuccess(v reflect.Value) bool { return hasErrorCode(v, 0) }

// hasErrorCode: some error code field in v (ErrorCode,
// AcknowledgeErrorCode...) is code.
func hasErrorCode(v reflect.Value, code int16) bool {
	switch v.Kind() {
	case reflect.Pointer:
		return !v.IsNil() && hasErrorCode(v.Elem(), code)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Field(i)
			if strings.HasSuffix(v.Type().Field(i).Name, "ErrorCode") && f.Kind() == reflect.Int16 && f.Int() == int64(code) {
				return true
			}
			if hasErrorCode(f, code) {
				return true
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			if hasErrorCode(v.Index(i), code) {
				return true
			}
		}
	}
	return false
}

// describeResponse is resp for a failure message.
func describeResponse(resp kmsg.Response) string {
	if resp == nil {
		return "nothing"
	}
	return fmt.Sprintf("%+v", resp)
}

// boundWaits caps at fuzzWaitCap the waits req asks the broker to make,
// and reports whether it changed req.
func boundWaits(req kmsg.Request) bool {
	bound := func(ms *int32) bool {
		if *ms > fuzzWaitCap {
			*ms = fuzzWaitCap
			return true
		}
		return false
	}
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return bound(&r.MaxWaitMillis)
	case *kmsg.ShareFetchRequest:
		return bound(&r.MaxWaitMillis)
	case *kmsg.JoinGroupRequest:
		return bound(&r.RebalanceTimeoutMillis)
	}
	return false
}

// seeds are every served key's realistic requests, or its kmsg defaults
// when it has none, at every served version. Every seed costs the fuzzing
// engine's baseline about 80 ms (the coverage of a binary linking the whole
// broker), so there are no more than that.
func (h *requestFuzzer) seeds() [][]byte {
	keys := make([]int16, 0, len(h.apis))
	for k := range h.apis {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out [][]byte
	for _, k := range keys {
		reqs := realisticRequests(k)
		if len(reqs) == 0 {
			reqs = []kmsg.Request{kmsg.RequestForKey(k)}
		}
		api := h.apis[k]
		for _, req := range reqs {
			for v := api.MinVersion; v <= api.MaxVersion; v++ {
				req.SetVersion(v)
				out = append(out, fuzzInput(k, v, req.AppendTo(nil)))
			}
			if k == kmsg.SASLHandshake.Int16() || k == kmsg.SASLAuthenticate.Int16() {
				continue // not sent as fuzzDenied
			}
			// As fuzzDenied, at the newest version.
			req.SetVersion(api.MaxVersion)
			in := fuzzInput(k, api.MaxVersion, req.AppendTo(nil))
			in[0] |= fuzzAsDenied
			out = append(out, in)
		}
	}
	return out
}

// fuzzBatch is a batch of three records, as a client sends it: in the
// transaction of producerID when it is not -1.
func fuzzBatch(producerID int64, epoch int16) []byte {
	var raw []byte
	for i := range int32(3) {
		r := kmsg.Record{TimestampDelta64: int64(i), OffsetDelta: i, Key: []byte("k"), Value: []byte("value")}
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		raw = r.AppendTo(raw)
	}
	const ts = 1_700_000_000_000
	b := kmsg.RecordBatch{PartitionLeaderEpoch: -1, LastOffsetDelta: 2, FirstTimestamp: ts, MaxTimestamp: ts + 2,
		ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: -1, NumRecords: 3, Records: raw}
	if producerID != -1 {
		b.Attributes, b.FirstSequence = 0x10, 0 // transactional
	}
	return batch.Frame(b)
}

func fuzzProduce() *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = fuzzTopic, fuzzTopicID
	p := kmsg.NewProduceRequestTopicPartition()
	p.Records = fuzzBatch(-1, -1)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func fuzzOffsetCommit() *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = fuzzGroup
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic, t.TopicID = fuzzTopic, fuzzTopicID
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Offset, p.Metadata = 1, new(string("m"))
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// fuzz848Join joins fuzz848Member to its group (subscribed to fuzzTopic).
func fuzz848Join() *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = fuzz848Group, fuzz848Member, 5000
	req.SubscribedTopicNames, req.Topics = []string{fuzzTopic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return req
}

// fuzzShareJoin joins fuzzShareMember to its group (subscribed to
// fuzzTopic).
func fuzzShareJoin() *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.SubscribedTopicNames = fuzzShareGroup, fuzzShareMember, []string{fuzzTopic}
	return req
}

// realisticRequests are requests of key naming the fixtures, as a client
// sends them.
func realisticRequests(key int16) []kmsg.Request {
	topic, id, group := fuzzTopic, fuzzTopicID, fuzzGroup
	switch kmsg.Key(key) {
	case kmsg.Produce:
		return []kmsg.Request{fuzzProduce()}
	case kmsg.Fetch:
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 1<<20
		t := kmsg.NewFetchRequestTopic()
		t.Topic, t.TopicID = topic, id
		for p := range int32(3) {
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes = p, 0, 1<<20
			t.Partitions = append(t.Partitions, fp)
		}
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.ListOffsets:
		req := kmsg.NewPtrListOffsetsRequest()
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic
		for _, ts := range []int64{-1, -2} {
			p := kmsg.NewListOffsetsRequestTopicPartition()
			p.Timestamp = ts
			t.Partitions = append(t.Partitions, p)
		}
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.Metadata:
		req := kmsg.NewPtrMetadataRequest()
		t := kmsg.NewMetadataRequestTopic()
		t.Topic, t.TopicID = new(topic), id
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.OffsetCommit:
		return []kmsg.Request{fuzzOffsetCommit()}
	case kmsg.OffsetFetch:
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		t := kmsg.NewOffsetFetchRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0, 1}
		req.Topics = append(req.Topics, t)
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		gt := kmsg.NewOffsetFetchRequestGroupTopic()
		gt.Topic, gt.TopicID, gt.Partitions = topic, id, []int32{0, 1}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		return []kmsg.Request{req}
	case kmsg.FindCoordinator:
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
		return []kmsg.Request{req}
	case kmsg.JoinGroup:
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = group, 1000, 1000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", (&kmsg.ConsumerMemberMetadata{Topics: []string{topic}}).AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		return []kmsg.Request{req}
	case kmsg.Heartbeat:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = group, 1, "member"
		return []kmsg.Request{req}
	case kmsg.LeaveGroup:
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = group, "member"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "member"
		req.Members = append(req.Members, m)
		return []kmsg.Request{req}
	case kmsg.SyncGroup:
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.Generation, req.MemberID = group, 1, "member"
		req.ProtocolType, req.Protocol = new("consumer"), new("range")
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID, a.MemberAssignment = "member", (&kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: topic, Partitions: []int32{0}}}}).AppendTo(nil)
		req.GroupAssignment = append(req.GroupAssignment, a)
		return []kmsg.Request{req}
	case kmsg.DescribeGroups:
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups, req.IncludeAuthorizedOperations = []string{group}, true
		return []kmsg.Request{req}
	case kmsg.ListGroups:
		req := kmsg.NewPtrListGroupsRequest()
		req.StatesFilter, req.TypesFilter = []string{"Empty"}, []string{"classic"}
		return []kmsg.Request{req}
	case kmsg.SASLHandshake:
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Mechanism = "PLAIN"
		return []kmsg.Request{req}
	case kmsg.CreateTopics:
		req := kmsg.NewPtrCreateTopicsRequest()
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = "fuzz-new", 2, 1
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = "retention.ms", new("60000")
		t.Configs = append(t.Configs, c)
		req.Topics, req.TimeoutMillis = append(req.Topics, t), 5000
		return []kmsg.Request{req}
	case kmsg.DeleteTopics:
		req := kmsg.NewPtrDeleteTopicsRequest()
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic, t.TopicID = new(topic), id
		req.Topics, req.TopicNames, req.TimeoutMillis = append(req.Topics, t), []string{topic}, 5000
		return []kmsg.Request{req}
	case kmsg.DeleteRecords:
		req := kmsg.NewPtrDeleteRecordsRequest()
		t := kmsg.NewDeleteRecordsRequestTopic()
		t.Topic = topic
		p := kmsg.NewDeleteRecordsRequestTopicPartition()
		p.Offset = 1
		t.Partitions = append(t.Partitions, p)
		req.Topics, req.TimeoutMillis = append(req.Topics, t), 5000
		return []kmsg.Request{req}
	case kmsg.InitProducerID:
		req := kmsg.NewPtrInitProducerIDRequest()
		txn := kmsg.NewPtrInitProducerIDRequest()
		// Not fuzzTxnID: its fixture transaction stays open for the seeds
		// of the other transaction APIs.
		txn.TransactionalID, txn.TransactionTimeoutMillis = new(fuzzTxnID+"-2"), 60000
		return []kmsg.Request{req, txn}
	case kmsg.OffsetForLeaderEpoch:
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		t := kmsg.NewOffsetForLeaderEpochRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		p.CurrentLeaderEpoch, p.LeaderEpoch = -1, 0
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.AddPartitionsToTxn:
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = fuzzTxnID, fuzzProducerID, 0
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic, t.Partitions = topic, []int32{1}
		req.Topics = append(req.Topics, t)
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.VerifyOnly = fuzzTxnID, fuzzProducerID, true
		xt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		xt.Topic, xt.Partitions = topic, []int32{0}
		tx.Topics = append(tx.Topics, xt)
		req.Transactions = append(req.Transactions, tx)
		return []kmsg.Request{req}
	case kmsg.AddOffsetsToTxn:
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.Group = fuzzTxnID, fuzzProducerID, group
		return []kmsg.Request{req}
	case kmsg.EndTxn:
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.Commit = fuzzTxnID, fuzzProducerID, true
		return []kmsg.Request{req}
	case kmsg.WriteTxnMarkers:
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = fuzzProducerID, true
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		return []kmsg.Request{req}
	case kmsg.TxnOffsetCommit:
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.Generation = fuzzTxnID, group, fuzzProducerID, -1
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic = topic
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Offset = 1
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.DescribeACLs:
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.ResourceName = new(topic)
		return []kmsg.Request{req}
	case kmsg.CreateACLs:
		req := kmsg.NewPtrCreateACLsRequest()
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host, c.Operation, c.PermissionType = "User:alice", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, c)
		return []kmsg.Request{req}
	case kmsg.DeleteACLs:
		req := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourceName, f.ResourcePatternType = kmsg.ACLResourceTypeTopic, new(topic), kmsg.ACLResourcePatternTypeLiteral
		f.Principal, f.Operation, f.PermissionType = new("User:alice"), kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
		return []kmsg.Request{req}
	case kmsg.DescribeConfigs:
		req := kmsg.NewPtrDescribeConfigsRequest()
		for _, r := range []struct {
			t    kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, topic}, {kmsg.ConfigResourceTypeBroker, "0"}, {kmsg.ConfigResourceTypeGroupConfig, group}} {
			res := kmsg.NewDescribeConfigsRequestResource()
			res.ResourceType, res.ResourceName = r.t, r.name
			req.Resources = append(req.Resources, res)
		}
		req.IncludeSynonyms, req.IncludeDocumentation = true, true
		return []kmsg.Request{req}
	case kmsg.AlterConfigs:
		req := kmsg.NewPtrAlterConfigsRequest()
		res := kmsg.NewAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "retention.ms", new("600000")
		res.Configs = append(res.Configs, c)
		req.Resources = append(req.Resources, res)
		return []kmsg.Request{req}
	case kmsg.IncrementalAlterConfigs:
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		for _, r := range []struct {
			t          kmsg.ConfigResourceType
			name, k, v string
		}{{kmsg.ConfigResourceTypeTopic, topic, "cleanup.policy", "compact"}, {kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", "600000"}, {kmsg.ConfigResourceTypeGroupConfig, group, "consumer.session.timeout.ms", "45000"}} {
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = r.t, r.name
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value, c.Op = r.k, new(r.v), kmsg.IncrementalAlterConfigOpSet
			res.Configs = append(res.Configs, c)
			req.Resources = append(req.Resources, res)
		}
		return []kmsg.Request{req}
	case kmsg.AlterReplicaLogDirs:
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = "/data"
		dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		dt.Topic, dt.Partitions = topic, []int32{0}
		d.Topics = append(d.Topics, dt)
		req.Dirs = append(req.Dirs, d)
		return []kmsg.Request{req}
	case kmsg.DescribeLogDirs:
		req := kmsg.NewPtrDescribeLogDirsRequest()
		t := kmsg.NewDescribeLogDirsRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0, 1, 2}
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.CreatePartitions:
		req := kmsg.NewPtrCreatePartitionsRequest()
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = topic, 4
		req.Topics, req.TimeoutMillis = append(req.Topics, t), 5000
		return []kmsg.Request{req}
	case kmsg.CreateDelegationToken:
		req := kmsg.NewPtrCreateDelegationTokenRequest()
		req.MaxLifetimeMillis = 3600000
		return []kmsg.Request{req}
	case kmsg.RenewDelegationToken:
		req := kmsg.NewPtrRenewDelegationTokenRequest()
		req.HMAC, req.RenewTimeMillis = []byte("hmac"), 3600000
		return []kmsg.Request{req}
	case kmsg.ExpireDelegationToken:
		req := kmsg.NewPtrExpireDelegationTokenRequest()
		req.HMAC, req.ExpiryPeriodMillis = []byte("hmac"), -1
		return []kmsg.Request{req}
	case kmsg.DescribeDelegationToken:
		req := kmsg.NewPtrDescribeDelegationTokenRequest()
		o := kmsg.NewDescribeDelegationTokenRequestOwner()
		o.PrincipalType, o.PrincipalName = "User", "alice"
		req.Owners = append(req.Owners, o)
		return []kmsg.Request{req}
	case kmsg.DeleteGroups:
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{group}
		return []kmsg.Request{req}
	case kmsg.ElectLeaders:
		req := kmsg.NewPtrElectLeadersRequest()
		t := kmsg.NewElectLeadersRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		req.Topics, req.TimeoutMillis = append(req.Topics, t), 5000
		return []kmsg.Request{req}
	case kmsg.AlterPartitionAssignments:
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		t := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		t.Topic = topic
		p := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		p.Replicas = []int32{0}
		t.Partitions = append(t.Partitions, p)
		req.Topics, req.TimeoutMillis = append(req.Topics, t), 5000
		return []kmsg.Request{req}
	case kmsg.ListPartitionReassignments:
		req := kmsg.NewPtrListPartitionReassignmentsRequest()
		t := kmsg.NewListPartitionReassignmentsRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.OffsetDelete:
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		t := kmsg.NewOffsetDeleteRequestTopic()
		t.Topic = topic
		p := kmsg.NewOffsetDeleteRequestTopicPartition()
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.DescribeClientQuotas:
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		c := kmsg.NewDescribeClientQuotasRequestComponent()
		c.EntityType, c.MatchType, c.Match = "client-id", 0, new("fuzz")
		req.Components = append(req.Components, c)
		return []kmsg.Request{req}
	case kmsg.AlterClientQuotas:
		req := kmsg.NewPtrAlterClientQuotasRequest()
		e := kmsg.NewAlterClientQuotasRequestEntry()
		ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ee.Type, ee.Name = "client-id", new("someone-else")
		e.Entity = append(e.Entity, ee)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1<<20
		e.Ops = append(e.Ops, op)
		req.Entries = append(req.Entries, e)
		return []kmsg.Request{req}
	case kmsg.DescribeUserSCRAMCredentials:
		req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
		u := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		u.Name = "alice"
		req.Users = append(req.Users, u)
		return []kmsg.Request{req}
	case kmsg.AlterUserSCRAMCredentials:
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "alice", 2, 8192, []byte("salt"), bytes.Repeat([]byte{1}, 64)
		req.Upsertions = append(req.Upsertions, u)
		return []kmsg.Request{req}
	case kmsg.DescribeProducers:
		req := kmsg.NewPtrDescribeProducersRequest()
		t := kmsg.NewDescribeProducersRequestTopic()
		t.Topic, t.Partitions = topic, []int32{0, 1}
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.DescribeTransactions:
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{fuzzTxnID}
		return []kmsg.Request{req}
	case kmsg.ListTransactions:
		req := kmsg.NewPtrListTransactionsRequest()
		req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = []string{"Ongoing"}, []int64{fuzzProducerID}, 1000
		return []kmsg.Request{req}
	case kmsg.ConsumerGroupHeartbeat:
		// The heartbeat of the fixture's member first: the seeds run in
		// order, and a join again would move its epoch on.
		beat := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		beat.Group, beat.MemberID, beat.MemberEpoch = fuzz848Group, fuzz848Member, 1
		tp := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		tp.TopicID, tp.Partitions = id, []int32{0, 1, 2}
		beat.Topics = append(beat.Topics, tp)
		return []kmsg.Request{beat, fuzz848Join()}
	case kmsg.ConsumerGroupDescribe:
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{fuzz848Group, group}
		return []kmsg.Request{req}
	case kmsg.ShareGroupHeartbeat:
		beat := kmsg.NewPtrShareGroupHeartbeatRequest()
		beat.GroupID, beat.MemberID, beat.MemberEpoch = fuzzShareGroup, fuzzShareMember, 3
		return []kmsg.Request{beat, fuzzShareJoin()}
	case kmsg.ShareGroupDescribe:
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{fuzzShareGroup}
		return []kmsg.Request{req}
	case kmsg.ShareFetch:
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = new(fuzzShareGroup), new(fuzzShareMember), 500, 1, 1<<20, 500, 500
		t := kmsg.NewShareFetchRequestTopic()
		t.TopicID = id
		p := kmsg.NewShareFetchRequestTopicPartition()
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.ShareAcknowledge:
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = new(fuzzShareGroup), new(fuzzShareMember), 1
		t := kmsg.NewShareAcknowledgeRequestTopic()
		t.TopicID = id
		p := kmsg.NewShareAcknowledgeRequestTopicPartition()
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = 0, 2, []int8{1}
		p.AcknowledgementBatches = append(p.AcknowledgementBatches, b)
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.DescribeShareGroupOffsets:
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = fuzzShareGroup
		gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
		gt.Topic, gt.Partitions = topic, []int32{0}
		g.Topics = append(g.Topics, gt)
		req.Groups = append(req.Groups, g)
		return []kmsg.Request{req}
	case kmsg.AlterShareGroupOffsets:
		req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
		req.GroupID = fuzzShareGroup
		t := kmsg.NewAlterShareGroupOffsetsRequestTopic()
		t.Topic = topic
		p := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		p.StartOffset = 1
		t.Partitions = append(t.Partitions, p)
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.DeleteShareGroupOffsets:
		req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
		req.GroupID = fuzzShareGroup
		t := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		t.Topic = topic
		req.Topics = append(req.Topics, t)
		return []kmsg.Request{req}
	case kmsg.StreamsGroupHeartbeat:
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "fuzz-streams", "fuzz-streams-member-0", 5000
		tp := kmsg.NewStreamsGroupHeartbeatRequestTopology()
		st := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
		st.SubtopologyID, st.SourceTopics = "0", []string{topic}
		tp.Subtopologies = append(tp.Subtopologies, st)
		req.Topology = &tp
		return []kmsg.Request{req}
	case kmsg.StreamsGroupDescribe:
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{"fuzz-streams"}
		return []kmsg.Request{req}
	case kmsg.DescribeTopicPartitions:
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		t := kmsg.NewDescribeTopicPartitionsRequestTopic()
		t.Topic = topic
		req.Topics, req.ResponsePartitionLimit = append(req.Topics, t), 2
		return []kmsg.Request{req}
	case kmsg.ListConfigResources:
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = []int8{2, 16}
		return []kmsg.Request{req}
	}
	return nil
}
