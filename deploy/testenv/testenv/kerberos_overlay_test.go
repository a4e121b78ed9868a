package testenv_test

import "testing"

// The Kerberos overlay applies and mounts what the broker reads: the kaas-keytab Secret as
// the keytab, the kaas-krb5 ConfigMap as the krb5.conf brokers log in to each other with,
// and the environment naming them; the base's single advertised address is blanked (kaas
// refuses it together with listeners).
func TestKerberosOverlay(t *testing.T) {
	o := applyOverlay(t, "kerberos", "kaas-kerberos", 3)
	o.checkEnv(t, map[string]string{
		"KAAS_ADVERTISED_ADDR": "", "KAAS_LISTENERS": "SASL_PLAINTEXT://:9092", "KAAS_SASL_ENABLED_MECHANISMS": "GSSAPI",
		"KAAS_SASL_KERBEROS_KEYTAB": "/etc/kaas/keytab/kafka.keytab", "KAAS_SASL_KERBEROS_SERVICE_NAME": "kafka",
		"KAAS_INTER_BROKER_SASL_MECHANISM": "GSSAPI", "KAAS_INTER_BROKER_KRB5_CONF": "/etc/kaas/krb5/krb5.conf",
	})
	if o.mounts["keytab"] != "/etc/kaas/keytab" || o.secrets["keytab"] != "kaas-keytab" {
		t.Errorf("keytab: mounts %v, secret volumes %v", o.mounts, o.secrets)
	}
	if o.mounts["krb5"] != "/etc/kaas/krb5" || o.configMaps["krb5"] != "kaas-krb5" {
		t.Errorf("krb5.conf: mounts %v, config map volumes %v", o.mounts, o.configMaps)
	}
}
