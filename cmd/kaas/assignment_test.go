package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaas-project/kaas/storage/assignment"
)

func runAssignmentCmd(args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	err = runAssignment(args, &o, &e)
	return o.String(), e.String(), err
}

const planFirst = `{
  "previous": null,
  "controller": "kaas-0",
  "controller_epoch": 3,
  "controller_heartbeat": "kaas-0.kaas.ns.svc:9094",
  "brokers": [
    {"name": "kaas-0", "state": "alive", "host": "kaas-0.kaas.ns.svc", "port": 9092},
    {"name": "kaas-1", "state": "alive", "host": "kaas-1.kaas.ns.svc", "port": 9092},
    {"name": "kaas-2", "state": "draining", "host": "kaas-2.kaas.ns.svc", "port": 9092}
  ],
  "topics": {
    "orders": {"id": "u-orders", "partitions": 3, "config": {"retention.ms": "604800000"}},
    "clicks": {"id": "u-clicks", "partitions": 1}
  }
}`

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAssignmentCmdPlan(t *testing.T) {
	out, errOut, err := runAssignmentCmd("plan", "--in", writeTemp(t, "in.json", planFirst))
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, errOut)
	}
	a, err := assignment.Decode([]byte(out))
	if err != nil {
		t.Fatalf("stdout is not a valid assignment: %v\n%s", err, out)
	}
	if a.ControllerEpoch != 3 || a.AssignmentVersion != 1 || len(a.Topics) != 2 || a.Brokers[2].State != assignment.Draining {
		t.Fatalf("plan output %+v", a)
	}
	for _, p := range a.Topics["orders"].Partitions {
		if p.Leader == 2 {
			t.Fatalf("draining broker leads: %+v", a.Topics)
		}
	}
	if !strings.HasPrefix(errOut, "moves: 4\n") || !strings.Contains(errOut, "  clicks/0: none -> 0\n") ||
		!strings.Contains(errOut, "assignment_version: 1 (previous none)") {
		t.Fatalf("stderr:\n%s", errOut)
	}
	// Exactly what the controller would write: Encode's bytes.
	if enc, _ := assignment.Encode(a); string(enc) != out {
		t.Fatalf("stdout is not the canonical encoding")
	}

	// Feed the result back as "previous" with kaas-1 dead.
	next := strings.Replace(planFirst, `"previous": null`, `"previous": `+out, 1)
	next = strings.Replace(next, `{"name": "kaas-1", "state": "alive"`, `{"name": "kaas-1", "state": "dead"`, 1)
	out2, errOut2, err := runAssignmentCmd("plan", "--in", writeTemp(t, "in2.json", next))
	if err != nil {
		t.Fatalf("plan 2: %v\n%s", err, errOut2)
	}
	b, _ := assignment.Decode([]byte(out2))
	if b.AssignmentVersion != 2 || !strings.Contains(errOut2, " -> 0\n") || !strings.Contains(errOut2, ": 1 -> 0") {
		t.Fatalf("second plan version %d, stderr:\n%s", b.AssignmentVersion, errOut2)
	}
	// Unchanged input: same bytes, no moves.
	same := strings.Replace(planFirst, `"previous": null`, `"previous": `+out, 1)
	out3, errOut3, err := runAssignmentCmd("plan", "--in", writeTemp(t, "in3.json", same))
	if err != nil || out3 != out || !strings.HasPrefix(errOut3, "moves: 0\n") {
		t.Fatalf("unchanged plan: %v\n%s", err, errOut3)
	}
}

func TestAssignmentCmdPlanErrors(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
		args                []string
	}{
		{name: "missing --in", args: []string{"plan"}, want: "missing --in"},
		{name: "unknown flag", args: []string{"plan", "--out", "x"}, want: "flag provided but not defined"},
		{name: "extra argument", args: []string{"plan", "--in", "a", "b"}, want: "unexpected argument"},
		{name: "missing file", args: []string{"plan", "--in", "/nonexistent/in.json"}, want: "no such file"},
		{name: "bad json", content: `{"controller": `, want: "parse"},
		{name: "unknown field", content: `{"controler": "kaas-0"}`, want: "unknown field"},
		{name: "trailing data", content: `{"controller": "kaas-0"} {}`, want: "trailing data"},
		{name: "invalid previous", content: `{"previous": {"format": 9}, "controller": "kaas-0"}`, want: "previous"},
		{name: "bad broker name", content: `{"controller": "kaas-0", "brokers": [{"name": "kaas", "state": "alive"}]}`, want: "ordinal"},
		{name: "bad state", content: `{"controller": "kaas-0", "brokers": [{"name": "kaas-1", "state": "up"}]}`, want: "unknown state"},
		{name: "no controller", content: `{"brokers": []}`, want: "controller"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if args == nil {
				args = []string{"plan", "--in", writeTemp(t, "in.json", tc.content)}
			}
			_, _, err := runAssignmentCmd(args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestAssignmentCmdShow(t *testing.T) {
	out, _, err := runAssignmentCmd("plan", "--in", writeTemp(t, "in.json", planFirst))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := assignment.Decode([]byte(out))
	a.ConsumerGroups.Held = []int{0, 2}
	a.Brokers[2].Rack = "zone-c"
	a.Brokers[2].Listeners = "EXTERNAL://10.0.0.9:31092"
	dir := t.TempDir()
	if err := assignment.WriteFile(dir, a); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"show", "--data-dir", dir}, {"show", "--file", assignment.Path(dir)}} {
		got, _, err := runAssignmentCmd(args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, want := range []string{
			"controller:            kaas-0\n",
			"controller epoch:      3\n",
			"assignment version:    1\n",
			"topics:                2 (4 partitions, 0 without leader)\n",
			"group slots:           50 (kaas-0 17, kaas-1 17, kaas-2 16)\n",
			"group slots served:    50 (kaas-0 25, kaas-1 25)\n",
			"held group slots:      0 2\n",
			"ID  NAME    ADDRESS                  RACK    STATE     LEADS  LISTENERS\n",
			"0   kaas-0  kaas-0.kaas.ns.svc:9092  -       alive",
			"2   kaas-2  kaas-2.kaas.ns.svc:9092  zone-c  draining  0      EXTERNAL://10.0.0.9:31092\n",
			"TOPIC   PARTITION  LEADER      LEADER_EPOCH  TOPIC_ID\n",
			"orders  0          ",
			"u-orders\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%v: output lacks %q:\n%s", args, want, got)
			}
		}
		leads := 0
		for _, line := range strings.Split(got, "\n") {
			if f := strings.Fields(line); len(f) == 7 && strings.HasPrefix(f[1], "kaas-") && (f[4] == "alive" || f[4] == "draining") {
				n := 0
				for _, c := range f[5] {
					n = n*10 + int(c-'0')
				}
				leads += n
			}
		}
		if leads != 4 {
			t.Errorf("LEADS column sums to %d, want 4:\n%s", leads, got)
		}
	}
}

func TestAssignmentCmdShowErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := writeTemp(t, "a.json", "{not json")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"show"}, "missing --data-dir or --file"},
		{[]string{"show", "--data-dir", dir, "--file", "x"}, "not both"},
		{[]string{"show", "--bogus"}, "flag provided but not defined"},
		{[]string{"show", "--file", garbage, "extra"}, "unexpected argument"},
		{[]string{"show", "--data-dir", dir}, "no such file"},
		{[]string{"show", "--file", garbage}, "decode assignment"},
	} {
		if _, _, err := runAssignmentCmd(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestAssignmentCmdUsage(t *testing.T) {
	if _, errOut, err := runAssignmentCmd(); err == nil || !strings.Contains(err.Error(), "missing subcommand") || !strings.Contains(errOut, "usage:") {
		t.Errorf("no subcommand: %v", err)
	}
	if _, _, err := runAssignmentCmd("frobnicate"); err == nil || !strings.Contains(err.Error(), `unknown subcommand "frobnicate"`) {
		t.Errorf("unknown subcommand: %v", err)
	}
	if out, _, err := runAssignmentCmd("help"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out, "kaas assignment plan") {
		t.Errorf("help: %v", err)
	}
	if _, _, err := runAssignmentCmd("show", "-h"); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("show -h: %v", err)
	}
}
