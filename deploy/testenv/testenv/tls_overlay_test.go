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
	o := applyOverlay(t, "tls", "kaas-tls", 3)
	o.checkEnv(t, map[string]string{
		"KAAS_ADVERTISED_ADDR": "", "KAAS_LISTENERS": "SASL_SSL://:9092,SSL://:9095", "KAAS_TLS_DIR": "/etc/kaas/tls",
		"KAAS_SASL_CREDENTIALS_FILE": "/etc/kaas/users/users.json", "KAAS_HEARTBEAT_TLS": "true", "KAAS_SSL_CLIENT_AUTH": "required",
		"KAAS_INTER_BROKER_SASL_USER": "kaas-broker", "KAAS_INTER_BROKER_SASL_PASSWORD_FILE": "/etc/kaas/inter-broker/password",
	})
	if o.mounts["tls"] != "/etc/kaas/tls" || o.secrets["tls"] != "kaas-tls" || o.mounts["users"] != "/etc/kaas/users" || o.secrets["users"] != "kaas-users" {
		t.Errorf("mounts %v, secret volumes %v", o.mounts, o.secrets)
	}
	if o.mounts["inter-broker"] != "/etc/kaas/inter-broker" || o.secrets["inter-broker"] != "kaas-inter-broker" {
		t.Errorf("inter-broker password: mounts %v, secret volumes %v", o.mounts, o.secrets)
	}
	if out, err := kubectl(t, "", "-n", "kaas-tls", "apply", "-f", filepath.Join(deployDir(t), "overlays", "tls", "kafkauser-example.yaml")); err != nil {
		t.Errorf("the KafkaUser example: %v\n%s", err, out)
	}
}
