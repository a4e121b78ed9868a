package main

// LinkedIn Burrow (Debian's burrow 1.2.1, /usr/bin/Burrow, over sarama
// 1.22) against a started `kaas` binary over loopback TCP. Burrow learns a
// group's committed offsets only by consuming __consumer_offsets (Kafka's
// OffsetCommitKey/OffsetCommitValue records) and computes lag from the end
// offsets its cluster module lists; it learns each partition's owner (the
// member's client host) and client id from a classic group's GroupMetadata
// records (key version 2, value version 0 or 1 only), and clears them on a
// record without members (it drops tombstones). It needs a ZooKeeper
// ensemble (its [zookeeper] section is mandatory), so the test runs
// Debian's ZooKeeper 3.8 on its own loopback port.
//
// Burrow's quirks, from its v1.2.1 source and runs against kaas:
//   - its sarama sends no ApiVersions: kafka-version alone picks the
//     request versions. "2.0.0" sends Metadata v5, Fetch v4 and (for the
//     consumer's starting offsets) ListOffsets v1; a version before 0.11
//     sends a Fetch older than v4, which Kafka 4 (and kaas) no longer serve.
//     Only the names in Burrow's helpers/sarama.go are accepted (up to
//     "2.1.0"); any other one panics.
//   - the cluster module sends ListOffsets v0 whatever kafka-version says
//     (it builds a bare sarama.OffsetRequest), for every partition of every
//     topic, __consumer_offsets included, each offset-refresh.
//   - the consumer module lists the first offset of each __consumer_offsets
//     partition at startup; an error there makes Burrow exit.
//   - a committed offset read before the cluster module knows its topic's
//     end offsets is dropped for good ("no topic"), and so is a partition's
//     owner: the test commits, and its consumer joins, only once Burrow
//     reports the topic's end offsets.
//   - the caching evaluator keeps a group's status expire-cache seconds
//     (10 by default); /lag answers 404 while the group is unknown.
//   - ZooKeeper answers ruok before it takes sessions; srvr waits for them.

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	burrowBin = "/usr/bin/Burrow"
	// zooKeeperJar is Debian's libzookeeper-java; its manifest's Class-Path
	// names the libraries it needs. slf4j-simple (libslf4j-java, which it
	// depends on) makes it log to stderr, which the test keeps in a file.
	zooKeeperJar   = "/usr/share/java/zookeeper.jar"
	slf4jSimpleJar = "/usr/share/java/slf4j-simple.jar"
	// burrowWait bounds each wait for Burrow to report something.
	burrowWait = 60 * time.Second
)

// TestBurrow proves that LinkedIn Burrow 1.2.1 from Debian reads kaas's
// __consumer_offsets and reports a group's committed offsets and lag: a
// group commits offsets of a two-partition topic, Burrow's HTTP API lists
// the group and reports, per partition, the committed offset and the lag
// from the partition's end offset (what kaas's ListOffsets answers); a
// later commit shows up as the partition's new offset. A franz-go consumer
// in another (classic) group makes Burrow report each partition's owner,
// the consumer's client host, and its client id, from the group's
// GroupMetadata record; once it leaves, the Empty group's record clears
// them.
func TestBurrow(t *testing.T) {
	burrow := requireFile(t, burrowBin, "burrow")
	java := requireTool(t, "java")
	requireFile(t, zooKeeperJar, "zookeeper")
	requireFile(t, slf4jSimpleJar, "zookeeper (libslf4j-java)")
	start := time.Now()

	k := startKaas(t)
	zk := startZooKeeper(t, java)

	const topic, group, perPartition = "burrow-orders", "burrow-group", 50
	createTopic(t, k.Addr, topic, 2, nil)
	prod := newClient(t, k.Addr, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range 2 * perPartition {
		recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: []byte("order-" + strconv.Itoa(i))})
	}
	if err := prod.ProduceSync(ctxFor(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce %d records to %s: %v", len(recs), topic, err)
	}
	adm := newAdmin(t, k.Addr)
	listed, err := adm.ListEndOffsets(ctxFor(t, 10*time.Second), topic)
	if err != nil || listed.Error() != nil {
		t.Fatalf("list end offsets of %s: %v %v", topic, err, listed.Error())
	}
	end := make([]int64, 2)
	for p := range end {
		o, ok := listed.Lookup(topic, int32(p))
		if !ok || o.Offset != perPartition {
			t.Fatalf("end offset of %s-%d: %+v (listed %t), want %d", topic, p, o, ok, perPartition)
		}
		end[p] = o.Offset
	}

	b := startBurrow(t, burrow, zk, k)
	b.await(t, "cluster kaas in GET /v3/kafka", "/v3/kafka", func(code int, body []byte) bool {
		var r struct {
			Clusters []string `json:"clusters"`
		}
		return code == http.StatusOK && json.Unmarshal(body, &r) == nil && slices.Contains(r.Clusters, "kaas")
	})
	// Burrow keeps a commit only once its cluster module has listed the
	// topic's end offsets (ListOffsets v0): wait for them before committing.
	b.await(t, fmt.Sprintf("the end offsets %v of %s (Burrow's ListOffsets)", end, topic), "/v3/kafka/kaas/topic/"+topic, func(code int, body []byte) bool {
		var r struct {
			Offsets []int64 `json:"offsets"`
		}
		return code == http.StatusOK && json.Unmarshal(body, &r) == nil && slices.Equal(r.Offsets, end)
	})

	// The live consumer joins now: its group's metadata record is read
	// once Burrow knows the topic.
	const liveGroup, liveClient = "burrow-live", "burrow-live-client"
	live := newGroupConsumer(t, k.Addr, liveGroup, liveClient, topic)
	liveCommitted := make(chan error, 1)
	go func() { liveCommitted <- commitAndRejoin(ctxFor(t, 30*time.Second), adm, live, liveGroup, topic) }()

	commit := func(offsets map[int32]int64) {
		t.Helper()
		var offs kadm.Offsets
		for p, o := range offsets {
			offs.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
		}
		resp, err := adm.CommitOffsets(ctxFor(t, 10*time.Second), group, offs)
		if err == nil {
			err = resp.Error()
		}
		if err != nil {
			t.Fatalf("commit %v for group %s: %v", offsets, group, err)
		}
	}

	commit(map[int32]int64{0: 30, 1: 40})
	b.await(t, "group "+group+" in GET /v3/kafka/kaas/consumer", "/v3/kafka/kaas/consumer", func(code int, body []byte) bool {
		var r struct {
			Consumers []string `json:"consumers"`
		}
		return code == http.StatusOK && json.Unmarshal(body, &r) == nil && slices.Contains(r.Consumers, group)
	})
	b.awaitLag(t, group, topic, end, []int64{30, 40})

	commit(map[int32]int64{0: 50})
	b.awaitLag(t, group, topic, end, []int64{50, 40})

	if err := <-liveCommitted; err != nil {
		t.Fatalf("group %s: %v", liveGroup, err)
	}
	b.awaitOwners(t, liveGroup, topic, "/127.0.0.1", liveClient)
	live.Close() // LeaveGroup: the group is Empty
	b.awaitOwners(t, liveGroup, topic, "", "")
	t.Logf("Burrow reported the group's offsets and lag; the test took %v", time.Since(start).Round(time.Millisecond))
}

// requireFile fails the test (never skips) when an installed file the test
// runs is missing; pkg names the Debian package that installs it.
func requireFile(t testing.TB, path, pkg string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s (Debian package %s) is required by this test: %v; %s", path, pkg, err, installHint)
	}
	return path
}

// process is an external server the test started: its output goes to a
// file of the test's temporary directory.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

func startProcess(t testing.TB, name, logPath string, cmd *exec.Cmd) *process {
	t.Helper()
	out, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		out.Close()
		close(p.exited)
	}()
	return p
}

func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, then SIGKILL after 10s.
func (p *process) stop(t testing.TB) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Logf("%s did not exit within 10s of SIGTERM; killing it", p.name)
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines cut)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// startZooKeeper runs a standalone ZooKeeper on a free loopback port with
// its data and log in the test's temporary directory, waits until it
// serves, and returns its address.
func startZooKeeper(t *testing.T, java string) string {
	t.Helper()
	dir := t.TempDir()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freeLoopbackPort(t)))
	host, port, _ := net.SplitHostPort(addr)
	// admin.enableServer=false: ZooKeeper's AdminServer would take :8080.
	cfg := fmt.Sprintf("tickTime=500\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%s\nclientPortAddress=%s\nadmin.enableServer=false\n4lw.commands.whitelist=srvr\n",
		filepath.Join(dir, "data"), port, host)
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(java, "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Dzookeeper.log.dir="+dir, "-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-cp", zooKeeperJar+":"+slf4jSimpleJar,
		"org.apache.zookeeper.server.ZooKeeperServerMain", cfgPath)
	cmd.Dir = dir
	zk := startProcess(t, "ZooKeeper", filepath.Join(dir, "zookeeper.log"), cmd)
	t.Cleanup(func() {
		zk.stop(t)
		if t.Failed() {
			t.Logf("--- ZooKeeper %s log (tail) ---\n%s\n--- end of ZooKeeper log ---", addr, tail(zk.logPath, 40))
		}
	})
	// ruok answers imok as soon as the port is bound, before the server
	// takes sessions; srvr answers its version only once it serves them.
	serving := func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("srvr")); err != nil {
			return false
		}
		got, _ := io.ReadAll(c)
		return strings.HasPrefix(string(got), "Zookeeper version:")
	}
	started := time.Now()
	for !serving() {
		if !zk.running() {
			t.Fatalf("ZooKeeper exited before it answered on %s: %v\n%s", addr, zk.waitErr, tail(zk.logPath, 40))
		}
		if time.Since(started) > 30*time.Second {
			t.Fatalf("ZooKeeper did not serve on %s within 30s\n%s", addr, tail(zk.logPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("ZooKeeper answers on %s after %v", addr, time.Since(started).Round(time.Millisecond))
	return addr
}

// burrowProc is a started Burrow and its HTTP API.
type burrowProc struct {
	*process
	api     string // http://host:port
	logFile string // Burrow's own (zap, JSON) log
	kaas    *kaasProc
}

// startBurrow writes a burrow.toml into a temporary directory (its log and
// pidfile there too) for cluster and consumer "kaas" at k, with ZooKeeper
// at zk, and starts Burrow; it stops it at cleanup, printing its log if the
// test failed.
func startBurrow(t *testing.T, bin, zk string, k *kaasProc) *burrowProc {
	t.Helper()
	dir := t.TempDir()
	b := &burrowProc{
		api:     "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(freeLoopbackPort(t))),
		logFile: filepath.Join(dir, "burrow.log"),
		kaas:    k,
	}
	cfg := fmt.Sprintf(`[general]
pidfile=%q

[logging]
filename=%q
level="debug"

[zookeeper]
servers=[%q]
timeout=6
root-path="/burrow-test"

[client-profile.kaas]
client-id="burrow-test"
kafka-version="2.0.0"

[cluster.kaas]
class-name="kafka"
servers=[%q]
client-profile="kaas"
topic-refresh=1
offset-refresh=1

[consumer.kaas]
class-name="kafka"
cluster="kaas"
servers=[%q]
client-profile="kaas"
start-latest=false

[httpserver.default]
address=%q

[storage.default]
class-name="inmemory"
intervals=10
min-distance=1
expire-group=604800
workers=2

[evaluator.default]
class-name="caching"
expire-cache=1
`, filepath.Join(dir, "burrow.pid"), b.logFile, zk, k.Addr, k.Addr, strings.TrimPrefix(b.api, "http://"))
	if err := os.WriteFile(filepath.Join(dir, "burrow.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-dir", dir)
	cmd.Dir = dir
	// Burrow reads BURROW_* variables as configuration (viper's
	// AutomaticEnv): keep the environment from configuring it.
	for _, e := range os.Environ() {
		if !strings.HasPrefix(strings.ToUpper(e), "BURROW_") {
			cmd.Env = append(cmd.Env, e)
		}
	}
	b.process = startProcess(t, "Burrow", filepath.Join(dir, "burrow.out"), cmd)
	t.Cleanup(func() {
		b.stop(t)
		if t.Failed() {
			t.Logf("--- Burrow output ---\n%s\n--- Burrow log (tail) ---\n%s\n--- end of Burrow log ---", tail(b.logPath, 20), tail(b.logFile, 100))
		}
	})
	return b
}

// await polls GET path of Burrow's HTTP API every 250ms until ok accepts
// the answer, and fails the test with the last answer and what Burrow and
// kaas complained about when Burrow exits or burrowWait passes.
func (b *burrowProc) await(t *testing.T, what, path string, ok func(code int, body []byte) bool) []byte {
	t.Helper()
	hc := &http.Client{Timeout: 2 * time.Second}
	started := time.Now()
	last := "no answer yet"
	for {
		resp, err := hc.Get(b.api + path)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && ok(resp.StatusCode, body) {
				t.Logf("Burrow reports %s after %v", what, time.Since(started).Round(time.Millisecond))
				return body
			}
			last = fmt.Sprintf("%s: %s", resp.Status, truncate(strings.TrimSpace(string(body)), 3000))
		} else {
			last = err.Error()
		}
		if !b.running() {
			t.Fatalf("Burrow exited (%v) before it reported %s; last answer of GET %s: %s\n%s", b.waitErr, what, path, last, b.diagnosis())
		}
		if time.Since(started) > burrowWait {
			t.Fatalf("Burrow did not report %s within %v; last answer of GET %s: %s\n%s", what, burrowWait, path, last, b.diagnosis())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// burrowLag is the answer of GET /v3/kafka/<cluster>/consumer/<group>/lag.
type burrowLag struct {
	Error   bool   `json:"error"`
	Message string `json:"message"`
	Status  struct {
		Cluster    string `json:"cluster"`
		Group      string `json:"group"`
		Status     string `json:"status"`
		Partitions []struct {
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Status    string `json:"status"`
			End       *struct {
				Offset int64 `json:"offset"`
				Lag    int64 `json:"lag"`
			} `json:"end"`
			CurrentLag int64 `json:"current_lag"`
		} `json:"partitions"`
		TotalLag int64 `json:"totallag"`
	} `json:"status"`
}

// awaitLag waits until Burrow reports, for each partition p of topic,
// group's last commit committed[p] and the lag end[p]-committed[p].
func (b *burrowProc) awaitLag(t *testing.T, group, topic string, end, committed []int64) {
	t.Helper()
	var want []string
	var total int64
	for p := range committed {
		lag := end[p] - committed[p]
		want = append(want, fmt.Sprintf("%s-%d offset %d lag %d", topic, p, committed[p], lag))
		total += lag
	}
	what := fmt.Sprintf("group %s at %s (total lag %d)", group, strings.Join(want, ", "), total)
	b.await(t, what, "/v3/kafka/kaas/consumer/"+group+"/lag", func(code int, body []byte) bool {
		var r burrowLag
		if code != http.StatusOK || json.Unmarshal(body, &r) != nil || r.Error || r.Status.Group != group {
			return false
		}
		var got []string
		for _, p := range r.Status.Partitions {
			if p.Topic == topic && p.End != nil {
				got = append(got, fmt.Sprintf("%s-%d offset %d lag %d", p.Topic, p.Partition, p.End.Offset, p.CurrentLag))
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want) && r.Status.TotalLag == total
	})
}

// commitAndRejoin has a classic group's only member commit offsets once its
// group is Stable, then rejoin (a new generation, a new GroupMetadata
// record). Burrow 1.2.1 forgets a group without commits whenever its API
// is asked about it, owners included; the record written after the commit
// gives it the owners of a group it keeps.
func commitAndRejoin(ctx context.Context, adm *kadm.Client, member *kgo.Client, group, topic string) error {
	stable := func() (bool, error) {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false, err
		}
		return d[group].State == "Stable", nil
	}
	for {
		ok, err := stable()
		if err != nil {
			return fmt.Errorf("describe: %w", err)
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not Stable: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	var commitErr error
	member.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 10}, 1: {Epoch: -1, Offset: 20}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				for _, t := range resp.Topics {
					for _, p := range t.Partitions {
						err = cmp.Or(err, kerr.ErrorForCode(p.ErrorCode))
					}
				}
			}
			commitErr = err
		})
	if commitErr != nil {
		return fmt.Errorf("commit: %w", commitErr)
	}
	member.ForceRebalance() // the leader rejoins: a new generation
	return nil
}

// awaitOwners waits until Burrow reports owner and clientID for both
// partitions of topic in group (GET /v3/kafka/<cluster>/consumer/<group>).
func (b *burrowProc) awaitOwners(t *testing.T, group, topic, owner, clientID string) {
	t.Helper()
	what := fmt.Sprintf("group %s's partitions of %s owned by %q (client id %q)", group, topic, owner, clientID)
	b.await(t, what, "/v3/kafka/kaas/consumer/"+group, func(code int, body []byte) bool {
		var r struct {
			Topics map[string][]struct {
				Owner    string `json:"owner"`
				ClientID string `json:"client_id"`
			} `json:"topics"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &r) != nil || len(r.Topics[topic]) != 2 {
			return false
		}
		for _, p := range r.Topics[topic] {
			if p.Owner != owner || p.ClientID != clientID {
				return false
			}
		}
		return true
	})
}

// diagnosis is what Burrow logged at warn level and above (each message
// once) and the request versions kaas refused: why Burrow saw nothing.
func (b *burrowProc) diagnosis() string {
	var sb strings.Builder
	sb.WriteString("Burrow's warnings and errors:\n")
	seen := map[string]bool{}
	if f, err := os.Open(b.logFile); err != nil {
		fmt.Fprintf(&sb, "  (no log: %v)\n", err)
	} else {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var e map[string]any
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if lvl, _ := e["level"].(string); lvl == "debug" || lvl == "info" {
				continue
			}
			// One line per message, not per partition or record.
			for _, f := range []string{"ts", "partition", "offset_partition", "offset_offset"} {
				delete(e, f)
			}
			line, _ := json.Marshal(e)
			if !seen[string(line)] && len(seen) < 30 {
				seen[string(line)] = true
				fmt.Fprintf(&sb, "  %s\n", line)
			}
		}
		f.Close()
		if len(seen) == 0 {
			sb.WriteString("  (none)\n")
		}
	}
	if s := strings.TrimSpace(tail(b.logPath, 3)); s != "" {
		fmt.Fprintf(&sb, "Burrow's output ends with:\n  %s\n", strings.ReplaceAll(s, "\n", "\n  "))
	}
	refused := map[string]bool{}
	for _, line := range strings.Split(b.kaas.Log(), "\n") {
		var e struct {
			API     string `json:"api"`
			Version *int   `json:"version"`
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(line), &e) == nil && e.Version != nil && strings.Contains(e.Message, "unsupported version") {
			refused[fmt.Sprintf("%s v%d", e.API, *e.Version)] = true
		}
	}
	if len(refused) > 0 {
		names := make([]string, 0, len(refused))
		for n := range refused {
			names = append(names, n)
		}
		slices.Sort(names)
		fmt.Fprintf(&sb, "kaas closed Burrow's connections on request versions it does not serve: %s\n", strings.Join(names, ", "))
	}
	return sb.String()
}
