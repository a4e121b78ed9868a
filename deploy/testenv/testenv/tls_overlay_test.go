package testenv_test

import (
	"path/filepath"
	"testing"
)

// The TLS overlay applies and mounts what the broker reads: the kaas-tls Secret as the TLS
// directory, the kaas-users Secret as the credentials file, the kaas-inter-broker Secret as the
// password of the user brokers log in as, and the environment naming them; the base's single
// advertised address is blanked (kaas refuses it together with listeners). Its KafkaUser
// example is a valid object.
func TestTLSOverlay(t *testing.T) {
	cs, _ := clients(t)
	if _, err := kubectl(t, "", "apply", "-k", filepath.Join(deployDir(t), "overlays", "tls")); err != nil {
		t.Fatal(err)
	}
	pod, c := brokerPod(t, cs, "kaas-tls", 3)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	want := map[string]string{
		"KAAS_ADVERTISED_ADDR": "", "KAAS_LISTENERS": "SASL_SSL://:9092,SSL://:9095", "KAAS_TLS_DIR": "/etc/kaas/tls",
		"KAAS_SASL_CREDENTIALS_FILE": "/etc/kaas/users/users.json", "KAAS_HEARTBEAT_TLS": "true", "KAAS_SSL_CLIENT_AUTH": "required",
		"KAAS_INTER_BROKER_SASL_USER": "kaas-broker", "KAAS_INTER_BROKER_SASL_PASSWORD_FILE": "/etc/kaas/inter-broker/password",
	}
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("env %s = %q (set %v), want %q", k, got, ok, v)
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	secrets := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
	}
	if mounts["tls"] != "/etc/kaas/tls" || secrets["tls"] != "kaas-tls" || mounts["users"] != "/etc/kaas/users" || secrets["users"] != "kaas-users" {
		t.Errorf("mounts %v, secret volumes %v", mounts, secrets)
	}
	if mounts["inter-broker"] != "/etc/kaas/inter-broker" || secrets["inter-broker"] != "kaas-inter-broker" {
		t.Errorf("inter-broker password: mounts %v, secret volumes %v", mounts, secrets)
	}
	if mounts["data"] != "/data" {
		t.Errorf("the base's data mount lost: %v", mounts)
	}
	if out, err := kubectl(t, "", "-n", "kaas-tls", "apply", "-f", filepath.Join(deployDir(t), "overlays", "tls", "kafkauser-example.yaml")); err != nil {
		t.Errorf("the KafkaUser example: %v\n%s", err, out)
	}
}
