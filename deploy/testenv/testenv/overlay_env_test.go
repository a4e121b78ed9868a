package testenv_test

import (
	"path/filepath"
	"testing"
)

// appliedOverlay is what the broker of an overlay applied to the test
// apiserver reads: its environment, its mounts (volume name to path) and
// the Secrets and ConfigMaps behind its volumes.
type appliedOverlay struct {
	env, mounts         map[string]string
	secrets, configMaps map[string]string
}

// applyOverlay applies deploy/overlays/<name> and reads its StatefulSet
// in namespace ns, which must have replicas brokers.
func applyOverlay(t *testing.T, name, ns string, replicas int32) appliedOverlay {
	t.Helper()
	cs, _ := clients(t)
	if _, err := kubectl(t, "", "apply", "-k", filepath.Join(deployDir(t), "overlays", name)); err != nil {
		t.Fatal(err)
	}
	pod, c := brokerPod(t, cs, ns, replicas)
	o := appliedOverlay{env: map[string]string{}, mounts: map[string]string{}, secrets: map[string]string{}, configMaps: map[string]string{}}
	for _, e := range c.Env {
		o.env[e.Name] = e.Value
	}
	for _, m := range c.VolumeMounts {
		o.mounts[m.Name] = m.MountPath
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			o.secrets[v.Name] = v.Secret.SecretName
		}
		if v.ConfigMap != nil {
			o.configMaps[v.Name] = v.ConfigMap.Name
		}
	}
	return o
}

// checkEnv reports every variable of want the broker does not have.
func (o appliedOverlay) checkEnv(t *testing.T, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := o.env[k]; !ok || got != v {
			t.Errorf("env %s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	if o.mounts["data"] != "/data" {
		t.Errorf("the base's data mount lost: %v", o.mounts)
	}
}
