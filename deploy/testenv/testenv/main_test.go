package testenv_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kaas-project/kaas/deploy/testenv/testenv"
)

// One apiserver for the whole package; every test works in a fresh namespace (deleted
// namespaces never finish terminating here: no controller-manager).
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	// Build is a no-op when deploy/testenv/build.sh already ran; a cold build takes
	// minutes (run build.sh first, or give go test a -timeout of 20m or more).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := testenv.Build(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: testenv.Build: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "kaas-testenv-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	start := time.Now()
	sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
	env, err = testenv.Start(sctx, dir)
	scancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: testenv.Start: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "testenv: kube-apiserver ready at %s in %s\n", env.URL, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: testenv.Stop: %v\n", err)
		code = 1
	}
	if code == 0 {
		os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "testenv: logs kept in %s\n", dir)
	}
	return code
}

func restConfig(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return cfg
}

func clients(t *testing.T) (*kubernetes.Clientset, *dynamic.DynamicClient) {
	t.Helper()
	cfg := restConfig(t)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dc
}

var nsSanitizer = regexp.MustCompile(`[^a-z0-9-]+`)

// newNamespace creates a fresh namespace named after the test.
func newNamespace(t *testing.T) string {
	t.Helper()
	cs, _ := clients(t)
	prefix := strings.Trim(nsSanitizer.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(prefix) > 40 {
		prefix = prefix[:40]
	}
	ns, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

// deployDir is deploy/ in the repository (the parent of the testenv module).
func deployDir(t *testing.T) string {
	t.Helper()
	m, err := testenv.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(m)
}

// kubectl runs kubectl against the test apiserver. A missing kubectl fails the test.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Fatalf("kubectl not found (install it or set KUBECTL): %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", env.Kubeconfig()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}
