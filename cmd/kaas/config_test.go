package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/kaas-project/kaas/storage/disklog"
	"github.com/kaas-project/kaas/storage/groupconfig"
)

func TestParseServeFlagsAndEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string // error substring; "" = valid
		chk  func(*serveConfig) bool
	}{
		{"defaults", nil, nil, "", func(c *serveConfig) bool {
			return c.KafkaAddr == ":9092" && c.HTTPAddr == ":8080" && c.advHost == "localhost" && c.advPort == 9092 && !c.clusterMode() &&
				c.syncMode == disklog.SyncFilesystem
		}},
		{"env twin", nil, map[string]string{"KAAS_KAFKA_ADDR": "127.0.0.1:1234", "KAAS_LOG_FORMAT": "json"}, "", func(c *serveConfig) bool {
			return c.KafkaAddr == "127.0.0.1:1234" && c.LogFormat == "json" && c.advPort == 1234
		}},
		{"flag wins over env", []string{"--kafka-addr", ":7000"}, map[string]string{"KAAS_KAFKA_ADDR": ":8000"}, "", func(c *serveConfig) bool {
			return c.KafkaAddr == ":7000"
		}},
		{"unknown flag", []string{"--no-such-flag"}, nil, "not defined", nil},
		{"bad log level", []string{"--log-level", "loud"}, nil, "--log-level", nil},
		{"bad log format", []string{"--log-format", "xml"}, nil, "--log-format", nil},
		{"bad env value", nil, map[string]string{"KAAS_MAX_REQUEST_SIZE": "big"}, "KAAS_MAX_REQUEST_SIZE", nil},
		{"bad address", []string{"--kafka-addr", "nope"}, nil, "--kafka-addr", nil},
		{"tiny request size", []string{"--max-request-size", "10"}, nil, "--max-request-size", nil},
		{"bad fsync mode", []string{"--fsync", "never"}, nil, "--fsync", nil},
		{"retention check interval", nil, map[string]string{"KAAS_RETENTION_CHECK_INTERVAL": "5m"}, "", func(c *serveConfig) bool {
			return c.RetentionCheckInterval == 5*time.Minute
		}},
		{"zero retention check interval", []string{"--retention-check-interval", "0s"}, nil, "--retention-check-interval 0s: want at least 1ms", nil},
		{"connection limits", []string{"--max-connections", "500", "--max-connections-per-ip-overrides", "10.0.0.1:50"},
			map[string]string{"KAAS_MAX_CONNECTIONS_PER_IP": "20"}, "", func(c *serveConfig) bool {
				return c.MaxConnections == 500 && c.MaxConnectionsPerIP == 20 && c.MaxConnectionsPerIPOverrides == "10.0.0.1:50"
			}},
		{"connection limits unset", nil, nil, "", func(c *serveConfig) bool {
			return c.MaxConnections == math.MaxInt32 && c.MaxConnectionsPerIP == math.MaxInt32 && c.MaxConnectionsPerIPOverrides == ""
		}},
		{"negative max connections", []string{"--max-connections", "-1"}, nil, "--max-connections -1", nil},
		{"per ip 0 without overrides", []string{"--max-connections-per-ip", "0"}, nil, "only with --max-connections-per-ip-overrides", nil},
		{"overrides not host:count", []string{"--max-connections-per-ip-overrides", "10.0.0.1"}, nil, "--max-connections-per-ip-overrides", nil},
		{"assignors", []string{"--group-consumer-assignors", "range,uniform"}, nil, "", func(c *serveConfig) bool {
			return c.GroupConsumerAssignors == "range,uniform"
		}},
		{"unknown assignor", []string{"--group-consumer-assignors", "uniform,sticky"}, nil, `--group-consumer-assignors "uniform,sticky": unknown server-side assignor "sticky"`, nil},
		{"offset metadata bound zero", []string{"--offset-metadata-max-bytes", "0"}, nil, "--offset-metadata-max-bytes 0: must be at least 1", nil},
		{"bad migration policy", []string{"--group-consumer-migration-policy", "sideways"}, nil, "--group-consumer-migration-policy", nil},
		{"migration policy in capitals", []string{"--group-consumer-migration-policy", "UPGRADE"}, nil, "", func(c *serveConfig) bool {
			return c.GroupMigrationPolicy == "upgrade"
		}},
		{"group size defaults", nil, nil, "", func(c *serveConfig) bool {
			return c.GroupMaxSize == math.MaxInt32 && c.GroupConsumerMaxSize == math.MaxInt32 && c.GroupShareMaxSize == 200 && c.GroupStreamsMaxSize == math.MaxInt32 &&
				c.GroupShareMaxShareSessions == 2000
		}},
		{"group size from the environment", nil, map[string]string{"KAAS_GROUP_SHARE_MAX_SIZE": "1000", "KAAS_GROUP_CONSUMER_MAX_SIZE": "7"}, "", func(c *serveConfig) bool {
			return c.GroupShareMaxSize == 1000 && c.GroupConsumerMaxSize == 7
		}},
		{"group bounds default to Kafka's", nil, nil, "", func(c *serveConfig) bool {
			b := groupConfigBounds(c.GroupBounds)
			return b["share.record.lock.duration.ms"] == groupconfig.Bound{Min: 15000, Max: 60000} &&
				b["consumer.session.timeout.ms"] == groupconfig.Bound{Min: 45000, Max: 60000} &&
				b["streams.num.standby.replicas"] == groupconfig.Bound{Min: 0, Max: 2} && len(c.GroupBounds) == 19 &&
				b["share.partition.max.record.locks"] == groupconfig.Bound{Min: 100, Max: 4000} && c.GroupSharePartitionMaxRecordLocks == 2000
		}},
		{"lowered share lock bound", []string{"--group-share-min-record-lock-duration", "1s", "--share-record-lock-duration", "2s"},
			map[string]string{"KAAS_GROUP_SHARE_MAX_DELIVERY_COUNT_LIMIT": "20", "KAAS_SHARE_DELIVERY_COUNT_LIMIT": "15"}, "", func(c *serveConfig) bool {
				b := groupConfigBounds(c.GroupBounds)
				return b["share.record.lock.duration.ms"] == groupconfig.Bound{Min: 1000, Max: 60000} &&
					b["share.delivery.count.limit"] == groupconfig.Bound{Min: 2, Max: 20} && c.ShareDeliveryCountLimit == 15
			}},
		{"lock duration under the bound", []string{"--share-record-lock-duration", "2s"}, nil,
			"--share-record-lock-duration 2s: must be 15s to 1m0s (--group-share-min-record-lock-duration, --group-share-max-record-lock-duration)", nil},
		{"bound outside Kafka's range", []string{"--group-share-min-record-lock-duration", "500ms"}, nil,
			"--group-share-min-record-lock-duration 500ms: must be 1s to 30s (Kafka's group.share.min.record.lock.duration.ms)", nil},
		{"minimum over maximum", []string{"--group-consumer-min-session-timeout", "50s", "--group-consumer-max-session-timeout", "40s"}, nil,
			"--group-consumer-max-session-timeout must be at least --group-consumer-min-session-timeout", nil},
		{"session default under a raised minimum", []string{"--group-streams-min-session-timeout", "50s"}, nil,
			"--group-streams-session-timeout 45s: must be 50s to 1m0s", nil},
		{"record locks over the maximum", []string{"--group-share-partition-max-record-locks", "5000"}, nil,
			"--group-share-partition-max-record-locks 5000: must be 100 to 4000 (--group-share-min-partition-max-record-locks, --group-share-max-partition-max-record-locks)", nil},
		{"record locks with a raised maximum", []string{"--group-share-partition-max-record-locks", "5000", "--group-share-max-partition-max-record-locks", "8000"}, nil, "", func(c *serveConfig) bool {
			return c.GroupSharePartitionMaxRecordLocks == 5000
		}},
		{"delivery limit over the maximum", []string{"--share-delivery-count-limit", "11"}, nil, "--share-delivery-count-limit 11: must be 2 to 10", nil},
		{"standby replicas over the maximum", []string{"--group-streams-num-standby-replicas", "3"}, nil,
			"--group-streams-num-standby-replicas 3: must be 0 to 2 (--group-streams-max-standby-replicas)", nil},
		{"sub-millisecond bound", []string{"--group-consumer-min-heartbeat-interval", "1500us"}, nil, "want whole milliseconds", nil},
		{"short consumer heartbeats", []string{"--group-consumer-min-heartbeat-interval", "100ms", "--group-consumer-heartbeat-interval", "300ms"}, nil, "", func(c *serveConfig) bool {
			return c.GroupConsumerHeartbeatInterval == 300*time.Millisecond
		}},
		{"share heartbeat at the session", []string{"--group-share-heartbeat-interval", "45s"}, nil,
			"--group-share-session-timeout 45s must exceed --group-share-heartbeat-interval 45s", nil},
		{"group max size zero", []string{"--group-max-size", "0"}, nil, "--group-max-size 0", nil},
		{"consumer group max size zero", []string{"--group-consumer-max-size", "0"}, nil, "--group-consumer-max-size 0", nil},
		{"share group max size over 1000", []string{"--group-share-max-size", "1001"}, nil, "--group-share-max-size 1001", nil},
		{"share group max size zero", []string{"--group-share-max-size", "0"}, nil, "--group-share-max-size 0", nil},
		{"share sessions from the environment", nil, map[string]string{"KAAS_GROUP_SHARE_MAX_SHARE_SESSIONS": "300"}, "", func(c *serveConfig) bool {
			return c.GroupShareMaxShareSessions == 300
		}},
		{"share sessions fewer than share group members", []string{"--group-share-max-size", "50", "--group-share-max-share-sessions", "49"}, nil,
			"--group-share-max-share-sessions=49: must be at least --group-share-max-size (50)", nil},
		{"streams group max size negative", []string{"--group-streams-max-size", "-1"}, nil, "--group-streams-max-size -1", nil},
		{"fsync per file", []string{"--fsync", "file"}, nil, "", func(c *serveConfig) bool { return c.syncMode == disklog.SyncFiles }},
		{"stray argument", []string{"extra"}, nil, "unexpected argument", nil},
		{"cluster needs a data dir", nil, map[string]string{"MY_POD_NAME": "kaas-2", "MY_POD_NAMESPACE": "ns"}, "--data-dir", nil},
		{"cluster needs an ordinal", []string{"--data-dir", "/tmp"}, map[string]string{"MY_POD_NAME": "kaas", "MY_POD_NAMESPACE": "ns"}, "ordinal", nil},
		{"cluster defaults", []string{"--data-dir", "/tmp"}, map[string]string{"MY_POD_NAME": "kaas-2", "MY_POD_NAMESPACE": "ns"}, "", func(c *serveConfig) bool {
			return c.BrokerID == 2 && c.advHost == "kaas-2.kaas.ns.svc" && c.AdvertisedHeartbeatAddr == "kaas-2.kaas.ns.svc:9094" &&
				c.LeaseDuration == 15*time.Second && c.clusterMode()
		}},
		{"dead-after must cover fence-after", []string{"--data-dir", "/tmp", "--fence-after", "5s", "--dead-after", "5500ms"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "--dead-after", nil},
		{"stray-grace not negative", []string{"--data-dir", "/tmp", "--stray-grace", "-1s"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "--stray-grace", nil},
		{"concurrent-moves not negative", []string{"--data-dir", "/tmp", "--concurrent-moves", "-5"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "--concurrent-moves", nil},
		{"concurrent-moves from the environment", []string{"--data-dir", "/tmp"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns", "KAAS_CONCURRENT_MOVES": "150"}, "", func(c *serveConfig) bool {
				return c.ConcurrentMoves == 150
			}},
		{"lease timings ordered", []string{"--data-dir", "/tmp", "--renew-deadline", "20s"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "--lease-duration", nil},
		{"fence-after covers two Lease renewals", []string{"--data-dir", "/tmp", "--retry-period", "3s"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "--retry-period", nil},
		{"the controller's broker fences before its Lease can be taken", []string{"--data-dir", "/tmp", "--lease-duration", "5900ms", "--renew-deadline", "3s", "--fence-after", "5s", "--dead-after", "8s"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "before another broker can take its Lease", nil},
		{"fence-after just within the Lease", []string{"--data-dir", "/tmp", "--lease-duration", "6s", "--renew-deadline", "3s", "--fence-after", "5s", "--dead-after", "8s"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "", func(c *serveConfig) bool { return c.FenceAfter == 5*time.Second }},
		{"inter-broker user without password file", []string{"--inter-broker-sasl-user", "kaas-broker"}, nil, "--inter-broker-sasl-password-file", nil},
		{"inter-broker mechanism unknown", []string{"--inter-broker-sasl-mechanism", "NTLM"}, nil, "--inter-broker-sasl-mechanism", nil},
		{"inter-broker GSSAPI needs a keytab", []string{"--inter-broker-sasl-mechanism", "GSSAPI"}, nil, "GSSAPI needs --sasl-kerberos-keytab", nil},
		{"inter-broker GSSAPI takes no user", []string{"--inter-broker-sasl-mechanism", "GSSAPI", "--sasl-kerberos-keytab", "/k",
			"--inter-broker-sasl-user", "b", "--inter-broker-sasl-password-file", "/p"}, nil, "not --inter-broker-sasl-user", nil},
		{"inter-broker GSSAPI not enabled", []string{"--listeners", "SASL_PLAINTEXT://:9093", "--sasl-credentials-file", "/c",
			"--inter-broker-sasl-mechanism", "GSSAPI", "--sasl-kerberos-keytab", "/k"}, nil, "not in --sasl-enabled-mechanisms", nil},
		{"inter-broker GSSAPI", []string{"--listeners", "SASL_PLAINTEXT://:9093", "--sasl-enabled-mechanisms", "GSSAPI",
			"--inter-broker-sasl-mechanism", "GSSAPI", "--sasl-kerberos-keytab", "/k"}, nil, "", func(c *serveConfig) bool {
			return c.InterBrokerKrb5Conf == "/etc/krb5.conf" && c.InterBrokerKrbName == ""
		}},
		{"inter-broker mechanism not enabled", []string{"--inter-broker-sasl-mechanism", "PLAIN", "--inter-broker-sasl-user", "b", "--inter-broker-sasl-password-file", "/p"},
			nil, "not in --sasl-enabled-mechanisms", nil},
		{"inter-broker credentials", []string{"--inter-broker-sasl-user", "b", "--inter-broker-sasl-password-file", "/p"}, nil, "", func(c *serveConfig) bool {
			return c.InterBrokerMech == "SCRAM-SHA-512" && c.InterBrokerUser == "b"
		}},
		{"listener mechanisms of an unknown listener", []string{"--listeners", "SASL_SSL://:9093", "--tls-dir", "/t", "--sasl-credentials-file", "/c",
			"--listener-sasl-enabled-mechanisms", "OTHER=PLAIN"}, nil, "not a SASL listener", nil},
		{"listener mechanisms unknown mechanism", []string{"--listeners", "SASL_SSL://:9093", "--tls-dir", "/t", "--sasl-credentials-file", "/c",
			"--listener-sasl-enabled-mechanisms", "SASL_SSL=NTLM"}, nil, "unknown mechanism", nil},
		{"GSSAPI needs a keytab", []string{"--listeners", "SASL_PLAINTEXT://:9093", "--sasl-enabled-mechanisms", "GSSAPI"}, nil, "GSSAPI needs --sasl-kerberos-keytab", nil},
		{"GSSAPI needs a service name", []string{"--listeners", "SASL_PLAINTEXT://:9093", "--sasl-enabled-mechanisms", "GSSAPI",
			"--sasl-kerberos-keytab", "/k", "--sasl-kerberos-service-name", ""}, nil, "--sasl-kerberos-service-name", nil},
		{"GSSAPI with a keytab", []string{"--listeners", "SASL_PLAINTEXT://:9093", "--sasl-enabled-mechanisms", "GSSAPI", "--sasl-kerberos-keytab", "/k"}, nil, "",
			func(c *serveConfig) bool {
				name, err := c.kerberosRules.ShortName("kafka/kaas-0.kaas@EXAMPLE.COM", "EXAMPLE.COM")
				return c.KerberosService == "kafka" && err == nil && name == "kafka" && len(c.saslMechanisms) == 1
			}},
		{"bad Kerberos rules", []string{"--sasl-kerberos-principal-to-local-rules", "RULE:x"}, nil, "--sasl-kerberos-principal-to-local-rules", nil},
		{"Kerberos rules", []string{"--sasl-kerberos-principal-to-local-rules", "RULE:[1:$1]/L,DEFAULT"}, nil, "", func(c *serveConfig) bool {
			name, err := c.kerberosRules.ShortName("ALICE@EXAMPLE.COM", "EXAMPLE.COM")
			return err == nil && name == "alice"
		}},
		{"listener mechanisms empty", []string{"--listeners", "SASL_SSL://:9093", "--tls-dir", "/t", "--sasl-credentials-file", "/c",
			"--listener-sasl-enabled-mechanisms", "SASL_SSL= , "}, nil, "SASL_SSL: no mechanism", nil},
		{"a listener's own certificates", []string{"--listeners", "SSL://:9093,EXTERNAL://:9094", "--listener-security-protocol-map", "EXTERNAL:SASL_SSL",
			"--sasl-credentials-file", "/c", "--tls-dir", "/t", "--listener-tls-dir", "external=/e", "--listener-ssl-client-auth", "SSL=required"}, nil, "",
			func(c *serveConfig) bool {
				return len(c.listenerTLSDirs) == 1 && c.listenerTLSDirs["EXTERNAL"] == "/e" && c.clientAuth == tls.NoClientCert &&
					c.listenerClientAuth["SSL"] == tls.RequireAndVerifyClientCert && c.tlsPolicy.MinVersion == tls.VersionTLS12 && c.tlsPolicy.MaxVersion == tls.VersionTLS13
			}},
		{"every TLS listener with its own certificates needs no --tls-dir", []string{"--listeners", "SSL://:9093", "--listener-tls-dir", "SSL=/s"}, nil, "",
			func(c *serveConfig) bool { return c.listenerTLSDirs["SSL"] == "/s" && c.TLSDir == "" }},
		{"a TLS listener without certificates", []string{"--listeners", "SSL://:9093,EXTERNAL://:9094", "--listener-security-protocol-map", "EXTERNAL:SSL",
			"--listener-tls-dir", "EXTERNAL=/e"}, nil, "need --tls-dir", nil},
		{"certificates of a PLAINTEXT listener", []string{"--listeners", "PLAINTEXT://:9092", "--listener-tls-dir", "PLAINTEXT=/p"}, nil,
			"--listener-tls-dir: PLAINTEXT is not an SSL or SASL_SSL listener", nil},
		{"certificates given twice", []string{"--listeners", "SSL://:9093", "--listener-tls-dir", "SSL=/a;ssl=/b"}, nil, "listener SSL given twice", nil},
		{"certificates without a directory", []string{"--listeners", "SSL://:9093", "--listener-tls-dir", "SSL="}, nil, "is not NAME=VALUE", nil},
		{"client auth of a SASL_SSL listener", []string{"--listeners", "SASL_SSL://:9093", "--tls-dir", "/t", "--sasl-credentials-file", "/c",
			"--listener-ssl-client-auth", "SASL_SSL=required"}, nil, "SASL_SSL is not an SSL listener", nil},
		{"a bad client auth", []string{"--listeners", "SSL://:9093", "--tls-dir", "/t", "--listener-ssl-client-auth", "SSL=always"}, nil,
			`--listener-ssl-client-auth SSL: "always": want none, requested or required`, nil},
		{"TLS 1.1", []string{"--ssl-enabled-protocols", "TLSv1.1,TLSv1.2"}, nil, `"TLSv1.1" is not served`, nil},
		{"TLS 1.3 alone with suites", []string{"--ssl-enabled-protocols", "TLSv1.3", "--ssl-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, nil, "TLS 1.3 alone", nil},
		{"an insecure suite", []string{"--ssl-cipher-suites", "TLS_RSA_WITH_RC4_128_SHA"}, nil, "--ssl-cipher-suites", nil},
		{"TLS 1.2 and two suites", []string{"--ssl-enabled-protocols", "TLSv1.2", "--ssl-cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}, nil, "",
			func(c *serveConfig) bool {
				return c.tlsPolicy.MaxVersion == tls.VersionTLS12 && len(c.tlsPolicy.CipherSuites) == 2 && c.tlsPolicy.CipherSuites[1] == tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
			}},
		{"listener mechanisms need their files", []string{"--listeners", "SASL_SSL://:9093", "--tls-dir", "/t", "--sasl-credentials-file", "/c",
			"--listener-sasl-enabled-mechanisms", "SASL_SSL=OAUTHBEARER"}, nil, "--sasl-oauthbearer-jwks-file", nil},
		{"listener mechanisms", []string{"--listeners", "SASL_SSL://:9093,SASL_PLAINTEXT://:9094", "--tls-dir", "/t", "--sasl-credentials-file", "/c",
			"--listener-sasl-enabled-mechanisms", "sasl_plaintext=SCRAM-SHA-512"}, nil, "", func(c *serveConfig) bool {
			return len(c.listenerMechs) == 1 && len(c.listenerMechs["SASL_PLAINTEXT"]) == 1 && c.listenerMechs["SASL_PLAINTEXT"][0] == "SCRAM-SHA-512"
		}},
		{"jwks file and url", []string{"--sasl-oauthbearer-jwks-file", "/j", "--sasl-oauthbearer-jwks-url", "https://idp/jwks"}, nil, "give one", nil},
		{"unsecured tokens", []string{"--listeners", "SASL_PLAINTEXT://:9093", "--sasl-enabled-mechanisms", "OAUTHBEARER", "--sasl-oauthbearer-unsecured",
			"--sasl-oauthbearer-unsecured-required-scope", " test  read ", "--sasl-oauthbearer-unsecured-allowable-clock-skew", "30s"}, nil, "", func(c *serveConfig) bool {
			return c.OAuthUnsecured && c.oauthServed && slices.Equal(c.oauthRequiredScope, []string{"test", "read"}) && c.OAuthClockSkew == 30*time.Second &&
				c.OAuthPrincipalClaim == "sub" && c.OAuthScopeClaim == "scope"
		}},
		{"unsecured tokens and a jwks file", []string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-jwks-file", "/j"}, nil,
			"--sasl-oauthbearer-unsecured and --sasl-oauthbearer-jwks-file: give one", nil},
		{"unsecured tokens and a jwks url", []string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-jwks-url", "https://idp/jwks"}, nil,
			"--sasl-oauthbearer-unsecured and --sasl-oauthbearer-jwks-url: give one", nil},
		{"unsecured tokens and an issuer", []string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-issuer", "kafka"}, nil,
			"--sasl-oauthbearer-unsecured and --sasl-oauthbearer-issuer: give one", nil},
		{"unsecured options without unsecured tokens", []string{"--sasl-oauthbearer-unsecured-required-scope", "test"}, nil,
			"--sasl-oauthbearer-unsecured-required-scope needs --sasl-oauthbearer-unsecured", nil},
		{"unsecured tokens with a bad scope", []string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-unsecured-required-scope", `a"b`}, nil,
			"--sasl-oauthbearer-unsecured-required-scope", nil},
		{"unsecured tokens with a negative skew", []string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-unsecured-allowable-clock-skew", "-1s"}, nil,
			"--sasl-oauthbearer-unsecured-allowable-clock-skew", nil},
		{"unsecured tokens without a principal claim", []string{"--sasl-oauthbearer-unsecured", "--sasl-oauthbearer-unsecured-principal-claim-name", " "}, nil,
			"--sasl-oauthbearer-unsecured-principal-claim-name", nil},
		{"jwks url not https", []string{"--sasl-oauthbearer-jwks-url", "http://idp/jwks"}, nil, "https://", nil},
		{"jwks retry backoff not positive", []string{"--sasl-oauthbearer-jwks-retry-backoff", "0s"}, nil, "--sasl-oauthbearer-jwks-retry-backoff", nil},
		{"jwks retry backoff max below the backoff", []string{"--sasl-oauthbearer-jwks-retry-backoff", "2s", "--sasl-oauthbearer-jwks-retry-backoff-max", "1s"}, nil, "--sasl-oauthbearer-jwks-retry-backoff-max", nil},
		{"bad principal mapping rules", []string{"--ssl-principal-mapping-rules", "RULE:x"}, nil, "--ssl-principal-mapping-rules", nil},
		{"a port per pod", []string{"--data-dir", "/tmp", "--listeners", "PLAINTEXT://:9092,EXTERNAL://:9094",
			"--advertised-listeners", "EXTERNAL://$(MY_HOST_IP):{ordinal+31090}", "--listener-security-protocol-map", "EXTERNAL:PLAINTEXT"},
			map[string]string{"MY_POD_NAME": "kaas-2", "MY_POD_NAMESPACE": "ns"}, "", func(c *serveConfig) bool {
				return c.advHost == "kaas-2.kaas.ns.svc" && c.advPort == 9092 && c.publishedListeners() == "EXTERNAL://$(MY_HOST_IP):31092"
			}},
		{"the external overlay", []string{"--data-dir", "/tmp"}, map[string]string{"MY_POD_NAME": "kaas-1", "MY_POD_NAMESPACE": "ns",
			"KAAS_ADVERTISED_ADDR": "", "KAAS_LISTENERS": "PLAINTEXT://:9092,EXTERNAL://:9096", "KAAS_LISTENER_SECURITY_PROTOCOL_MAP": "EXTERNAL:PLAINTEXT",
			"KAAS_ADVERTISED_LISTENERS": "EXTERNAL://10.1.2.3:{ordinal+31090}"}, "", func(c *serveConfig) bool {
			return c.advHost == "kaas-1.kaas.ns.svc" && c.advPort == 9092 && c.publishedListeners() == "EXTERNAL://10.1.2.3:31091" &&
				c.listenerSpecs[1].Addr == ":9096"
		}},
		{"a host per pod", []string{"--listeners", "PLAINTEXT://:9092,SSL://:{ordinal+9093}", "--broker-id", "4", "--tls-dir", "/t",
			"--advertised-listeners", "PLAINTEXT://kafka-{ordinal}.example.com:9092,SSL://kafka-{ordinal}.example.com:9093"}, nil, "", func(c *serveConfig) bool {
			return c.advHost == "kafka-4.example.com" && c.listenerSpecs[1].Addr == ":9097" &&
				c.publishedListeners() == "SSL://kafka-4.example.com:9093" && c.advertisedListenersString() == "PLAINTEXT://kafka-4.example.com:9092,SSL://kafka-4.example.com:9093"
		}},
		{"one listener publishes none", []string{"--listeners", "SSL://:9093", "--tls-dir", "/t"}, nil, "", func(c *serveConfig) bool {
			return c.publishedListeners() == ""
		}},
		{"an unknown placeholder", []string{"--advertised-addr", "kafka-{pod}:9092"}, nil, "--advertised-addr \"kafka-{pod}:9092\": {pod}", nil},
		{"an unmatched brace", []string{"--listeners", "PLAINTEXT://:{ordinal+9092"}, nil, "unmatched brace", nil},
		{"a negative offset", []string{"--kafka-addr", ":{ordinal+-1}"}, nil, "{ordinal+N}", nil},
		{"a listener named twice", []string{"--listeners", "SSL://:9093,ssl://:9094"}, nil, "--listeners: listener SSL given twice", nil},
		{"fence-after covers two pings", []string{"--data-dir", "/tmp", "--heartbeat-interval", "3s"},
			map[string]string{"MY_POD_NAME": "kaas-0", "MY_POD_NAMESPACE": "ns"}, "--fence-after", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := parseServe(tc.args, env(tc.env), io.Discard)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error about %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.chk(cfg) {
				t.Fatalf("config %+v", cfg)
			}
		})
	}
}

func TestCommands(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "kaas ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"--version"}, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "kaas ") {
		t.Fatalf("--version: %d %q", code, out.String())
	}
	errb.Reset()
	if code := run([]string{"frobnicate"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "unknown command") || !strings.Contains(errb.String(), "kaas dump-log") {
		t.Fatalf("unknown command: %d %q", code, errb.String())
	}
	// --help and help name the same commands.
	for _, args := range [][]string{{"--help"}, {"help"}} {
		out.Reset()
		errb.Reset()
		if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String()+errb.String(), commandsUsage) {
			t.Fatalf("%v: %d, the commands line missing from %q", args, code, out.String()+errb.String())
		}
	}
	errb.Reset()
	if code := run([]string{"--log-level", "nope"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--log-level") {
		t.Fatalf("bad flag: %d %q", code, errb.String())
	}
}

func TestGroupFlagsReachTheCoordinator(t *testing.T) {
	_, addr := testBroker(t, "--group-min-session-timeout", "10s")
	cl := newClient(t, addr)
	join := func(session int32) int16 {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = "flags-group", session, 60000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := join(5000); code != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("5 s session under a 10 s minimum: error %d, want INVALID_SESSION_TIMEOUT", code)
	}
	if code := join(15000); code == kerr.InvalidSessionTimeout.Code {
		t.Fatal("15 s session refused under a 10 s minimum")
	}
}

// TestMigrationPolicyFlag: with --group-consumer-migration-policy=disabled a
// KIP-848 consumer cannot join a classic group with members, and the broker
// config reports the policy.
func TestMigrationPolicyFlag(t *testing.T) {
	_, addr := testBroker(t, "--group-consumer-migration-policy", "disabled")
	ctx := ctxT(t, 30*time.Second)
	adm := newAdmin(t, addr)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "policy-t"); err != nil {
		t.Fatal(err)
	}
	newClient(t, addr, kgo.ConsumeTopics("policy-t"), kgo.ConsumerGroup("policy-g")) // joins at once
	cl := newClient(t, addr)
	waitFor(t, ctx, "the classic consumer in the group", func() bool {
		d, err := adm.DescribeGroups(ctx, "policy-g")
		return err == nil && d["policy-g"].State == "Stable" && len(d["policy-g"].Members) == 1
	})
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "policy-g", "m-848", 0, 10000
	req.SubscribedTopicNames, req.Topics = []string{"policy-t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("KIP-848 join of a classic group under the disabled policy: error %d, want GROUP_ID_NOT_FOUND", resp.ErrorCode)
	}
	cfgs, err := adm.DescribeBrokerConfigs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfgs.On("0", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Configs {
		if kv.Key == "group.consumer.migration.policy" {
			if kv.MaybeValue() != "disabled" {
				t.Fatalf("group.consumer.migration.policy = %q", kv.MaybeValue())
			}
			return
		}
	}
	t.Fatal("group.consumer.migration.policy is not among the broker's configs")
}

// TestConsoleColorsOnlyOnATerminal: console logs get colour escapes on a
// terminal (a real pseudo-terminal here), never in a file, a pipe or a
// buffer, and not with NO_COLOR set.
func TestConsoleColorsOnlyOnATerminal(t *testing.T) {
	noEnv := func(string) string { return "" }
	noColor := func(k string) string {
		if k == "NO_COLOR" {
			return "1"
		}
		return ""
	}
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	defer tty.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, c := range []struct {
		name   string
		w      io.Writer
		getenv func(string) string
		want   bool
	}{
		{"terminal", tty, noEnv, true},
		{"terminal with NO_COLOR", tty, noColor, false},
		{"file", file, noEnv, false},
		{"pipe", w, noEnv, false},
		{"buffer", &bytes.Buffer{}, noEnv, false},
	} {
		if got := colorTerminal(c.w, c.getenv); got != c.want {
			t.Errorf("%s: colours %v, want %v", c.name, got, c.want)
		}
	}
	// What a broker started with its log in a file writes there.
	var buf bytes.Buffer
	lg := newLogger(&serveConfig{LogFormat: "console"}, &buf)
	lg.Info().Str("mode", "local").Msg("kaas started")
	if strings.Contains(buf.String(), "\x1b[") || !strings.Contains(buf.String(), "mode=local") {
		t.Fatalf("console log to a buffer: %q", buf.String())
	}
}
