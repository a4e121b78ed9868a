package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// sharetoolsProduce writes n records to partitions 0..parts-1 in turn,
// key k<i> and a 100-byte value, and returns each partition's offsets.
func sharetoolsProduce(t *testing.T, addr, topic string, parts, n int) map[int32][]int64 {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: []byte(fmt.Sprintf("k%d", i)),
			Value: []byte(fmt.Sprintf("%-100s", fmt.Sprintf("v%d", i)))})
	}
	res, err := cl.ProduceSync(ctxT(t, 20*time.Second), recs...).First()
	if err != nil {
		t.Fatal(err, res)
	}
	offsets := map[int32][]int64{}
	for _, r := range recs {
		offsets[r.Partition] = append(offsets[r.Partition], r.Offset)
	}
	return offsets
}

// sharetoolsPerfLine is a share-consumer-perf-test stats line with
// --date-format "yyyy-MM-dd HH:mm:ss.SSS".
var sharetoolsPerfLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}), (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}), (\d+\.\d{4}), (\d+\.\d{4}|Infinity|NaN), (\d+\.\d{4}|Infinity|NaN), (\d+), (\d+)$`)

// sharetoolsCheckStats checks a stats line's record count and MB, and that
// its fetch time is its end minus its start.
func sharetoolsCheckStats(t *testing.T, line string, wantRecords, wantBytes int) {
	t.Helper()
	m := sharetoolsPerfLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("stats line %q", line)
	}
	start, err1 := time.ParseInLocation("2006-01-02 15:04:05.000", m[1], time.Local)
	end, err2 := time.ParseInLocation("2006-01-02 15:04:05.000", m[2], time.Local)
	if err1 != nil || err2 != nil {
		t.Fatalf("stats line %q: %v %v", line, err1, err2)
	}
	if n, _ := strconv.Atoi(m[6]); n != wantRecords {
		t.Errorf("stats line %q: %d records, want %d", line, n, wantRecords)
	}
	if want := fmt.Sprintf("%.4f", float64(wantBytes)/(1024*1024)); m[3] != want {
		t.Errorf("stats line %q: MB %s, want %s", line, m[3], want)
	}
	if fetchMs, _ := strconv.ParseInt(m[7], 10, 64); fetchMs != end.Sub(start).Milliseconds() {
		t.Errorf("stats line %q: fetch.time.ms %d, want end - start = %d", line, fetchMs, end.Sub(start).Milliseconds())
	}
}

// TestShareConsumerPerfTestTool: `kaas share-consumer-perf-test` consumes
// and accepts the records produced through a share group, with one or
// several share consumers, prints Kafka's stats lines, and refuses what
// Kafka refuses (or kaas cannot honour) without joining the group.
func TestShareConsumerPerfTestTool(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	adm := newAdmin(t, addr)
	createTopic(t, addr, "scp", 2, nil)
	const n = 60
	const nBytes = 10*2 + 50*3 + n*100 // keys k0..k59, 100-byte values
	sharetoolsProduce(t, addr, "scp", 2, n)
	perf := func(t *testing.T, args ...string) []string {
		t.Helper()
		out := mustTool(t, append([]string{"share-consumer-perf-test", "--bootstrap-server", addr, "--topic", "scp",
			"--date-format", "yyyy-MM-dd HH:mm:ss.SSS"}, args...)...)
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	const header = "start.time, end.time, data.consumed.in.MB, MB.sec, nMsg.sec, data.consumed.in.nMsg, fetch.time.ms"

	t.Run("one consumer reads and accepts every record", func(t *testing.T) {
		lines := perf(t, "--group", "scp-one", "--num-records", strconv.Itoa(n), "--timeout", "20000")
		if len(lines) != 2 || lines[0] != header {
			t.Fatalf("output %q", lines)
		}
		sharetoolsCheckStats(t, lines[1], n, nBytes)
		if g := listedGroup(t, adm, "scp-one"); g.GroupType != "share" {
			t.Errorf("group listed as %+v, want a share group", g)
		}
		// Accepted: the group's next member gets nothing, and says so.
		lines = perf(t, "--group", "scp-one", "--num-records", "1", "--timeout", "1500", "--hide-header")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "WARNING: Exiting before consuming the expected number of records: timeout (1500 ms) exceeded.") {
			t.Fatalf("second run %q", lines)
		}
		sharetoolsCheckStats(t, lines[1], 0, 0)
	})

	t.Run("threads count the records between them", func(t *testing.T) {
		lines := perf(t, "--group", "scp-two", "--messages", strconv.Itoa(n), "--threads", "2", "--show-consumer-stats",
			"--hide-header", "--command-property", "client.id=my-perf", "--timeout", "20000")
		if len(lines) != 4 || lines[0] != "Warning: --messages is deprecated. Use --num-records instead." {
			t.Fatalf("output %q", lines)
		}
		sum := 0
		for i, l := range lines[1:3] {
			prefix := fmt.Sprintf("Share consumer %d having client id my-perf-%d consumption metrics- ", i+1, i+1)
			if !strings.HasPrefix(l, prefix) {
				t.Fatalf("consumer line %q, want prefix %q", l, prefix)
			}
			m := sharetoolsPerfLine.FindStringSubmatch(strings.TrimPrefix(l, prefix))
			if m == nil {
				t.Fatalf("consumer line %q", l)
			}
			c, _ := strconv.Atoi(m[6])
			sum += c
		}
		if sum != n {
			t.Errorf("the consumers read %d records between them, want %d", sum, n)
		}
		sharetoolsCheckStats(t, lines[3], n, nBytes)
	})

	t.Run("detailed stats", func(t *testing.T) {
		lines := perf(t, "--group", "scp-three", "--num-records", strconv.Itoa(n), "--show-detailed-stats", "--reporting-interval", "1", "--timeout", "20000")
		if lines[0] != header || len(lines) < 3 {
			t.Fatalf("output %q", lines)
		}
		progress := regexp.MustCompile(`^\S+ \S+, \S+ \S+, \d+\.\d{4}, \d+\.\d{4}, \d+\.\d{4}, (\d+), \d+ for share consumer 1$`)
		last := 0
		for _, l := range lines[1 : len(lines)-1] {
			m := progress.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("progress line %q", l)
			}
			c, _ := strconv.Atoi(m[1])
			if c <= last || c > n {
				t.Errorf("progress line %q after %d records", l, last)
			}
			last = c
		}
		sharetoolsCheckStats(t, lines[len(lines)-1], n, nBytes)
	})

	t.Run("refusals", func(t *testing.T) {
		base := []string{"share-consumer-perf-test", "--bootstrap-server", addr, "--topic", "scp", "--group", "scp-refused"}
		cfg := writeProperties(t, "client.id=x")
		for _, c := range []struct {
			msg  string
			args []string
		}{
			{`Missing required argument "[topic]"`, []string{"share-consumer-perf-test", "--bootstrap-server", addr, "--num-records", "1"}},
			{`Missing required argument "[bootstrap-server]"`, []string{"share-consumer-perf-test", "--topic", "scp", "--num-records", "1"}},
			{"Exactly one of the following arguments is required: [messages], [num-records]", base},
			{"Exactly one of the following arguments is required: [messages], [num-records]", append(base, "--messages", "1", "--num-records", "1")},
			{`Option "[consumer.config]" can't be used with option "[command-config]"`, append(base, "--num-records", "1", "--consumer.config", cfg, "--command-config", cfg)},
			{"Reporting interval must be greater than 0.", append(base, "--num-records", "1", "--reporting-interval", "0")},
			{"--print-metrics is not supported", append(base, "--num-records", "1", "--print-metrics")},
			{"--threads 0: want at least 1", append(base, "--num-records", "1", "--threads", "0")},
			{"--fetch-size 0: want at least 1", append(base, "--num-records", "1", "--fetch-size", "0")},
			{"share.acknowledgement.mode=explicit is not supported", append(base, "--num-records", "1", "--command-property", "share.acknowledgement.mode=explicit")},
			{"consumer property isolation.level is not supported", append(base, "--num-records", "1", "--command-property", "isolation.level=read_committed")},
			{`pattern letter 'Q' is not supported`, append(base, "--num-records", "1", "--date-format", "Q")},
		} {
			verifiableRefused(t, c.msg, c.args...)
		}
		if g := listedGroup(t, adm, "scp-refused"); g.Group != "" {
			t.Errorf("a refused run joined share group %+v", g)
		}
	})
}

// sharetoolsEvents parses the tool's JSON lines, checking each starts with
// timestamp then name, as Kafka's Jackson output does.
func sharetoolsEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	head := regexp.MustCompile(`^\{"timestamp":\d+,"name":"[a-z_]+"`)
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil || !head.MatchString(l) {
			t.Fatalf("event line %q: %v", l, err)
		}
		evs = append(evs, e)
	}
	return evs
}

// sharetoolsOffsets adds up the partitions of records_consumed or
// offsets_acknowledged events: the offsets by partition, checking each
// set's count.
func sharetoolsOffsets(t *testing.T, evs []map[string]any, name string) map[int32][]int64 {
	t.Helper()
	got := map[int32][]int64{}
	for _, e := range evs {
		if e["name"] != name {
			continue
		}
		if name == "offsets_acknowledged" && e["success"] != true {
			t.Errorf("acknowledgement failed: %v", e)
		}
		total := 0
		for _, p := range e["partitions"].([]any) {
			pm := p.(map[string]any)
			offs := pm["offsets"].([]any)
			if int(pm["count"].(float64)) != len(offs) || pm["topic"] != "vsc" {
				t.Errorf("partition set %v", pm)
			}
			for _, o := range offs {
				got[int32(pm["partition"].(float64))] = append(got[int32(pm["partition"].(float64))], int64(o.(float64)))
			}
			total += len(offs)
		}
		if int(e["count"].(float64)) != total {
			t.Errorf("event %v counts %v records, its partitions %d", e, e["count"], total)
		}
	}
	for p := range got {
		slices.Sort(got[p])
	}
	return got
}

// TestVerifiableShareConsumerTool: `kaas verifiable-share-consumer` sets
// the share group's reset strategy, reports each poll's records and each
// acknowledgement as Kafka's JSON events, in each acknowledgement mode,
// and what it acknowledged is not delivered again; it refuses what Kafka
// refuses without touching the group.
func TestVerifiableShareConsumerTool(t *testing.T) {
	_, addr := testBroker(t) // share groups start at the latest offset unless told otherwise
	adm := newAdmin(t, addr)
	createTopic(t, addr, "vsc", 2, nil)
	const n = 10
	produced := sharetoolsProduce(t, addr, "vsc", 2, n)
	run := func(t *testing.T, d time.Duration, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := consoleTool(t, ctxT(t, d), "", append([]string{"verifiable-share-consumer", "--bootstrap-server", addr, "--topic", "vsc"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: stdout %s stderr %s", code, out, errOut)
		}
		return out, errOut
	}
	ackLine := regexp.MustCompile(`^\{"timestamp":\d+,"name":"offsets_acknowledged","count":\d+,"partitions":\[\{"topic":"vsc","partition":[01],"count":\d+,"offsets":\[\d+(,\d+)*\]\}\],"success":true\}$`)
	consumedLine := regexp.MustCompile(`^\{"timestamp":\d+,"name":"records_consumed","count":\d+,"partitions":\[(\{"topic":"vsc","partition":[01],"count":\d+,"offsets":\[\d+(,\d+)*\]\},?)+\]\}$`)

	for _, mode := range []string{"auto", "sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			group := "vsc-" + mode
			out, _ := run(t, 30*time.Second, "--group-id", group, "--acknowledgement-mode", mode, "--offset-reset-strategy", "EARLIEST",
				"--max-messages", strconv.Itoa(n), "--verbose")
			evs := sharetoolsEvents(t, out)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if evs[0]["name"] != "startup_complete" || evs[len(evs)-1]["name"] != "shutdown_complete" ||
				!regexp.MustCompile(`^\{"timestamp":\d+,"name":"offset_reset_strategy_set","offsetResetStrategy":"earliest"\}$`).MatchString(lines[1]) {
				t.Fatalf("events %s", out)
			}
			for _, l := range lines {
				if strings.Contains(l, `"offsets_acknowledged"`) && !ackLine.MatchString(l) {
					t.Errorf("offsets_acknowledged line %s", l)
				}
				if strings.Contains(l, `"records_consumed"`) && !consumedLine.MatchString(l) {
					t.Errorf("records_consumed line %s", l)
				}
			}
			if got := sharetoolsOffsets(t, evs, "records_consumed"); fmt.Sprint(got) != fmt.Sprint(produced) {
				t.Errorf("consumed %v, produced %v", got, produced)
			}
			if got := sharetoolsOffsets(t, evs, "offsets_acknowledged"); fmt.Sprint(got) != fmt.Sprint(produced) {
				t.Errorf("acknowledged %v, produced %v", got, produced)
			}
			// record_data carries each record's key and value at its offset.
			data := 0
			for _, e := range evs {
				if e["name"] == "record_data" {
					data++
					off, p := int64(e["offset"].(float64)), int32(e["partition"].(float64))
					i := slices.Index(produced[p], off)*2 + int(p)
					if e["key"] != fmt.Sprintf("k%d", i) || strings.TrimSpace(e["value"].(string)) != fmt.Sprintf("v%d", i) {
						t.Errorf("record_data %v, want k%d", e, i)
					}
				}
			}
			if data != n {
				t.Errorf("%d record_data events, want %d", data, n)
			}
			if g := listedGroup(t, adm, group); g.GroupType != "share" {
				t.Errorf("group listed as %+v, want a share group", g)
			}
			if c := describeGroupConfigs(t, newClient(t, addr), group)["share.auto.offset.reset"]; c.Value == nil || *c.Value != "earliest" {
				t.Errorf("share.auto.offset.reset of %s is %+v", group, c)
			}
			// Acknowledged: the group's next member is given nothing.
			out, _ = run(t, 2*time.Second, "--group-id", group)
			names := []string{}
			for _, e := range sharetoolsEvents(t, out) {
				names = append(names, e["name"].(string))
			}
			if strings.Join(names, ",") != "startup_complete,shutdown_requested,shutdown_complete" {
				t.Errorf("second member's events: %s", out)
			}
		})
	}

	t.Run("refusals", func(t *testing.T) {
		base := []string{"verifiable-share-consumer", "--bootstrap-server", addr, "--topic", "vsc", "--group-id", "vsc-refused", "--offset-reset-strategy", "earliest"}
		cfg := writeProperties(t, "share.acknowledgement.mode=explicit")
		for _, c := range []struct {
			msg  string
			args []string
		}{
			{"one of the arguments --bootstrap-server is required", []string{"verifiable-share-consumer", "--topic", "vsc", "--group-id", "g"}},
			{"argument --topic is required", []string{"verifiable-share-consumer", "--bootstrap-server", addr, "--group-id", "g"}},
			{"argument --group-id is required", []string{"verifiable-share-consumer", "--bootstrap-server", addr, "--topic", "vsc"}},
			{"--acknowledgement-mode manual: must be either 'auto', 'sync' or 'async'", append(base, "--acknowledgement-mode", "manual")},
			{"--offset-reset-strategy sometime: must be either 'earliest' or 'latest'", append(slices.Clone(base[:len(base)-1]), "sometime")},
			{"--ack-pattern is not supported", append(base, "--ack-pattern", "accept,release")},
			{"Options --consumer.config and --command-config are mutually exclusive.", append(base, "--consumer.config", cfg, "--command-config", cfg)},
			{"share.acknowledgement.mode=explicit is not supported", append(base, "--command-config", cfg)},
		} {
			verifiableRefused(t, c.msg, c.args...)
		}
		if g := listedGroup(t, adm, "vsc-refused"); g.Group != "" {
			t.Errorf("a refused run joined share group %+v", g)
		}
		if c := describeGroupConfigs(t, newClient(t, addr), "vsc-refused")["share.auto.offset.reset"]; c.Value != nil && *c.Value == "earliest" {
			t.Errorf("a refused run set share.auto.offset.reset: %+v", c)
		}
	})
}
