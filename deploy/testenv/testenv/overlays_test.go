package testenv_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The production overlay applies, with what it promises: three brokers one per node, the
// NFS StorageClass with the mount options kaas needs, a grace period above the drain.
func TestProductionOverlay(t *testing.T) {
	ctx := context.Background()
	cs, _ := clients(t)
	if _, err := kubectl(t, "", "apply", "-k", filepath.Join(deployDir(t), "overlays", "production")); err != nil {
		t.Fatal(err)
	}
	pod, c := brokerPod(t, cs, "kaas", 3)
	if a := pod.Spec.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey != "kubernetes.io/hostname" ||
		len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("affinity %+v: want only the required anti-affinity on hostname", a)
	}
	if an := pod.Annotations; an["prometheus.io/scrape"] != "true" || an["prometheus.io/port"] != "8080" || an["prometheus.io/path"] != "/metrics" {
		t.Errorf("pod annotations %v", an)
	}
	if r := c.Resources; r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() || r.Limits.Memory().IsZero() {
		t.Errorf("resources %+v", r)
	}
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, "kaas-nfs", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Provisioner != "nfs.csi.k8s.io" || !slices.Contains(sc.MountOptions, "hard") || !slices.Contains(sc.MountOptions, "nfsvers=4.1") ||
		slices.Contains(sc.MountOptions, "nocto") {
		t.Errorf("storageclass: provisioner %s mountOptions %v", sc.Provisioner, sc.MountOptions)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims("kaas").Get(ctx, "kaas-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "kaas-nfs" {
		t.Errorf("pvc storageClassName %v", pvc.Spec.StorageClassName)
	}
	pdb, err := cs.PolicyV1().PodDisruptionBudgets("kaas").Get(ctx, "kaas", metav1.GetOptions{})
	if err != nil || pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("pdb: %v %+v", err, pdb)
	}
}

// The e2e overlay applies: three brokers on one node, a never-pulled image, a host
// directory bound to the claim, and short timings kaas accepts.
func TestE2EOverlay(t *testing.T) {
	ctx := context.Background()
	cs, _ := clients(t)
	if _, err := kubectl(t, "", "apply", "-k", filepath.Join(deployDir(t), "overlays", "e2e")); err != nil {
		t.Fatal(err)
	}
	_, c := brokerPod(t, cs, "kaas-e2e", 3)
	if c.Image != "kaas:dev" || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %s pull policy %s", c.Image, c.ImagePullPolicy)
	}
	d := map[string]time.Duration{}
	for _, e := range c.Env {
		if v, err := time.ParseDuration(e.Value); err == nil {
			d[e.Name] = v
		}
	}
	// The constraints kaas validates at start (cmd/kaas/config.go).
	if d["KAAS_FENCE_AFTER"] < 2*d["KAAS_HEARTBEAT_INTERVAL"] || d["KAAS_DEAD_AFTER"] < d["KAAS_FENCE_AFTER"]+time.Second ||
		!(d["KAAS_LEASE_DURATION"] > d["KAAS_RENEW_DEADLINE"] && d["KAAS_RENEW_DEADLINE"] > d["KAAS_RETRY_PERIOD"] && d["KAAS_RETRY_PERIOD"] > 0) {
		t.Errorf("timings kaas would reject: %v", d)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, "kaas-e2e-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath == nil || !slices.Equal(pv.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) ||
		pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != "kaas-e2e" || pv.Spec.ClaimRef.Name != "kaas-data" {
		t.Errorf("pv %+v", pv.Spec)
	}
	pvc, err := cs.CoreV1().PersistentVolumeClaims("kaas-e2e").Get(ctx, "kaas-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pvc.Spec.VolumeName != "kaas-e2e-data" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "kaas-e2e-manual" {
		t.Errorf("pvc volumeName %q storageClassName %v", pvc.Spec.VolumeName, pvc.Spec.StorageClassName)
	}
}

// brokerPod checks what every overlay keeps from the base (non-root, read-only rootfs, a
// grace period above the drain timeout) and returns the pod template and its container.
func brokerPod(t *testing.T, cs *kubernetes.Clientset, ns string, replicas int32) (corev1.PodTemplateSpec, corev1.Container) {
	t.Helper()
	sts, err := cs.AppsV1().StatefulSets(ns).Get(context.Background(), "kaas", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *sts.Spec.Replicas != replicas {
		t.Errorf("%s: replicas %d, want %d", ns, *sts.Spec.Replicas, replicas)
	}
	pod := sts.Spec.Template
	c := pod.Spec.Containers[0]
	if sc := pod.Spec.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 {
		t.Errorf("%s: pod securityContext %+v", ns, sc)
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("%s: container securityContext %+v", ns, sc)
	}
	drain := 45 * time.Second // kaas's default --drain-timeout
	for _, e := range c.Env {
		if e.Name == "KAAS_DRAIN_TIMEOUT" {
			if drain, err = time.ParseDuration(e.Value); err != nil {
				t.Fatalf("%s: KAAS_DRAIN_TIMEOUT %q: %v", ns, e.Value, err)
			}
		}
	}
	if grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second; grace <= drain {
		t.Errorf("%s: terminationGracePeriodSeconds %s does not exceed the drain timeout %s", ns, grace, drain)
	}
	return pod, c
}
