package testenv_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The external overlay gives each broker a second listener, EXTERNAL on 9096, advertised at its
// node's address with node port 31090+N, and a NodePort Service per broker that reaches it there:
// the environment (MY_HOST_IP from the downward API, defined before the variable that expands
// it), the container port, and the three Services as the apiserver stores them.
func TestExternalOverlay(t *testing.T) {
	const ns = "kaas-external"
	o := applyOverlay(t, "external", ns, 3)
	o.checkEnv(t, map[string]string{
		"KAAS_ADVERTISED_ADDR": "", "KAAS_LISTENERS": "PLAINTEXT://:9092,EXTERNAL://:9096",
		"KAAS_LISTENER_SECURITY_PROTOCOL_MAP": "EXTERNAL:PLAINTEXT",
		"KAAS_ADVERTISED_LISTENERS":           "EXTERNAL://$(MY_HOST_IP):{ordinal+31090}",
	})
	cs, _ := clients(t)
	_, c := brokerPod(t, cs, ns, 3)
	hostIP := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "MY_HOST_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
	})
	advertised := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "KAAS_ADVERTISED_LISTENERS" })
	if hostIP < 0 || advertised < hostIP {
		t.Errorf("MY_HOST_IP (status.hostIP) at %d, KAAS_ADVERTISED_LISTENERS at %d: Kubernetes expands $(MY_HOST_IP) only after its definition", hostIP, advertised)
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "kafka-external" && p.ContainerPort == 9096 }) {
		t.Errorf("container ports %+v lack kafka-external 9096", c.Ports)
	}
	for n := range 3 {
		name := fmt.Sprintf("kaas-external-%d", n)
		svc, err := cs.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyLocal ||
			svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != fmt.Sprintf("kaas-%d", n) || len(svc.Spec.Ports) != 1 ||
			svc.Spec.Ports[0].NodePort != int32(31090+n) || svc.Spec.Ports[0].TargetPort.StrVal != "kafka-external" {
			t.Errorf("%s: %+v", name, svc.Spec)
		}
	}
}
