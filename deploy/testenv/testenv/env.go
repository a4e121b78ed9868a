// Package testenv runs a real kube-apiserver backed by an embedded etcd on loopback, as
// two child processes, for integration tests. Nothing else runs: no controller-manager,
// scheduler or kubelet (StatefulSets are stored but create no Pods, namespaces never finish
// terminating, no default ServiceAccount is created).
//
//	if err := testenv.Build(ctx); err != nil { ... }     // builds bin/ once (minutes cold)
//	env, err := testenv.Start(ctx, t.TempDir())
//	defer env.Stop()
//	cfg, _ := clientcmd.BuildConfigFromFlags("", env.Kubeconfig())
//
// The package itself uses only the standard library, so commands built from it link fast.
package testenv

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ServiceAccountIssuer is the issuer (and API audience) of service-account tokens.
const ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// DefaultStartTimeout bounds Start when ctx has no deadline.
const DefaultStartTimeout = 2 * time.Minute

// Env is a running kube-apiserver + etcd pair.
type Env struct {
	// Dir holds certificates, logs, etcd data, kubeconfig and env.
	Dir string
	// URL is the apiserver's address, https://127.0.0.1:PORT.
	URL string
	// EtcdURL is etcd's client address, http://127.0.0.1:PORT.
	EtcdURL string
	// CAFile, CertFile and KeyFile are the CA and the admin (system:masters) client pair.
	CAFile, CertFile, KeyFile string

	kubeconfig string
	apiserver  *child
	etcd       *child
	tempDir    bool
	stopOnce   sync.Once
	stopErr    error
}

// Kubeconfig returns the path of an admin kubeconfig (credentials embedded).
func (e *Env) Kubeconfig() string { return e.kubeconfig }

// APIServerPID and EtcdPID return the child process ids.
func (e *Env) APIServerPID() int { return e.apiserver.cmd.Process.Pid }
func (e *Env) EtcdPID() int      { return e.etcd.cmd.Process.Pid }

// Exited is closed when either child process exits (after Stop, or unexpectedly).
func (e *Env) Exited() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		select {
		case <-e.apiserver.done:
		case <-e.etcd.done:
		}
		close(ch)
	}()
	return ch
}

// Start generates certificates in dir (created if needed; "" means a fresh temporary
// directory removed by Stop), starts etcd and kube-apiserver on free loopback ports and
// waits until /readyz answers ok. ctx bounds the startup only (DefaultStartTimeout if it
// has no deadline); the processes run until Stop. It also writes dir/kubeconfig and dir/env.
// The binaries must exist (see Build); a missing binary is an error.
func Start(ctx context.Context, dir string) (*Env, error) {
	return StartWith(ctx, dir, Options{})
}

// Options change how Start runs the apiserver.
type Options struct {
	// BindAddress is the apiserver's listening address (default 127.0.0.1). A one-node
	// cluster in its own network namespace binds 0.0.0.0 so that pods reach it through
	// the node's bridge; clients on the node still use 127.0.0.1.
	BindAddress string
}

// StartWith is Start with Options.
func StartWith(ctx context.Context, dir string, o Options) (*Env, error) {
	if o.BindAddress == "" {
		o.BindAddress = "127.0.0.1"
	}
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	apiserverBin, etcdBin := filepath.Join(bin, APIServerBinary), filepath.Join(bin, EtcdBinary)
	for _, b := range []string{apiserverBin, etcdBin} {
		if !fileExists(b) {
			return nil, fmt.Errorf("%s: %w", b, errNotBuilt)
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartTimeout)
		defer cancel()
	}
	temp := false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "kaas-testenv-"); err != nil {
			return nil, err
		}
		temp = true
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p, err := writePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	// Free ports are picked then released, so another process may grab one first;
	// retry with fresh ports when a child fails because its address is in use.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		e, err := start(ctx, dir, p, apiserverBin, etcdBin, o)
		if err == nil {
			e.tempDir = temp
			return e, nil
		}
		lastErr = err
		if !errors.Is(err, errAddrInUse) || ctx.Err() != nil {
			break
		}
	}
	if temp {
		os.RemoveAll(dir)
	}
	return nil, lastErr
}

var errAddrInUse = errors.New("address already in use")

func start(ctx context.Context, dir string, p *pki, apiserverBin, etcdBin string, o Options) (_ *Env, err error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	e := &Env{
		Dir:        dir,
		URL:        "https://127.0.0.1:" + strconv.Itoa(ports[2]),
		EtcdURL:    "http://127.0.0.1:" + strconv.Itoa(ports[0]),
		CAFile:     p.CACert,
		CertFile:   p.AdminCert,
		KeyFile:    p.AdminKey,
		kubeconfig: filepath.Join(dir, "kubeconfig"),
	}
	defer func() {
		if err != nil {
			e.stop()
		}
	}()

	etcdData := filepath.Join(dir, "etcd")
	_ = os.RemoveAll(etcdData) // a fresh cluster each start
	e.etcd, err = startChild(etcdBin, filepath.Join(dir, "etcd.log"),
		"--data-dir", etcdData,
		"--client-url", e.EtcdURL,
		"--peer-url", "http://127.0.0.1:"+strconv.Itoa(ports[1]))
	if err != nil {
		return nil, err
	}
	if err := e.etcd.waitLine(ctx, "etcd ready"); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}

	e.apiserver, err = startChild(apiserverBin, filepath.Join(dir, "kube-apiserver.log"),
		"--etcd-servers="+e.EtcdURL,
		"--bind-address="+o.BindAddress,
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(ports[2]),
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
		"--tls-cert-file="+p.ServingCert,
		"--tls-private-key-file="+p.ServingKey,
		"--client-ca-file="+p.CACert,
		"--service-account-issuer="+ServiceAccountIssuer,
		"--service-account-key-file="+p.SAPub,
		"--service-account-signing-key-file="+p.SAKey,
		"--api-audiences="+ServiceAccountIssuer,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The default reconciler refuses a loopback advertise address.
		"--endpoint-reconciler-type=none",
		"--authorization-mode=Node,RBAC",
		// A node's name resolves nowhere the apiserver looks; its InternalIP answers
		// (kubectl logs and exec go through the kubelet at that address).
		"--kubelet-preferred-address-types=InternalIP",
		"--profiling=false",
	)
	if err != nil {
		return nil, err
	}
	if err := e.waitReady(ctx); err != nil {
		return nil, err
	}
	if err := e.writeKubeconfig(p); err != nil {
		return nil, err
	}
	if err := e.WriteEnvFile(0); err != nil {
		return nil, err
	}
	return e, nil
}

// waitReady polls GET /readyz as the admin until it answers 200.
func (e *Env) waitReady(ctx context.Context) error {
	client, err := e.adminHTTPClient()
	if err != nil {
		return err
	}
	var last string
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.URL+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, lastLines(string(body), 5))
		} else {
			last = err.Error()
		}
		select {
		case <-e.apiserver.done:
			err := fmt.Errorf("kube-apiserver exited (%v); log %s:\n%s", e.apiserver.exitErr, e.apiserver.logPath, e.apiserver.logTail(40))
			if strings.Contains(e.apiserver.logTail(40), "address already in use") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		case <-e.etcd.done:
			return fmt.Errorf("etcd exited (%v); log %s:\n%s", e.etcd.exitErr, e.etcd.logPath, e.etcd.logTail(20))
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready at %s (%v); last: %s; log %s:\n%s",
				e.URL, ctx.Err(), last, e.apiserver.logPath, e.apiserver.logTail(20))
		case <-tick.C:
		}
	}
}

func (e *Env) adminHTTPClient() (*http.Client, error) {
	caPEM, err := os.ReadFile(e.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cert, err := tls.LoadX509KeyPair(e.CertFile, e.KeyFile)
	if err != nil {
		return nil, err
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		}},
	}, nil
}

func (e *Env) writeKubeconfig(p *pki) error {
	b64 := base64.StdEncoding.EncodeToString
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kaas-testenv
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: kaas-testenv-admin
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: kaas-testenv
  context:
    cluster: kaas-testenv
    user: kaas-testenv-admin
    namespace: default
current-context: kaas-testenv
`, e.URL, b64(p.caPEM), b64(p.adminCertPEM), b64(p.adminKeyPEM))
	return writeFile(e.kubeconfig, []byte(cfg))
}

// WriteEnvFile writes Dir/env: shell lines exporting KUBECONFIG, the addresses and the pids.
// upPID, when non-zero, is the pid of the process that owns the environment (the `up`
// command), which `down` signals.
func (e *Env) WriteEnvFile(upPID int) error {
	var b strings.Builder
	fmt.Fprintf(&b, "export KUBECONFIG=%s\n", shellQuote(e.kubeconfig))
	fmt.Fprintf(&b, "export KAAS_TESTENV_DIR=%s\n", shellQuote(e.Dir))
	fmt.Fprintf(&b, "export KAAS_TESTENV_APISERVER_URL=%s\n", shellQuote(e.URL))
	fmt.Fprintf(&b, "export KAAS_TESTENV_ETCD_URL=%s\n", shellQuote(e.EtcdURL))
	fmt.Fprintf(&b, "export KAAS_TESTENV_APISERVER_PID=%d\n", e.APIServerPID())
	fmt.Fprintf(&b, "export KAAS_TESTENV_ETCD_PID=%d\n", e.EtcdPID())
	if upPID != 0 {
		fmt.Fprintf(&b, "export KAAS_TESTENV_UP_PID=%d\n", upPID)
	}
	tmp := filepath.Join(e.Dir, ".env.tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(e.Dir, "env"))
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Stop stops kube-apiserver, then etcd (SIGTERM, SIGKILL after 10 s), and removes the
// directory if Start created it. It is safe to call more than once.
func (e *Env) Stop() error {
	e.stopOnce.Do(func() {
		e.stopErr = e.stop()
		_ = os.Remove(filepath.Join(e.Dir, "env"))
		if e.tempDir {
			os.RemoveAll(e.Dir)
		}
	})
	return e.stopErr
}

func (e *Env) stop() error {
	var errs []error
	for _, c := range []*child{e.apiserver, e.etcd} {
		if c != nil {
			errs = append(errs, c.stop(10*time.Second))
		}
	}
	return errors.Join(errs...)
}

// child is a started process whose output goes to a log file.
type child struct {
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{} // closed on exit; exitErr is then set
	exitErr error

	mu    sync.Mutex
	lines []string      // stdout lines seen so far (for waitLine)
	seen  chan struct{} // signalled on each new stdout line
}

func startChild(bin, logPath string, args ...string) (*child, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	c := &child{logPath: logPath, log: logf, done: make(chan struct{}), seen: make(chan struct{}, 1)}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Stderr = logf
	c.cmd.SysProcAttr = sysProcAttr()
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			c.mu.Lock()
			c.lines = append(c.lines, line)
			c.mu.Unlock()
			select {
			case c.seen <- struct{}{}:
			default:
			}
		}
		io.Copy(logf, stdout) //nolint:errcheck // drain after an over-long line
	}()
	go func() {
		<-copied // Wait must follow the reads from StdoutPipe
		c.exitErr = c.cmd.Wait()
		if c.exitErr == nil {
			c.exitErr = errors.New("exit status 0")
		}
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

// waitLine waits for a stdout line starting with prefix.
func (c *child) waitLine(ctx context.Context, prefix string) error {
	for {
		c.mu.Lock()
		for _, l := range c.lines {
			if strings.HasPrefix(l, prefix) {
				c.mu.Unlock()
				return nil
			}
		}
		c.mu.Unlock()
		select {
		case <-c.seen:
		case <-c.done:
			tail := c.logTail(20)
			err := fmt.Errorf("exited before %q (%v); log %s:\n%s", prefix, c.exitErr, c.logPath, tail)
			if strings.Contains(tail, "address already in use") {
				err = fmt.Errorf("%w: %w", errAddrInUse, err)
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("no %q after startup timeout (%v); log %s:\n%s", prefix, ctx.Err(), c.logPath, c.logTail(20))
		}
	}
}

func (c *child) stop(grace time.Duration) error {
	select {
	case <-c.done:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(grace):
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	return fmt.Errorf("%s did not stop within %s of SIGTERM; killed", filepath.Base(c.cmd.Path), grace)
}

func (c *child) logTail(n int) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(b), n)
}

// freePorts returns n distinct loopback ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
