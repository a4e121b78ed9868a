package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"golang.org/x/sys/unix"
)

// scrapeHTTP keeps no connection open: one would hold a goroutine in the
// broker measured (TestLifecyclesLeaveNoResidue counts them).
var scrapeHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// scrape reads the broker's /metrics: the text and its parsed families.
func scrape(t testing.TB, httpAddr string) (string, map[string]*dto.MetricFamily) {
	t.Helper()
	resp, err := scrapeHTTP.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %s\n%s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, body)
	}
	return string(body), families
}

// sample is the value of the series name{labels} (a histogram's count), or
// -1 if there is none.
func sample(families map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	mf := families[name]
	if mf == nil {
		return -1
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			return m.GetUntyped().GetValue()
		}
	}
	return -1
}

// produceRecords produces n records to topic in batches of five, acks=all.
func produceRecords(t *testing.T, addr, topic string, n int) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	prod := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.AllowAutoTopicCreation())
	for sent := 0; sent < n; {
		var recs []*kgo.Record
		for i := 0; i < 5 && sent < n; i++ {
			recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("record-%d", sent))})
			sent++
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// sumSamples sums every series name{labels} (the labels given, any
// others), and counts them.
func sumSamples(families map[string]*dto.MetricFamily, name string, labels ...string) (sum float64, n int) {
	mf := families[name]
	if mf == nil {
		return 0, 0
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		sum += m.GetGauge().GetValue()
		n++
	}
	return sum, n
}

// TestMetricsMoveWithTraffic produces and consumes through a group with
// franz-go, commits, produces more, then checks /metrics counted that
// traffic, shows the group's committed offsets and lag, and that promtool
// finds the exposition clean.
func TestMetricsMoveWithTraffic(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed (.ci/install-test-deps.sh installs it)")
	}
	httpAddr := freeAddr(t)
	_, addr, _ := startTestBroker(t, "--data-dir", t.TempDir(), "--http-addr", httpAddr, "--group-initial-rebalance-delay", "0s")
	const topic, n = "metrics-traffic", 12
	produceRecords(t, addr, topic, n)

	ctx := ctxT(t, 30*time.Second)
	cons := newClient(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumerGroup("metrics-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	for got := 0; got < n; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	_, consumed := scrape(t, httpAddr)
	consumedBytes := sample(consumed, "kaas_produced_bytes_total", "topic", topic)
	// Records produced after the commit are the group's lag.
	const behind = 7
	produceRecords(t, addr, topic, behind)
	group := []string{"group", "metrics-group", "topic", topic}
	var text string
	var fam map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; {
		text, fam = scrape(t, httpAddr)
		committed, _ := sumSamples(fam, "kaas_consumer_group_committed_offset", group...)
		lag, lags := sumSamples(fam, "kaas_consumer_group_lag", group...)
		hwm, _ := sumSamples(fam, "kaas_partition_high_watermark", "topic", topic)
		if committed == n && lag == behind && lags > 0 && hwm == n+behind {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets %v, lag %v over %d series, high watermarks %v; want %d, %d, %d", committed, lag, lags, hwm, n, behind, n+behind)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := sample(fam, "kaas_produced_records_total", "topic", topic); got != n+behind {
		t.Errorf("kaas_produced_records_total{topic=%q} = %v, want %d", topic, got, n+behind)
	}
	produced := sample(fam, "kaas_produced_bytes_total", "topic", topic)
	if produced <= 0 {
		t.Errorf("kaas_produced_bytes_total{topic=%q} = %v", topic, produced)
	}
	if got := sample(fam, "kaas_fetched_bytes_total", "topic", topic); got < consumedBytes || consumedBytes <= 0 {
		t.Errorf("kaas_fetched_bytes_total{topic=%q} = %v, below the %v bytes produced and consumed", topic, got, consumedBytes)
	}
	atLeast := func(want float64, name string, labels ...string) {
		t.Helper()
		if got := sample(fam, name, labels...); got < want {
			t.Errorf("%s%v = %v, want at least %v", name, labels, got, want)
		}
	}
	atLeast(n/5, "kaas_requests_total", "api", "Produce", "error", "NONE")
	atLeast(1, "kaas_requests_total", "api", "Fetch", "error", "NONE")
	atLeast(1, "kaas_requests_total", "api", "JoinGroup", "error", "NONE")
	atLeast(n/5, "kaas_request_duration_seconds", "api", "Produce")
	atLeast(1, "kaas_request_duration_seconds", "api", "Metadata")
	atLeast(1, "kaas_group_commit_duration_seconds")
	atLeast(1, "kaas_group_commit_batch_size")
	atLeast(1, "kaas_partitions", "state", "leading")
	atLeast(1, "kaas_partitions_led")
	atLeast(1, "kaas_topics")
	atLeast(1, "kaas_connections", "listener", "PLAINTEXT") // the consumer's, at least
	if got := sample(fam, "kaas_group_slots_served"); got != 50 {
		t.Errorf("kaas_group_slots_served = %v, want every slot in local-dev mode", got)
	}
	atLeast(0, "kaas_controller_epoch")
	atLeast(0, "kaas_assignment_version")
	atLeast(float64(n/5), "kaas_disk_fsyncs_total")
	atLeast(1, "kaas_consumer_groups", "state", "Stable")
	atLeast(1, "kaas_consumer_group_rebalances_total")
	atLeast(1, "go_goroutines")
	atLeast(0, "process_cpu_seconds_total")
	atLeast(0, "kaas_actor_mailbox_messages", "kind", "partition")
	atLeast(0, "kaas_actor_mailbox_messages", "kind", "group")
	atLeast(0, "kaas_actor_mailbox_messages", "kind", "connection")
	if mf := fam["kaas_group_commit_batch_size"]; mf != nil && len(mf.GetMetric()) > 0 {
		if sum := mf.GetMetric()[0].GetHistogram().GetSampleSum(); sum < n/5 {
			t.Errorf("group commits released %v acks=all produces, want at least %d", sum, n/5)
		}
	}

	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(text)
	out, err := check.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestMetricsPartitionSizesAndVolume: the partitions led here export their
// log start offsets and sizes, the sizes DescribeLogDirs answers; with
// --data-dir the volume gauges are the file system's (statfs), and in
// memory there are none.
func TestMetricsPartitionSizesAndVolume(t *testing.T) {
	for _, mode := range []struct {
		name string
		disk bool
	}{{"disk", true}, {"memory", false}} {
		t.Run(mode.name, func(t *testing.T) {
			httpAddr := freeAddr(t)
			args := []string{"--http-addr", httpAddr}
			dir := t.TempDir()
			if mode.disk {
				args = append(args, "--data-dir", dir)
			}
			_, addr, _ := startTestBroker(t, args...)
			const topic = "metrics-sizes"
			createTopic(t, addr, topic, 2, nil)
			ctx := ctxT(t, 30*time.Second)
			prod := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
			for i := range 10 {
				value := make([]byte, 1000)
				_, _ = rand.Read(value) // incompressible
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(i % 2), Value: value}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			adm := newAdmin(t, addr)
			if dr, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {At: 3}}}); err != nil || dr.Error() != nil {
				t.Fatalf("DeleteRecords: %v %v", err, dr.Error())
			}
			dirs, err := adm.DescribeAllLogDirs(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
			if err != nil {
				t.Fatal(err)
			}
			sizes := map[int32]int64{}
			dirs.Each(func(d kadm.DescribedLogDir) {
				for p, ps := range d.Topics[topic] {
					sizes[p] = ps.Size
				}
			})
			_, fam := scrape(t, httpAddr)
			for p, start := range map[int32]float64{0: 3, 1: 0} {
				part := []string{"topic", topic, "partition", strconv.Itoa(int(p))}
				if got := sample(fam, "kaas_partition_log_start_offset", part...); got != start {
					t.Errorf("kaas_partition_log_start_offset%v = %v, want %v", part, got, start)
				}
				got := sample(fam, "kaas_partition_log_size_bytes", part...)
				if got < 5*1000 || got != float64(sizes[p]) {
					t.Errorf("kaas_partition_log_size_bytes%v = %v, want DescribeLogDirs' %d (five 1000-byte records or more)", part, got, sizes[p])
				}
			}
			capacity, available := sample(fam, "kaas_volume_capacity_bytes"), sample(fam, "kaas_volume_available_bytes")
			if !mode.disk {
				if capacity != -1 || available != -1 {
					t.Fatalf("in memory: volume capacity %v, available %v; want neither exported", capacity, available)
				}
				return
			}
			var st unix.Statfs_t
			if err := unix.Statfs(dir, &st); err != nil {
				t.Fatal(err)
			}
			if want := float64(int64(st.Blocks) * st.Bsize); capacity != want {
				t.Errorf("kaas_volume_capacity_bytes = %v, statfs says %v", capacity, want)
			}
			if available <= 0 || available > capacity {
				t.Errorf("kaas_volume_available_bytes = %v of %v", available, capacity)
			}
		})
	}
}

// TestPrometheusScrapesBroker runs a real Prometheus server against the
// broker's /metrics, with the alerting rules under deploy/ loaded, and asks
// it, through PromQL, how many records a topic received; then runs the
// dashboard's queries and checks the alerting rules evaluate.
func TestPrometheusScrapesBroker(t *testing.T) {
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Fatal("prometheus is not installed (.ci/install-test-deps.sh installs it)")
	}
	httpAddr := freeAddr(t)
	_, addr, _ := startTestBroker(t, "--data-dir", t.TempDir(), "--http-addr", httpAddr)
	const topic, n = "metrics-promql", 7
	produceRecords(t, addr, topic, n)

	dir := t.TempDir()
	rules, err := filepath.Abs(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
  - job_name: kaas
    static_configs:
      - targets: [%q]
`, rules, httpAddr)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddr(t)
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	query := "http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(fmt.Sprintf(`kaas_produced_records_total{topic=%q}`, topic))
	deadline := time.Now().Add(45 * time.Second)
	last := ""
	for {
		select {
		case <-exited:
			t.Fatalf("prometheus exited:\n%s", log.String())
		default:
		}
		if v, ok := promQuery(query); ok {
			if v == strconv.Itoa(n) {
				break
			}
			last = v
		}
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus answers %q for kaas_produced_records_total{topic=%q}, want %d; its log:\n%s", last, topic, n, log.String())
		}
		time.Sleep(250 * time.Millisecond)
	}
	checkDashboard(t, "http://"+promAddr, "http://"+httpAddr+"/metrics")
	checkAlertRules(t, "http://"+promAddr, "http://"+httpAddr+"/metrics")
}

// checkDashboard runs every query of the Grafana dashboard under deploy/
// against a Prometheus server, and checks that each kaas series it names is
// one docs/operations.md documents and each Go or process series is one the
// broker exports, so the dashboard cannot drift from the metrics.
func checkDashboard(t *testing.T, prom, metricsURL string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "kaas.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("deploy/grafana/kaas.json: %v", err)
	}
	known := seriesKnown(t, metricsURL)
	queries := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			queries++
			expr := strings.ReplaceAll(tg.Expr, "$__rate_interval", "1m")
			for _, name := range seriesRE.FindAllString(expr, -1) {
				if !known(name) {
					t.Errorf("panel %q queries %s, which is neither documented nor exported", p.Title, name)
				}
			}
			r, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(expr))
			if err != nil {
				t.Fatal(err)
			}
			var answer struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			err = json.NewDecoder(r.Body).Decode(&answer)
			r.Body.Close()
			if err != nil || answer.Status != "success" {
				t.Errorf("panel %q: Prometheus refuses %s: %v %s", p.Title, expr, err, answer.Error)
			}
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}

// seriesRE matches the series names in a PromQL expression.
var seriesRE = regexp.MustCompile(`\b(?:kaas|go|process)_[a-z_]+\b`)

// seriesKnown reports whether a series name is one docs/operations.md
// documents (kaas_*, histogram suffixes stripped) or one the broker at
// metricsURL exports (go_*, process_*).
func seriesKnown(t *testing.T, metricsURL string) func(string) bool {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	exposition, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return func(name string) bool {
		if strings.HasPrefix(name, "kaas_") {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				base = strings.TrimSuffix(base, suffix)
			}
			return strings.Contains(string(doc), "| `"+base+"` |")
		}
		return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `[{ ]`).Match(exposition)
	}
}

// alertRules is the alerting rules file under deploy/.
var alertRules = filepath.Join("..", "..", "deploy", "prometheus", "alerts.yaml")

// TestAlertRules: promtool finds the alerting rules valid, and their unit
// tests (deploy/prometheus/alerts_test.yaml: each alert fires on the
// series that should raise it, and only then) pass.
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not installed (.ci/install-test-deps.sh installs it)")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = filepath.Dir(alertRules)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// checkAlertRules asks the Prometheus server that loaded the alerting
// rules and scrapes a broker how each rule fared: every rule evaluated
// without an error, and every series it names is one the broker
// documents or exports.
func checkAlertRules(t *testing.T, prom, metricsURL string) {
	t.Helper()
	raw, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Count(string(raw), "- alert: ")
	known := seriesKnown(t, metricsURL)
	type rule struct {
		Name           string `json:"name"`
		Query          string `json:"query"`
		Health         string `json:"health"`
		LastError      string `json:"lastError"`
		LastEvaluation string `json:"lastEvaluation"`
	}
	var rules []rule
	evaluated := func() bool {
		resp, err := http.Get(prom + "/api/v1/rules?type=alert")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var r struct {
			Status string `json:"status"`
			Data   struct {
				Groups []struct {
					Rules []rule `json:"rules"`
				} `json:"groups"`
			} `json:"data"`
		}
		if json.NewDecoder(resp.Body).Decode(&r) != nil || r.Status != "success" {
			return false
		}
		rules = rules[:0]
		for _, g := range r.Data.Groups {
			rules = append(rules, g.Rules...)
		}
		for _, ru := range rules {
			if ru.Health == "unknown" || strings.HasPrefix(ru.LastEvaluation, "0001-") {
				return false
			}
		}
		return len(rules) == want
	}
	for deadline := time.Now().Add(30 * time.Second); !evaluated(); time.Sleep(250 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Prometheus has %d alerting rules evaluated, want the %d of %s: %+v", len(rules), want, alertRules, rules)
		}
	}
	for _, ru := range rules {
		if ru.Health != "ok" || ru.LastError != "" {
			t.Errorf("rule %s: health %s, error %q", ru.Name, ru.Health, ru.LastError)
		}
		for _, name := range seriesRE.FindAllString(ru.Query, -1) {
			if !known(name) {
				t.Errorf("rule %s names %s, which is neither documented nor exported", ru.Name, name)
			}
		}
	}
}

// promQuery runs an instant query and returns its single sample's value.
func promQuery(u string) (string, bool) {
	resp, err := http.Get(u)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" || len(r.Data.Result) != 1 {
		return "", false
	}
	v, ok := r.Data.Result[0].Value[1].(string)
	return v, ok
}
