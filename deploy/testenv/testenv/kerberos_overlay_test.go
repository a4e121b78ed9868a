package testenv_test

import (
	"path/filepath"
	"testing"
)

// The Kerberos overlay applies and mounts what the broker reads: the kaas-keytab Secret as
// the keytab, the kaas-krb5 ConfigMap as the krb5.conf brokers log in to each other with,
// and the environment naming them; the base's single advertised address is blanked (kaas
// refuses it together with listeners).
func TestKerberosOverlay(t *testing.T) {
	cs, _ := clients(t)
	if _, err := kubectl(t, "", "apply", "-k", filepath.Join(deployDir(t), "overlays", "kerberos")); err != nil {
		t.Fatal(err)
	}
	pod, c := brokerPod(t, cs, "kaas-kerberos", 3)
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	want := map[string]string{
		"KAAS_ADVERTISED_ADDR": "", "KAAS_LISTENERS": "SASL_PLAINTEXT://:9092", "KAAS_SASL_ENABLED_MECHANISMS": "GSSAPI",
		"KAAS_SASL_KERBEROS_KEYTAB": "/etc/kaas/keytab/kafka.keytab", "KAAS_SASL_KERBEROS_SERVICE_NAME": "kafka",
		"KAAS_INTER_BROKER_SASL_MECHANISM": "GSSAPI", "KAAS_INTER_BROKER_KRB5_CONF": "/etc/kaas/krb5/krb5.conf",
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
	secrets, configMaps := map[string]string{}, map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
		}
		if v.ConfigMap != nil {
			configMaps[v.Name] = v.ConfigMap.Name
		}
	}
	if mounts["keytab"] != "/etc/kaas/keytab" || secrets["keytab"] != "kaas-keytab" {
		t.Errorf("keytab: mounts %v, secret volumes %v", mounts, secrets)
	}
	if mounts["krb5"] != "/etc/kaas/krb5" || configMaps["krb5"] != "kaas-krb5" {
		t.Errorf("krb5.conf: mounts %v, config map volumes %v", mounts, configMaps)
	}
	if mounts["data"] != "/data" {
		t.Errorf("the base's data mount lost: %v", mounts)
	}
}
