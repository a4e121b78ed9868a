package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// verifiableEvents parses a verifiable tool's stdout: one JSON object a
// line, each with timestamp and name.
func verifiableEvents(t *testing.T, out string) []map[string]any {
	t.Helper()
	var evs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not a JSON event line: %q (%v)", line, err)
		}
		if _, ok := ev["timestamp"].(float64); !ok || ev["name"] == nil {
			t.Fatalf("event without timestamp and name: %q", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

// verifiableNamed is the events called name.
func verifiableNamed(evs []map[string]any, name string) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev["name"] == name {
			out = append(out, ev)
		}
	}
	return out
}

// verifiableRefused checks a refused run: exit 2, msg on stderr, nothing
// on stdout.
func verifiableRefused(t *testing.T, msg string, args ...string) {
	t.Helper()
	out, errOut, code := consoleTool(t, ctxT(t, 10*time.Second), "", args...)
	if code != 2 || !strings.Contains(errOut, msg) || out != "" {
		t.Errorf("kaas %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, out, errOut, msg)
	}
}

// TestVerifiableProducerConsumerTools: `kaas verifiable-producer` prints
// Kafka's JSON events for records that are in the topic at the offsets it
// reports, and `kaas verifiable-consumer` reports the records of a group
// member's polls and commits the offsets the group then holds; both refuse
// what Kafka refuses.
func TestVerifiableProducerConsumerTools(t *testing.T) {
	_, addr := testBroker(t, "--auto-create-topics=false")
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "vp"); err != nil {
		t.Fatal(err)
	}

	t.Run("producer events match the log", func(t *testing.T) {
		out, errOut, code := consoleTool(t, ctx, "", "verifiable-producer", "--bootstrap-server", addr, "--topic", "vp",
			"--max-messages", "12", "--repeating-keys", "5", "--value-prefix", "7", "--message-create-time", "1700000000000", "--acks", "1")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		// Jackson's field order, key as a string, offsets as numbers.
		success := regexp.MustCompile(`^\{"timestamp":\d+,"name":"producer_send_success","key":"[0-4]","value":"7\.\d+","topic":"vp","partition":[01],"offset":\d+\}$`)
		for _, l := range lines[1 : len(lines)-2] {
			if !success.MatchString(l) {
				t.Errorf("send line %q", l)
			}
		}
		// Sent within a millisecond, Kafka's average is Infinity too.
		if !regexp.MustCompile(`^\{"timestamp":\d+,"name":"tool_data","sent":12,"acked":12,"target_throughput":-1,"avg_throughput":(\d+\.\d+(E\d+)?|"Infinity")\}$`).MatchString(lines[len(lines)-1]) {
			t.Errorf("tool_data line %q", lines[len(lines)-1])
		}
		evs := verifiableEvents(t, out)
		if evs[0]["name"] != "startup_complete" || evs[len(evs)-2]["name"] != "shutdown_complete" {
			t.Errorf("first and last events: %v ... %v", evs[0], evs[len(evs)-2:])
		}
		sent := map[string]map[string]any{} // "partition/offset" -> event
		for _, ev := range verifiableNamed(evs, "producer_send_success") {
			sent[fmt.Sprintf("%v/%v", ev["partition"], ev["offset"])] = ev
		}
		recs := consoleRecords(t, ctx, addr, "vp", 12)
		if len(sent) != 12 || len(recs) != 12 {
			t.Fatalf("%d events for %d records", len(sent), len(recs))
		}
		for _, r := range recs {
			ev := sent[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]
			if ev == nil || ev["key"] != string(r.Key) || ev["value"] != string(r.Value) {
				t.Errorf("record %d/%d %s=%s: event %v", r.Partition, r.Offset, r.Key, r.Value, ev)
			}
			if r.Timestamp.UnixMilli() < 1700000000000 || r.Timestamp.UnixMilli() > 1700000000000+60000 {
				t.Errorf("record %d/%d timestamp %d, want from --message-create-time", r.Partition, r.Offset, r.Timestamp.UnixMilli())
			}
		}
		if recs[0].Offset == 0 && recs[0].Partition == 0 && recs[0].Timestamp.UnixMilli() != 1700000000000 {
			t.Errorf("first record's timestamp %d", recs[0].Timestamp.UnixMilli())
		}
	})

	t.Run("producer throughput and send errors", func(t *testing.T) {
		start := time.Now()
		out := mustTool(t, "verifiable-producer", "--bootstrap-server", addr, "--topic", "vp", "--max-messages", "5", "--throughput", "40")
		if d := time.Since(start); d < 100*time.Millisecond {
			t.Errorf("5 messages at 40/s took %v", d)
		}
		td := verifiableNamed(verifiableEvents(t, out), "tool_data")
		if len(td) != 1 || td[0]["target_throughput"] != 40.0 || td[0]["acked"] != 5.0 {
			t.Errorf("tool_data %v", td)
		}
		// A topic that does not exist (and is not created): every send fails.
		out, errOut, code := consoleTool(t, ctx, "", "verifiable-producer", "--bootstrap-server", addr, "--topic", "vp-missing", "--max-messages", "2")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		evs := verifiableEvents(t, out)
		errs := verifiableNamed(evs, "producer_send_error")
		if len(errs) != 2 || errs[0]["exception"] != "class org.apache.kafka.common.errors.UnknownTopicOrPartitionException" || errs[0]["topic"] != "vp-missing" || errs[0]["message"] == "" {
			t.Errorf("send errors %v", errs)
		}
		if td := verifiableNamed(evs, "tool_data"); len(td) != 1 || td[0]["sent"] != 2.0 || td[0]["acked"] != 0.0 {
			t.Errorf("tool_data %v", td)
		}
		if consoleTopicExists(t, ctx, addr, "vp-missing") {
			t.Error("vp-missing was created")
		}
	})

	t.Run("producer refusals", func(t *testing.T) {
		vp := []string{"verifiable-producer", "--bootstrap-server", addr}
		verifiableRefused(t, "argument --topic is required", vp...)
		verifiableRefused(t, "one of the arguments --bootstrap-server is required", "verifiable-producer", "--topic", "vp")
		verifiableRefused(t, "argument --acks: invalid choice: '2'", append(vp, "--topic", "vp", "--acks", "2")...)
		verifiableRefused(t, "--broker-list is not supported", "verifiable-producer", "--broker-list", addr, "--topic", "vp")
		verifiableRefused(t, "--throughput 0", append(vp, "--topic", "vp", "--throughput", "0")...)
		verifiableRefused(t, "--repeating-keys 0", append(vp, "--topic", "vp", "--repeating-keys", "0")...)
		verifiableRefused(t, "-max-messages", append(vp, "--topic", "vp", "--max-messages", "x")...)
		props := writeProperties(t, "linger.ms=0")
		verifiableRefused(t, "Options --producer.config and --command-config are mutually exclusive.", append(vp, "--topic", "vp", "--producer.config", props, "--command-config", props)...)
		verifiableRefused(t, "producer property foo.bar is not supported", append(vp, "--topic", "vp", "--command-config", writeProperties(t, "foo.bar=1"))...)
		// The deprecated file flag still works, with Kafka's notice.
		out, errOut, code := consoleTool(t, ctx, "", append(vp, "--topic", "vp", "--max-messages", "1", "--producer.config", props)...)
		if code != 0 || !strings.Contains(errOut, "Option --producer.config has been deprecated") || len(verifiableNamed(verifiableEvents(t, out), "producer_send_success")) != 1 {
			t.Errorf("--producer.config: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "vc"); err != nil {
		t.Fatal(err)
	}
	mustTool(t, "verifiable-producer", "--bootstrap-server", addr, "--topic", "vc", "--max-messages", "12", "--repeating-keys", "4")
	ends := consoleEnds(t, ctx, adm, "vc")
	if ends[0]+ends[1] != 12 || ends[0] == 0 || ends[1] == 0 {
		t.Fatalf("vc end offsets %v", ends)
	}

	// consume runs the consumer and checks its events: the polls' records
	// add up to want with no gap or overlap per partition from offset 0,
	// and the group's committed offsets are what the commits reported.
	consume := func(t *testing.T, group string, want int, extra ...string) []map[string]any {
		t.Helper()
		args := append([]string{"verifiable-consumer", "--bootstrap-server", addr, "--topic", "vc", "--group-id", group, "--max-messages", fmt.Sprint(want)}, extra...)
		out, errOut, code := consoleTool(t, ctxT(t, 30*time.Second), "", args...)
		if code != 0 {
			t.Fatalf("exit %d: stdout %s stderr %s", code, out, errOut)
		}
		evs := verifiableEvents(t, out)
		if evs[0]["name"] != "startup_complete" || evs[len(evs)-1]["name"] != "shutdown_complete" {
			t.Errorf("first/last events %v %v", evs[0]["name"], evs[len(evs)-1]["name"])
		}
		if a := verifiableNamed(evs, "partitions_assigned"); len(a) == 0 || len(a[0]["partitions"].([]any)) != 2 ||
			a[0]["partitions"].([]any)[0].(map[string]any)["topic"] != "vc" {
			t.Errorf("partitions_assigned %v", a)
		}
		next := map[float64]float64{0: 0, 1: 0}
		total := 0.0
		for _, ev := range verifiableNamed(evs, "records_consumed") {
			for _, p := range ev["partitions"].([]any) {
				s := p.(map[string]any)
				part := s["partition"].(float64)
				if s["topic"] != "vc" || s["minOffset"] != next[part] || s["maxOffset"].(float64)-s["minOffset"].(float64)+1 != s["count"] {
					t.Errorf("record set %v, want from offset %v", s, next[part])
				}
				next[part] = s["maxOffset"].(float64) + 1
				total += s["count"].(float64)
			}
		}
		if total != float64(want) {
			t.Errorf("consumed %v records, want %d", total, want)
		}
		committed, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		for part, n := range next {
			o, ok := committed.Lookup("vc", int32(part))
			if n == 0 && !ok {
				continue
			}
			if !ok || float64(o.At) != n {
				t.Errorf("group %s partition %v: committed %v (%v), consumed to %v", group, part, o.At, ok, n)
			}
		}
		return evs
	}

	t.Run("consumer classic commits each poll", func(t *testing.T) {
		evs := consume(t, "vc-classic", 12, "--session-timeout", "10000", "--verbose")
		commits := verifiableNamed(evs, "offsets_committed")
		if len(commits) == 0 || len(commits) != len(verifiableNamed(evs, "records_consumed")) {
			t.Errorf("%d commits for %d polls", len(commits), len(verifiableNamed(evs, "records_consumed")))
		}
		for _, c := range commits {
			if c["success"] != true || c["error"] != nil {
				t.Errorf("commit %v", c)
			}
		}
		if rd := verifiableNamed(evs, "record_data"); len(rd) != 12 || rd[0]["topic"] != "vc" {
			t.Errorf("--verbose: %d record_data events", len(rd))
		}
	})

	t.Run("consumer protocol stops at max-messages", func(t *testing.T) {
		evs := consume(t, "vc-848", 5, "--group-protocol", "consumer", "--group-remote-assignor", "range")
		if len(verifiableNamed(evs, "offsets_committed")) == 0 {
			t.Error("no offsets_committed")
		}
		if g := listedGroup(t, adm, "vc-848"); g.GroupType != "consumer" {
			t.Errorf("group vc-848 listed as %+v, want a consumer-protocol group", g)
		}
	})

	t.Run("consumer auto-commit", func(t *testing.T) {
		evs := consume(t, "vc-auto", 12, "--enable-autocommit", "--assignment-strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor")
		if g := listedGroup(t, adm, "vc-auto"); g.GroupType != "classic" {
			t.Errorf("group vc-auto listed as %+v, want a classic group", g)
		}
		if c := verifiableNamed(evs, "offsets_committed"); len(c) != 0 {
			t.Errorf("auto-commit printed commits: %v", c)
		}
	})

	t.Run("consumer refusals", func(t *testing.T) {
		vc := []string{"verifiable-consumer", "--bootstrap-server", addr, "--topic", "vc"}
		verifiableRefused(t, "argument --group-id is required", vc...)
		verifiableRefused(t, "argument --topic is required", "verifiable-consumer", "--bootstrap-server", addr, "--group-id", "g")
		verifiableRefused(t, "one of the arguments --bootstrap-server is required", "verifiable-consumer", "--topic", "vc", "--group-id", "g")
		verifiableRefused(t, "--group-protocol bogus", append(vc, "--group-id", "g", "--group-protocol", "bogus")...)
		verifiableRefused(t, "--assignment-strategy is only used with --group-protocol classic", append(vc, "--group-id", "g", "--group-protocol", "consumer", "--assignment-strategy", "org.apache.kafka.clients.consumer.RangeAssignor")...)
		verifiableRefused(t, "--session-timeout is not supported with --group-protocol consumer", append(vc, "--group-id", "g", "--group-protocol", "consumer", "--session-timeout", "6000")...)
		verifiableRefused(t, "--group-remote-assignor is only used with --group-protocol consumer", append(vc, "--group-id", "g", "--group-remote-assignor", "range")...)
		verifiableRefused(t, "Invalid value sideways for configuration auto.offset.reset", append(vc, "--group-id", "g", "--reset-policy", "sideways")...)
		verifiableRefused(t, "--assignment-strategy com.example.Mine", append(vc, "--group-id", "g", "--assignment-strategy", "com.example.Mine")...)
		verifiableRefused(t, "--broker-list is not supported", "verifiable-consumer", "--broker-list", addr, "--topic", "vc", "--group-id", "g")
		props := writeProperties(t, "fetch.max.wait.ms=100")
		verifiableRefused(t, "Options --consumer.config and --command-config are mutually exclusive.", append(vc, "--group-id", "g", "--consumer.config", props, "--command-config", props)...)
		verifiableRefused(t, "consumer property foo.bar is not supported", append(vc, "--group-id", "g", "--command-config", writeProperties(t, "foo.bar=1"))...)
		listed, err := adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := listed["g"]; ok {
			t.Error("a refused run joined group g")
		}
	})
}

// TestConsoleShareConsumerTool: `kaas console-share-consumer` prints the
// records a share group delivers with the console consumer's formatter,
// acknowledges each (accept, release or reject) so the share group's next
// member sees what Kafka's would, and refuses what Kafka refuses.
func TestConsoleShareConsumerTool(t *testing.T) {
	_, addr := testBroker(t, "--share-auto-offset-reset", "earliest")
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "sc"); err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, addr)
	for i := range 5 {
		r := &kgo.Record{Topic: "sc", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	share := func(t *testing.T, group string, extra ...string) (lines []string, stderr string) {
		t.Helper()
		args := append([]string{"console-share-consumer", "--bootstrap-server", addr, "--topic", "sc", "--group", group,
			"--property", "print.offset=true", "--property", "print.delivery=true", "--property", "print.key=true"}, extra...)
		out, errOut, code := consoleTool(t, ctxT(t, 30*time.Second), "", args...)
		if code != 0 {
			t.Fatalf("exit %d: stdout %s stderr %s", code, out, errOut)
		}
		if out == "" {
			return nil, errOut
		}
		return strings.Split(strings.TrimSuffix(out, "\n"), "\n"), errOut
	}

	t.Run("accept", func(t *testing.T) {
		lines, errOut := share(t, "sc-accept", "--max-messages", "5", "--timeout-ms", "20000")
		want := []string{"Offset:0\tDelivery:1\tk0\tv0", "Offset:1\tDelivery:1\tk1\tv1", "Offset:2\tDelivery:1\tk2\tv2", "Offset:3\tDelivery:1\tk3\tv3", "Offset:4\tDelivery:1\tk4\tv4"}
		if strings.Join(lines, "|") != strings.Join(want, "|") || !strings.Contains(errOut, "Processed a total of 5 messages") {
			t.Errorf("lines %q, stderr %q", lines, errOut)
		}
		if g := listedGroup(t, adm, "sc-accept"); g.Group != "sc-accept" || g.GroupType != "share" {
			t.Errorf("share group listed as %+v", g)
		}
		// Every record was accepted: the group's next member gets none.
		lines, errOut = share(t, "sc-accept", "--timeout-ms", "1500")
		if len(lines) != 0 || !strings.Contains(errOut, "Processed a total of 0 messages") {
			t.Errorf("after accepting: lines %q, stderr %q", lines, errOut)
		}
	})

	t.Run("release", func(t *testing.T) {
		lines, _ := share(t, "sc-release", "--max-messages", "2", "--release", "--timeout-ms", "20000")
		if len(lines) != 2 || lines[0] != "Offset:0\tDelivery:1\tk0\tv0" {
			t.Fatalf("lines %q", lines)
		}
		// Released records come back, delivered a second time.
		lines, _ = share(t, "sc-release", "--max-messages", "5", "--timeout-ms", "20000")
		if len(lines) != 5 || lines[0] != "Offset:0\tDelivery:2\tk0\tv0" || lines[1] != "Offset:1\tDelivery:2\tk1\tv1" {
			t.Errorf("after releasing: lines %q", lines)
		}
	})

	t.Run("reject", func(t *testing.T) {
		lines, _ := share(t, "sc-reject", "--max-messages", "5", "--reject", "--timeout-ms", "20000")
		if len(lines) != 5 {
			t.Fatalf("lines %q", lines)
		}
		lines, _ = share(t, "sc-reject", "--timeout-ms", "1500")
		if len(lines) != 0 {
			t.Errorf("rejected records delivered again: %q", lines)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		sc := []string{"console-share-consumer", "--bootstrap-server", addr}
		verifiableRefused(t, "--topic is a required argument", sc...)
		verifiableRefused(t, `Missing required argument "[bootstrap-server]"`, "console-share-consumer", "--topic", "sc")
		verifiableRefused(t, "At most one of --reject and --release may be specified.", append(sc, "--topic", "sc", "--reject", "--release")...)
		verifiableRefused(t, "Detected group ids: 'a', 'b'", append(sc, "--topic", "sc", "--group", "a", "--consumer-property", "group.id=b")...)
		verifiableRefused(t, "--formatter com.example.Fmt", append(sc, "--topic", "sc", "--formatter", "com.example.Fmt")...)
		verifiableRefused(t, "--property print.bogus", append(sc, "--topic", "sc", "--group", "sc-refused", "--property", "print.bogus=true")...)
		verifiableRefused(t, "share.acknowledgement.mode=implicit is not supported", append(sc, "--topic", "sc", "--group", "sc-refused", "--consumer-property", "share.acknowledgement.mode=implicit")...)
		verifiableRefused(t, "--enable-systest-events is not supported", append(sc, "--topic", "sc", "--enable-systest-events")...)
		if g := listedGroup(t, adm, "sc-refused"); g.Group != "" {
			t.Errorf("a refused run created share group %+v", g)
		}
	})
}
