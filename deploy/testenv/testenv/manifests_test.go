package testenv_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// `kubectl apply --dry-run=server -k deploy/base` validates every object against the real
// apiserver; then a real apply stores them as specified.
func TestBaseManifests(t *testing.T) {
	ctx := context.Background()
	cs, _ := clients(t)
	ns := newNamespace(t)
	base := filepath.Join(deployDir(t), "base")

	out, err := kubectl(t, "", "apply", "--dry-run=server", "-k", base, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/kafkatopics.kaas.dev",
		"customresourcedefinition.apiextensions.k8s.io/kafkaacls.kaas.dev",
		"customresourcedefinition.apiextensions.k8s.io/kafkaquotas.kaas.dev",
		"customresourcedefinition.apiextensions.k8s.io/kafkausers.kaas.dev",
		"serviceaccount/kaas", "role.rbac.authorization.k8s.io/kaas", "rolebinding.rbac.authorization.k8s.io/kaas",
		"service/kaas", "service/kaas-bootstrap", "persistentvolumeclaim/kaas-data",
		"statefulset.apps/kaas", "poddisruptionbudget.policy/kaas",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry-run output lacks %s:\n%s", want, out)
		}
	}

	// The dry run really validates: the same manifests with an invalid port are rejected.
	rendered, err := kubectl(t, "", "kustomize", base)
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(rendered, "containerPort: 9092", "containerPort: 70000", 1)
	if broken == rendered {
		t.Fatal("rendered base has no containerPort: 9092")
	}
	if out, err := kubectl(t, broken, "apply", "--dry-run=server", "-f", "-", "-n", ns); err == nil ||
		!strings.Contains(err.Error(), "70000") {
		t.Fatalf("dry-run accepted containerPort 70000 (err %v):\n%s", err, out)
	}

	if _, err := kubectl(t, "", "apply", "-k", base, "-n", ns); err != nil {
		t.Fatal(err)
	}
	sts, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "kaas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != 3 || sts.Spec.PodManagementPolicy != "Parallel" || sts.Spec.ServiceName != "kaas" {
		t.Errorf("statefulset: replicas %d policy %s service %s", *sts.Spec.Replicas, sts.Spec.PodManagementPolicy, sts.Spec.ServiceName)
	}
	pod := sts.Spec.Template.Spec
	if pod.ServiceAccountName != "kaas" || *pod.TerminationGracePeriodSeconds != 60 {
		t.Errorf("pod: serviceAccount %q grace %d", pod.ServiceAccountName, *pod.TerminationGracePeriodSeconds)
	}
	c := pod.Containers[0]
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for name, field := range map[string]string{"MY_POD_NAME": "metadata.name", "MY_POD_NAMESPACE": "metadata.namespace", "MY_POD_UID": "metadata.uid",
		"KAAS_RACK": "metadata.labels['topology.kubernetes.io/zone']"} {
		if e, ok := env[name]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != field {
			t.Errorf("env %s: want downward API %s, got %+v", name, field, e)
		}
	}
	if env["KAAS_DATA_DIR"].Value != "/data" {
		t.Errorf("KAAS_DATA_DIR = %q", env["KAAS_DATA_DIR"].Value)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["kafka"] != 9092 || ports["heartbeat"] != 9094 || ports["http"] != 8080 {
		t.Errorf("container ports %v", ports)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" || p.HTTPGet.Port.String() != "http" {
		t.Errorf("readinessProbe %+v", p)
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("livenessProbe %+v", p)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/data" ||
		len(pod.Volumes) != 1 || pod.Volumes[0].PersistentVolumeClaim == nil || pod.Volumes[0].PersistentVolumeClaim.ClaimName != "kaas-data" {
		t.Errorf("data volume: mounts %+v volumes %+v", c.VolumeMounts, pod.Volumes)
	}

	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "kaas-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) ||
		pvc.Spec.Resources.Requests.Storage().String() != "50Gi" {
		t.Errorf("pvc: modes %v size %s", pvc.Spec.AccessModes, pvc.Spec.Resources.Requests.Storage())
	}
	headless, err := cs.CoreV1().Services(ns).Get(ctx, "kaas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if headless.Spec.ClusterIP != "None" || !headless.Spec.PublishNotReadyAddresses || len(headless.Spec.Ports) != 2 {
		t.Errorf("headless service: clusterIP %q publishNotReady %v ports %v", headless.Spec.ClusterIP, headless.Spec.PublishNotReadyAddresses, headless.Spec.Ports)
	}
	bootstrap, err := cs.CoreV1().Services(ns).Get(ctx, "kaas-bootstrap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(bootstrap.Spec.Ports) != 1 || bootstrap.Spec.Ports[0].Port != 9092 || bootstrap.Spec.ClusterIP == "None" {
		t.Errorf("bootstrap service: %+v", bootstrap.Spec)
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "kaas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("pdb maxUnavailable %v", pdb.Spec.MaxUnavailable)
	}

	// Printer columns of the CRD, through kubectl.
	if _, err := kubectl(t, "apiVersion: kaas.dev/v1alpha1\nkind: KafkaTopic\nmetadata: {name: events}\nspec: {partitions: 2}\n",
		"apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatal(err)
	}
	out, err = kubectl(t, "", "get", "kafkatopics", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(strings.SplitN(out, "\n", 2)[0]); !slices.Equal(f, []string{"NAME", "PARTITIONS", "TOPICID", "READY", "AGE"}) {
		t.Errorf("kubectl get kafkatopics columns %v:\n%s", f, out)
	}
}

// The dev overlay renders and applies (it creates its own namespace, kaas-dev).
func TestDevOverlay(t *testing.T) {
	ctx := context.Background()
	cs, _ := clients(t)
	if _, err := kubectl(t, "", "apply", "-k", filepath.Join(deployDir(t), "overlays", "dev")); err != nil {
		t.Fatal(err)
	}
	sts, err := cs.AppsV1().StatefulSets("kaas-dev").Get(ctx, "kaas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != 1 {
		t.Errorf("dev overlay replicas = %d, want 1", *sts.Spec.Replicas)
	}
	rb, err := cs.RbacV1().RoleBindings("kaas-dev").Get(ctx, "kaas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := rb.Subjects[0]; s.Kind != "ServiceAccount" || s.Name != "kaas" || (s.Namespace != "" && s.Namespace != "kaas-dev") {
		t.Errorf("rolebinding subject %+v", s)
	}
}

// The Role grants exactly what a broker uses: checked with a real service-account token.
func TestBrokerRBAC(t *testing.T) {
	ctx := context.Background()
	cs, dc := clients(t)
	applyCRD(t, dc)
	ns := newNamespace(t)
	if _, err := kubectl(t, "", "apply", "-k", filepath.Join(deployDir(t), "base"), "-n", ns); err != nil {
		t.Fatal(err)
	}
	tok, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "kaas", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for serviceaccount kaas: %v", err)
	}
	admin := restConfig(t)
	sa := &rest.Config{Host: admin.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile}}
	broker, err := kubernetes.NewForConfig(sa)
	if err != nil {
		t.Fatal(err)
	}

	type check struct {
		group, resource, sub, verb, ns string
		allowed                        bool
	}
	var checks []check
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch"} {
		checks = append(checks, check{"coordination.k8s.io", "leases", "", v, ns, true})
	}
	for _, v := range []string{"get", "list", "watch", "create", "update", "patch", "delete"} {
		checks = append(checks, check{"kaas.dev", "kafkatopics", "", v, ns, true})
	}
	for _, v := range []string{"get", "update", "patch"} {
		checks = append(checks, check{"kaas.dev", "kafkatopics", "status", v, ns, true})
	}
	for _, v := range []string{"get", "list", "watch", "create", "delete"} {
		checks = append(checks, check{"kaas.dev", "kafkaacls", "", v, ns, true})
	}
	for _, v := range []string{"get", "list", "watch", "create", "update", "delete"} {
		checks = append(checks, check{"kaas.dev", "kafkaquotas", "", v, ns, true})
		checks = append(checks, check{"kaas.dev", "kafkausers", "", v, ns, true})
	}
	for _, v := range []string{"get", "list", "watch"} {
		checks = append(checks, check{"discovery.k8s.io", "endpointslices", "", v, ns, true})
	}
	checks = append(checks,
		check{"", "pods", "", "get", ns, true},
		// Nothing more.
		check{"coordination.k8s.io", "leases", "", "delete", ns, false},
		check{"coordination.k8s.io", "leases", "", "deletecollection", ns, false},
		check{"kaas.dev", "kafkatopics", "", "deletecollection", ns, false},
		check{"kaas.dev", "kafkatopics", "status", "create", ns, false},
		check{"kaas.dev", "kafkaacls", "", "update", ns, false},
		check{"kaas.dev", "kafkaacls", "", "deletecollection", ns, false},
		check{"kaas.dev", "kafkaquotas", "", "patch", ns, false},
		check{"kaas.dev", "kafkaquotas", "", "deletecollection", ns, false},
		check{"kaas.dev", "kafkausers", "", "deletecollection", ns, false},
		check{"discovery.k8s.io", "endpointslices", "", "create", ns, false},
		check{"", "pods", "", "list", ns, false},
		check{"", "pods", "", "delete", ns, false},
		check{"", "secrets", "", "get", ns, false},
		check{"", "configmaps", "", "get", ns, false},
		check{"", "endpoints", "", "list", ns, false},
		check{"apps", "statefulsets", "", "get", ns, false}, // only the one named kaas (below)
		check{"apps", "statefulsets", "", "list", ns, false},
		check{"apps", "statefulsets", "", "update", ns, false},
		// Namespaced: nothing in another namespace.
		check{"coordination.k8s.io", "leases", "", "get", "default", false},
		check{"kaas.dev", "kafkatopics", "", "list", "default", false},
	)
	for _, c := range checks {
		r, err := broker.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: c.ns, Group: c.group, Resource: c.resource, Subresource: c.sub, Verb: c.verb,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview: %v", err)
		}
		if r.Status.Allowed != c.allowed {
			t.Errorf("%s %s.%s/%s in %s: allowed=%v, want %v", c.verb, c.resource, c.group, c.sub, c.ns, r.Status.Allowed, c.allowed)
		}
	}
	// Its own StatefulSet's replicas (the controller unregisters the
	// brokers a scale-down removed), no other's.
	for name, allowed := range map[string]bool{"kaas": true, "other": false} {
		r, err := broker.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Group: "apps", Resource: "statefulsets", Verb: "get", Name: name,
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SelfSubjectAccessReview: %v", err)
		}
		if r.Status.Allowed != allowed {
			t.Errorf("get statefulsets.apps/%s in %s: allowed=%v, want %v", name, ns, r.Status.Allowed, allowed)
		}
	}

	// And for real, with the token: a Lease write succeeds, reading Secrets is forbidden.
	if _, err := broker.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kaas-controller"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("kaas-0")},
	}, metav1.CreateOptions{}); err != nil {
		t.Errorf("broker creates its Lease: %v", err)
	}
	if _, err := broker.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("broker lists Secrets: want 403 Forbidden, got %v", err)
	}
	if _, err := broker.CoreV1().Pods(ns).Get(ctx, "kaas-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("broker gets its Pod: want 404 (no kubelet here), got %v", err)
	}
}
