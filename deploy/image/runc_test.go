package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
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

	"github.com/kaas-project/kaas/wire/wiretest"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestImageRunsUnderRunc runs the image the way a kubelet's runtime would:
// the archive is unpacked into an OCI bundle (rootfs from the layer, config
// from the image config) and started by runc as a real container, in its own
// pid, mount, ipc and uts namespaces, as the image's non-root user, with a
// read-only rootfs and a volume at /data. Records round-trip through it with
// franz-go, and `kaas version` and `kaas topics` run in it. It shares the host's network namespace (the spec's network
// namespace is removed) so the test reaches the broker on 127.0.0.1 without
// creating interfaces or addresses.
//
// It needs root and runc (.ci/install-test-deps.sh installs runc) and fails
// without them: CI has both, and a skipped test would prove nothing.
func TestImageRunsUnderRunc(t *testing.T) {
	runc, err := exec.LookPath("runc")
	if err != nil {
		t.Fatal("runc is not installed: this test runs the image under a real OCI runtime; `apt-get install runc` (or bash .ci/install-test-deps.sh)")
	}
	if os.Geteuid() != 0 {
		t.Fatal("this test must run as root: runc creates the container's namespaces, cgroups and mounts")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()

	// The binary exactly as `go tool task image` builds it (same flags, so
	// the two share the build cache), with a version only this run stamps.
	version := fmt.Sprintf("imagetest-%d", time.Now().UnixNano())
	bin := filepath.Join(dir, "kaas")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+version+" -X main.revision=0123abcd",
		"-o", bin, "github.com/kaas-project/kaas/cmd/kaas")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	t0 := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("static binary built in %s", time.Since(t0).Round(time.Millisecond))
	archive := filepath.Join(dir, "kaas-image.tar")
	if err := run([]string{"-binary", bin, "-o", archive, "-name", "kaas:imagetest", "-version", version}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	img := readArchive(t, raw)

	bundle := filepath.Join(dir, "bundle")
	unpack(t, img, filepath.Join(bundle, "rootfs"))
	// The volume, as a kubelet would mount it. Owned by the image's user, as
	// fsGroup (or the NFS export) arranges on a cluster.
	data := filepath.Join(dir, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, uid, gid); err != nil {
		t.Fatal(err)
	}
	kafkaAddr, httpAddr := freeAddr(t), freeAddr(t)
	args := append(slices.Clone(img.config.Config.Entrypoint),
		"--kafka-addr", kafkaAddr, "--advertised-addr", kafkaAddr, "--http-addr", httpAddr, "--log-format", "json")
	writeSpec(t, ctx, runc, bundle, img.config, args, data)

	// runc's state under the test's own directory: no other container on
	// this machine is visible to, or touched by, these runc calls.
	state := filepath.Join(dir, "runc-state")
	id := fmt.Sprintf("kaas-imagetest-%d-%d", os.Getpid(), time.Now().UnixNano())
	runcCmd := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, runc, append([]string{"--root", state}, args...)...)
	}
	logPath := filepath.Join(dir, "container.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	t.Cleanup(func() {
		// Idempotent: after a clean stop the container is already gone.
		if out, err := exec.Command(runc, "--root", state, "delete", "--force", id).CombinedOutput(); err != nil &&
			!strings.Contains(string(out), "does not exist") {
			t.Errorf("runc delete --force %s: %v\n%s", id, err, out)
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("container output:\n%s", b)
		}
	})
	// -d: runc starts the container and exits; the container keeps the log
	// file as its stdout and stderr (a file, not a pipe, so nothing waits on it).
	t0 = time.Now()
	start := runcCmd("run", "-d", "--bundle", bundle, id)
	start.Stdout, start.Stderr = logf, logf
	if err := start.Run(); err != nil {
		b, _ := os.ReadFile(logPath)
		t.Fatalf("runc run -d: %v\n%s", err, b)
	}

	// A real container: another pid namespace, the image's user.
	status, pid := containerState(t, runcCmd, id)
	if status != "running" {
		t.Fatalf("container %s after runc run -d", status)
	}
	for _, ns := range []string{"pid", "mnt"} {
		host, _ := os.Readlink("/proc/self/ns/" + ns)
		ctr, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil || ctr == host {
			t.Errorf("container %s namespace %q (err %v), host's %q: want its own", ns, ctr, err, host)
		}
	}
	procStatus, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\nUid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid); !strings.Contains(string(procStatus), want) {
		t.Errorf("container process is not uid %d:\n%s", uid, procStatus)
	}

	// /healthz answers once the broker is up.
	var health struct {
		Status string `json:"status"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/healthz")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&health)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK && health.Status == "ok" {
				break
			}
			err = fmt.Errorf("status %d, body status %q, decode %v", resp.StatusCode, health.Status, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /healthz: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("container %s (pid %d, uid %d) healthy %s after runc run", id, pid, uid, time.Since(t0).Round(time.Millisecond))

	// `kaas version` inside the image prints the stamped version.
	out, err := runcCmd("exec", id, "/kaas", "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "kaas "+version+" (revision 0123abcd,") {
		t.Errorf("runc exec /kaas version: %v: %q, want kaas %s (revision 0123abcd, ...)", err, out, version)
	}

	t0 = time.Now()
	roundTrip(t, ctx, kafkaAddr)
	t.Logf("round trip through the container in %s", time.Since(t0).Round(time.Millisecond))

	// Kafka's admin tools run from the image's binary, as an operator runs
	// them with kubectl exec.
	out, err = runcCmd("exec", id, "/kaas", "topics", "--bootstrap-server", kafkaAddr, "--describe", "--topic", "image-roundtrip").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "Topic: image-roundtrip\tTopicId: ") || !strings.Contains(string(out), "\tPartition: 0\tLeader: 0\t") {
		t.Errorf("runc exec /kaas topics --describe: %v: %q", err, out)
	}

	// The non-root broker wrote the volume.
	var owned int
	err = filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == data {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid == uid {
			owned++
		}
		return nil
	})
	if err != nil || owned == 0 {
		t.Errorf("/data: %d entries owned by uid %d (walk: %v)", owned, uid, err)
	}

	// SIGTERM (what a kubelet sends) stops it; kaas runs as pid 1 and must
	// handle the signal itself.
	if out, err := runcCmd("kill", id, "TERM").CombinedOutput(); err != nil {
		t.Fatalf("runc kill TERM: %v\n%s", err, out)
	}
	deadline = time.Now().Add(20 * time.Second)
	for containerStatus(t, runcCmd, id) != "stopped" {
		if time.Now().After(deadline) {
			t.Fatal("container still running 20 s after SIGTERM")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := runcCmd("delete", id).CombinedOutput(); err != nil {
		t.Errorf("runc delete: %v\n%s", err, out)
	}
}

// roundTrip produces with acks=all and idempotence (franz-go's default with
// all-ISR acks), consumes everything back, and compares.
func roundTrip(t *testing.T, ctx context.Context, addr string) {
	t.Helper()
	const topic, n = "image-roundtrip", 500
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RetryTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var sent []*kgo.Record
	for i := range n {
		sent = append(sent, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: bytes.Repeat([]byte{byte(i)}, 1+i%300)})
	}
	if err := prod.ProduceSync(ctx, sent...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	var got []*kgo.Record
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for len(got) < n {
		fetches := cons.PollFetches(pctx)
		if err := pctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		if errs := fetches.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", errs)
		}
		got = append(got, fetches.Records()...)
	}
	// One partition (the default): order is the produce order.
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	for i, r := range got {
		if !bytes.Equal(r.Key, sent[i].Key) || !bytes.Equal(r.Value, sent[i].Value) || r.Offset != int64(i) {
			t.Fatalf("record %d: offset %d key %q, %d value bytes; want key %q, %d bytes", i, r.Offset, r.Key, len(r.Value), sent[i].Key, len(sent[i].Value))
		}
	}
}

// unpack writes the layer into rootfs with the archive's modes and owners,
// as a runtime's snapshotter would. The layer holds only directories and
// regular files.
func unpack(t *testing.T, img image, rootfs string) {
	t.Helper()
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range img.entries {
		name := filepath.Clean(e.hdr.Name)
		if !filepath.IsLocal(name) {
			t.Fatalf("layer entry %q escapes the rootfs", e.hdr.Name)
		}
		p := filepath.Join(rootfs, name)
		var err error
		switch e.hdr.Typeflag {
		case tar.TypeDir:
			err = os.Mkdir(p, 0o700)
		case tar.TypeReg:
			err = os.WriteFile(p, e.data, 0o600)
		default:
			t.Fatalf("layer entry %s: type %c not expected", e.hdr.Name, e.hdr.Typeflag)
		}
		if err == nil {
			err = os.Chmod(p, fs.FileMode(e.hdr.Mode)&fs.ModePerm)
		}
		if err == nil {
			err = os.Lchown(p, e.hdr.Uid, e.hdr.Gid)
		}
		if err != nil {
			t.Fatalf("unpack %s: %v", e.hdr.Name, err)
		}
	}
}

// writeSpec writes bundle/config.json: runc's default spec with the image's
// config applied, then the changes this machine and a pod's securityContext
// call for.
func writeSpec(t *testing.T, ctx context.Context, runc, bundle string, cfg imageConfig, args []string, data string) {
	t.Helper()
	if out, err := exec.CommandContext(ctx, runc, "spec", "--bundle", bundle).CombinedOutput(); err != nil {
		t.Fatalf("runc spec: %v\n%s", err, out)
	}
	path := filepath.Join(bundle, "config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatalf("runc spec output: %v", err)
	}
	u, g, ok := strings.Cut(cfg.Config.User, ":")
	uidN, err1 := strconv.Atoi(u)
	gidN, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uidN == 0 {
		t.Fatalf("image user %q: want numeric non-root uid:gid", cfg.Config.User)
	}
	proc := spec["process"].(map[string]any)
	proc["terminal"] = false // detached, output to a file
	proc["user"] = map[string]any{"uid": uidN, "gid": gidN}
	proc["args"] = args
	proc["env"] = cfg.Config.Env
	proc["cwd"] = cfg.Config.WorkingDir
	// No capabilities at all, as the StatefulSet's `drop: [ALL]`.
	proc["capabilities"] = map[string]any{}
	// No rlimits: the container inherits the runtime's, as pods do under
	// containerd and CRI-O. runc's default spec would cap open files at 1024,
	// too few for a broker; and a spec raising a limit above the caller's
	// hard limit fails without CAP_SYS_RESOURCE (podman's default does, on the
	// project's test machines: "error setting rlimit type 7: operation not
	// permitted").
	delete(proc, "rlimits")
	// The image's rootfs stays read-only (readOnlyRootFilesystem): kaas
	// writes only to the volume.
	spec["root"] = map[string]any{"path": "rootfs", "readonly": true}
	spec["hostname"] = "kaas-imagetest"
	spec["mounts"] = append(spec["mounts"].([]any), map[string]any{
		"destination": "/data", "type": "bind", "source": data, "options": []string{"rbind", "rw", "nosuid", "nodev"},
	})
	// Host network namespace (see the test's comment).
	linux := spec["linux"].(map[string]any)
	var nss []any
	for _, ns := range linux["namespaces"].([]any) {
		if ns.(map[string]any)["type"] != "network" {
			nss = append(nss, ns)
		}
	}
	linux["namespaces"] = nss
	if b, err = json.MarshalIndent(spec, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func containerState(t *testing.T, runcCmd func(...string) *exec.Cmd, id string) (status string, pid int) {
	t.Helper()
	out, err := runcCmd("state", id).Output()
	if err != nil {
		t.Fatalf("runc state %s: %v", id, err)
	}
	var st struct {
		Status string `json:"status"`
		Pid    int    `json:"pid"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("runc state %s: %v: %s", id, err, out)
	}
	return st.Status, st.Pid
}

func containerStatus(t *testing.T, runcCmd func(...string) *exec.Cmd, id string) string {
	s, _ := containerState(t, runcCmd, id)
	return s
}

var freeAddr = wiretest.FreeAddr
