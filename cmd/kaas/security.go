package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	krbclient "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
	ksasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/kerberos"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"k8s.io/client-go/dynamic"

	"github.com/kaas-project/kaas/actors/cluster"
	"github.com/kaas-project/kaas/actors/conn"
	"github.com/kaas-project/kaas/actors/routing"
	"github.com/kaas-project/kaas/storage/delegation"
	"github.com/kaas-project/kaas/wire/sasl"
	"github.com/kaas-project/kaas/wire/tlsfiles"
)

// securityConfig is the listeners, TLS and SASL part of the command line.
type securityConfig struct {
	Listeners           string
	AdvertisedListeners string
	ListenerProtocolMap string
	TLSDir              string
	ListenerTLSDirs     string
	SSLClientAuth       string
	ListenerClientAuth  string
	SSLProtocols        string
	SSLCipherSuites     string
	SASLMechanisms      string
	SASLCredentialsFile string
	SASLPlainWithoutTLS bool
	OAuthJWKSFile       string
	OAuthJWKSURL        string
	OAuthJWKSRefresh    time.Duration
	OAuthJWKSBackoff    time.Duration
	OAuthJWKSBackoffMax time.Duration
	OAuthJWKSCAFile     string
	OAuthIssuer         string
	OAuthAudience       string
	OAuthSubClaim       string
	OAuthJWKSClockSkew  time.Duration
	OAuthUnsecured      bool
	OAuthPrincipalClaim string
	OAuthScopeClaim     string
	OAuthRequiredScope  string
	OAuthClockSkew      time.Duration
	KerberosKeytab      string
	KerberosService     string
	KerberosRules       string
	MaxReauth           time.Duration
	FailedAuthDelay     time.Duration
	SASLMaxFailures     int
	SASLFailureWindow   time.Duration
	HeartbeatTLS        bool
	DebugPprof          bool
	InterBrokerMech     string
	InterBrokerUser     string
	InterBrokerPassFile string
	InterBrokerKrbName  string
	InterBrokerKrb5Conf string
	SSLPrincipalRules   string
	ListenerMechanisms  string
	TokenSecretKey      string
	TokenMaxLifetime    time.Duration
	TokenExpiryTime     time.Duration
	TokenExpiryCheck    time.Duration
	listenerSpecs       []listenerSpec
	clientAuth          tls.ClientAuthType
	listenerClientAuth  map[string]tls.ClientAuthType // SSL listener -> its own client auth
	listenerTLSDirs     map[string]string             // TLS listener -> its own certificate directory
	tlsPolicy           tlsfiles.Policy
	principalMapping    *tlsfiles.PrincipalMapper
	kerberosRules       *sasl.KerberosRules
	saslMechanisms      []string
	oauthRequiredScope  []string            // OAuthRequiredScope parsed
	oauthAudiences      []string            // OAuthAudience parsed
	oauthServed         bool                // a SASL listener offers OAUTHBEARER
	listenerMechs       map[string][]string // listener -> its own SASL mechanisms
	needTLS, needSASL   bool
}

// listenerSpec is one parsed listener.
type listenerSpec struct {
	Name, Addr, Protocol string
	AdvHost              string
	AdvPort              int32
}

func addSecurityFlags(fs *flag.FlagSet, c *securityConfig) {
	fs.StringVar(&c.Listeners, "listeners", "", "Kafka listeners, NAME://host:port,... (Kafka's listeners); the first is the primary one, which other brokers know this broker by; empty: one PLAINTEXT listener on --kafka-addr")
	fs.StringVar(&c.AdvertisedListeners, "advertised-listeners", "", "addresses advertised to the clients of each listener, NAME://host:port,..., published to the other brokers for their clients of that listener (default per listener: localhost, or the pod DNS name in cluster mode, with the listener's port)")
	fs.StringVar(&c.ListenerProtocolMap, "listener-security-protocol-map", "", "security protocol of each listener, NAME:PROTOCOL,... with PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; a listener named after a protocol speaks it by default")
	fs.StringVar(&c.TLSDir, "tls-dir", "", "directory holding tls.crt, tls.key and ca.crt (a mounted kubernetes.io/tls Secret, e.g. from cert-manager), re-read when they change; needed by SSL and SASL_SSL listeners and --heartbeat-tls")
	fs.StringVar(&c.ListenerTLSDirs, "listener-tls-dir", "", "certificate directories of single SSL or SASL_SSL listeners instead of --tls-dir, NAME=DIR;NAME=... (laid out as --tls-dir, re-read when they change; Kafka's listener.name.<name>.ssl.keystore.location and truststore): an external listener can serve a certificate from a public CA")
	fs.StringVar(&c.SSLClientAuth, "ssl-client-auth", "none", "client certificates on SSL listeners: none, requested (verified if given) or required (Kafka's ssl.client.auth); verified against ca.crt; the principal is User:<subject DN>")
	fs.StringVar(&c.ListenerClientAuth, "listener-ssl-client-auth", "", "client certificates of single SSL listeners instead of --ssl-client-auth, NAME=none|requested|required;NAME=... (Kafka's listener.name.<name>.ssl.client.auth)")
	fs.StringVar(&c.SSLProtocols, "ssl-enabled-protocols", "TLSv1.2,TLSv1.3", "TLS versions served and used towards other brokers: TLSv1.2, TLSv1.3 or both (Kafka's ssl.enabled.protocols)")
	fs.StringVar(&c.SSLCipherSuites, "ssl-cipher-suites", "", "TLS 1.2 cipher suites allowed, by IANA name, comma-separated (Kafka's ssl.cipher.suites); empty: Go's secure defaults. TLS 1.3's suites are not configurable")
	fs.StringVar(&c.SSLPrincipalRules, "ssl-principal-mapping-rules", "DEFAULT", "principal names of client certificates on SSL listeners from their subject DN (Kafka's ssl.principal.mapping.rules): RULE:pattern/replacement/[LU],...,DEFAULT; a certificate no rule applies to is refused")
	fs.StringVar(&c.SASLMechanisms, "sasl-enabled-mechanisms", "SCRAM-SHA-256,SCRAM-SHA-512", "SASL mechanisms served on SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI")
	fs.StringVar(&c.ListenerMechanisms, "listener-sasl-enabled-mechanisms", "", "SASL mechanisms of single listeners instead of --sasl-enabled-mechanisms, NAME=MECH,MECH;NAME=... (Kafka's listener.name.<name>.sasl.enabled.mechanisms)")
	fs.StringVar(&c.SASLCredentialsFile, "sasl-credentials-file", "", "JSON file of salted SCRAM credentials (kaas scram-credential prints entries) for SCRAM and PLAIN, re-read when it changes")
	fs.BoolVar(&c.SASLPlainWithoutTLS, "sasl-plain-without-tls", false, "also offer PLAIN (a clear-text password) on SASL_PLAINTEXT listeners")
	fs.StringVar(&c.OAuthJWKSFile, "sasl-oauthbearer-jwks-file", "", "OAUTHBEARER: JWKS file of the keys that sign tokens, re-read when it changes")
	fs.StringVar(&c.OAuthJWKSURL, "sasl-oauthbearer-jwks-url", "", "OAUTHBEARER: https URL of the JWKS (instead of --sasl-oauthbearer-jwks-file), fetched at start, every --sasl-oauthbearer-jwks-refresh and when a token names a key id it lacks (Kafka's sasl.oauthbearer.jwks.endpoint.url)")
	fs.DurationVar(&c.OAuthJWKSRefresh, "sasl-oauthbearer-jwks-refresh", time.Hour, "OAUTHBEARER: interval between fetches of --sasl-oauthbearer-jwks-url; a failed fetch keeps the last good keys")
	fs.DurationVar(&c.OAuthJWKSBackoff, "sasl-oauthbearer-jwks-retry-backoff", sasl.DefaultJWKSRetryBackoff, "OAUTHBEARER: least wait between fetches of --sasl-oauthbearer-jwks-url for tokens naming an unknown key id; doubled by each that misses (Kafka's sasl.oauthbearer.jwks.endpoint.retry.backoff.ms)")
	fs.DurationVar(&c.OAuthJWKSBackoffMax, "sasl-oauthbearer-jwks-retry-backoff-max", sasl.DefaultJWKSRetryBackoffMax, "OAUTHBEARER: most wait between fetches of --sasl-oauthbearer-jwks-url for tokens naming an unknown key id (Kafka's sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms)")
	fs.StringVar(&c.OAuthJWKSCAFile, "sasl-oauthbearer-jwks-ca-file", "", "OAUTHBEARER: PEM file of the CAs trusted for --sasl-oauthbearer-jwks-url (empty: the system's)")
	fs.StringVar(&c.OAuthIssuer, "sasl-oauthbearer-issuer", "", "OAUTHBEARER: required iss claim (empty: any)")
	fs.StringVar(&c.OAuthAudience, "sasl-oauthbearer-audience", "", "OAUTHBEARER: expected audiences, comma-separated: a token's aud claim must hold one (Kafka's sasl.oauthbearer.expected.audience; empty: any)")
	fs.StringVar(&c.OAuthSubClaim, "sasl-oauthbearer-sub-claim-name", sasl.DefaultPrincipalClaim, "OAUTHBEARER: the claim naming the principal, User:<its value> (Kafka's sasl.oauthbearer.sub.claim.name)")
	fs.DurationVar(&c.OAuthJWKSClockSkew, "sasl-oauthbearer-clock-skew", sasl.DefaultJWKSClockSkew, "OAUTHBEARER: how far a token's exp may lie in the past and its nbf and iat in the future, for clocks that differ from the token issuer's (Kafka's sasl.oauthbearer.clock.skew.seconds)")
	fs.BoolVar(&c.OAuthUnsecured, "sasl-oauthbearer-unsecured", false, "OAUTHBEARER: accept unsigned tokens (alg none) instead of checking them against a JWKS, as Kafka's default OAuthBearerUnsecuredValidatorCallbackHandler does. Any client can claim any principal: for development and tests only")
	fs.StringVar(&c.OAuthPrincipalClaim, "sasl-oauthbearer-unsecured-principal-claim-name", sasl.DefaultPrincipalClaim, "OAUTHBEARER with --sasl-oauthbearer-unsecured: the claim naming the principal (Kafka's unsecuredValidatorPrincipalClaimName)")
	fs.StringVar(&c.OAuthScopeClaim, "sasl-oauthbearer-unsecured-scope-claim-name", sasl.DefaultScopeClaim, "OAUTHBEARER with --sasl-oauthbearer-unsecured: the claim holding the token's scope (Kafka's unsecuredValidatorScopeClaimName)")
	fs.StringVar(&c.OAuthRequiredScope, "sasl-oauthbearer-unsecured-required-scope", "", "OAUTHBEARER with --sasl-oauthbearer-unsecured: space-separated scope items every token's scope must hold (Kafka's unsecuredValidatorRequiredScope); empty: none")
	fs.DurationVar(&c.OAuthClockSkew, "sasl-oauthbearer-unsecured-allowable-clock-skew", 0, "OAUTHBEARER with --sasl-oauthbearer-unsecured: how far exp may lie in the past and iat in the future (Kafka's unsecuredValidatorAllowableClockSkewMs)")
	fs.StringVar(&c.KerberosKeytab, "sasl-kerberos-keytab", "", "GSSAPI: keytab holding the keys of the service principals <service-name>/<host>@REALM of the brokers (a mounted Secret), re-read when it changes")
	fs.StringVar(&c.KerberosService, "sasl-kerberos-service-name", "kafka", "GSSAPI: first component of the service principal clients get tickets for (Kafka's sasl.kerberos.service.name)")
	fs.StringVar(&c.KerberosRules, "sasl-kerberos-principal-to-local-rules", "DEFAULT", "GSSAPI: principal names of Kerberos clients (Kafka's sasl.kerberos.principal.to.local.rules): RULE:[n:format](regex)s/from/to/g/[LU],...,DEFAULT; DEFAULT maps a principal of the keytab's realm to its first component; a principal no rule applies to is refused")
	fs.DurationVar(&c.MaxReauth, "connections-max-reauth", 0, "longest SASL session before the client must re-authenticate on its connection, else it is closed (KIP-368, Kafka's connections.max.reauth.ms); 0: only token expiry ends a session")
	fs.DurationVar(&c.FailedAuthDelay, "connection-failed-authentication-delay", 100*time.Millisecond, "the answer to a failed SASL authentication, and the close of its connection, wait this long (Kafka's connection.failed.authentication.delay.ms); under --connections-max-idle; 0: at once")
	fs.IntVar(&c.SASLMaxFailures, "sasl-max-failures", 10, "failed SASL authentications allowed per client address within --sasl-failure-window before further attempts are refused unchecked; 0: no limit")
	fs.DurationVar(&c.SASLFailureWindow, "sasl-failure-window", time.Minute, "window of --sasl-max-failures")
	fs.BoolVar(&c.HeartbeatTLS, "heartbeat-tls", false, "cluster mode: mutual TLS on the heartbeat gRPC port with --tls-dir (peers must present a certificate signed by ca.crt)")
	fs.BoolVar(&c.DebugPprof, "debug-pprof", false, "serve Go's profiler at /debug/pprof/ on --http-addr")
	fs.StringVar(&c.InterBrokerMech, "inter-broker-sasl-mechanism", sasl.ScramSHA512, "SASL mechanism of the Kafka requests one broker sends another (transaction markers) when the first listener is SASL: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN or GSSAPI (Kafka's sasl.mechanism.inter.broker.protocol)")
	fs.StringVar(&c.InterBrokerKrbName, "inter-broker-kerberos-principal", "", "GSSAPI between brokers: the principal a broker logs in as with the key of --sasl-kerberos-keytab (empty: <service-name>/<its advertised host>, in the keytab's realm)")
	fs.StringVar(&c.InterBrokerKrb5Conf, "inter-broker-krb5-conf", "/etc/krb5.conf", "GSSAPI between brokers: Kerberos configuration (krb5.conf) naming the realm's KDCs")
	fs.StringVar(&c.InterBrokerUser, "inter-broker-sasl-user", "", "SASL user of the Kafka requests one broker sends another when the first listener is SASL; make its principal a super user (or grant it ClusterAction on the cluster)")
	fs.StringVar(&c.TokenSecretKey, "delegation-token-secret-key", "", "secret key of delegation tokens, the same on every broker (Kafka's delegation.token.secret.key; give it as KAAS_DELEGATION_TOKEN_SECRET_KEY from a Secret); empty: tokens disabled")
	fs.DurationVar(&c.TokenMaxLifetime, "delegation-token-max-lifetime", 7*24*time.Hour, "longest a delegation token lives, renewals included (Kafka's delegation.token.max.lifetime.ms)")
	fs.DurationVar(&c.TokenExpiryTime, "delegation-token-expiry-time", 24*time.Hour, "life of a delegation token from its creation or a renewal that names no period (Kafka's delegation.token.expiry.time.ms)")
	fs.DurationVar(&c.TokenExpiryCheck, "delegation-token-expiry-check-interval", time.Hour, "how long an expired delegation token is kept (described; renewing or expiring it answers DELEGATION_TOKEN_EXPIRED) before it is removed (Kafka's delegation.token.expiry.check.interval.ms)")
	fs.StringVar(&c.InterBrokerPassFile, "inter-broker-sasl-password-file", "", "file holding the password of --inter-broker-sasl-user, read at each authentication (a mounted Secret can be rotated)")
}

// validateSecurity parses the listeners; it sets the primary listener's
// advertised address (the one published to other brokers) on c.
func (c *serveConfig) validateSecurity() error {
	s := &c.securityConfig
	if s.Listeners == "" {
		s.listenerSpecs = []listenerSpec{{Name: conn.ProtocolPlaintext, Addr: c.KafkaAddr, Protocol: conn.ProtocolPlaintext, AdvHost: c.advHost, AdvPort: c.advPort}}
		if s.AdvertisedListeners != "" || s.ListenerProtocolMap != "" {
			return errors.New("--advertised-listeners and --listener-security-protocol-map need --listeners")
		}
	} else {
		if c.explicit["kafka-addr"] || c.explicit["advertised-addr"] {
			return errors.New("--listeners replaces --kafka-addr and --advertised-addr: give one or the other")
		}
		specs, err := parseListeners(s.Listeners, s.AdvertisedListeners, s.ListenerProtocolMap, c.defaultAdvertisedHost())
		if err != nil {
			return err
		}
		s.listenerSpecs = specs
		c.KafkaAddr = specs[0].Addr
		c.advHost, c.advPort = specs[0].AdvHost, specs[0].AdvPort
	}
	var err error
	if s.clientAuth, err = parseClientAuth(s.SSLClientAuth); err != nil {
		return fmt.Errorf("--ssl-client-auth: %w", err)
	}
	if s.tlsPolicy, err = tlsfiles.ParsePolicy(s.SSLProtocols, s.SSLCipherSuites); err != nil {
		return fmt.Errorf("--ssl-enabled-protocols, --ssl-cipher-suites: %w", err)
	}
	isTLS := func(l listenerSpec) bool { return l.Protocol == conn.ProtocolSSL || l.Protocol == conn.ProtocolSASLSSL }
	isSSL := func(l listenerSpec) bool { return l.Protocol == conn.ProtocolSSL }
	if s.listenerTLSDirs, err = parseListenerValues("--listener-tls-dir", s.ListenerTLSDirs, "an SSL or SASL_SSL", s.listenerSpecs, isTLS,
		func(dir string) (string, error) { return dir, nil }); err != nil {
		return err
	}
	if s.listenerClientAuth, err = parseListenerValues("--listener-ssl-client-auth", s.ListenerClientAuth, "an SSL", s.listenerSpecs, isSSL, parseClientAuth); err != nil {
		return err
	}
	s.principalMapping = nil
	if strings.TrimSpace(s.SSLPrincipalRules) != "DEFAULT" {
		m, err := tlsfiles.ParsePrincipalMappingRules(s.SSLPrincipalRules)
		if err != nil {
			return fmt.Errorf("--ssl-principal-mapping-rules: %w", err)
		}
		s.principalMapping = m
	}
	kerberosRules, rulesErr := sasl.ParseKerberosRules(s.KerberosRules)
	if rulesErr != nil {
		return fmt.Errorf("--sasl-kerberos-principal-to-local-rules: %w", rulesErr)
	}
	s.kerberosRules = kerberosRules
	for _, l := range s.listenerSpecs {
		_, own := s.listenerTLSDirs[l.Name]
		s.needTLS = s.needTLS || isTLS(l) && !own
		s.needSASL = s.needSASL || l.Protocol == conn.ProtocolSASLPlaintext || l.Protocol == conn.ProtocolSASLSSL
	}
	if (s.needTLS || s.HeartbeatTLS) && s.TLSDir == "" {
		return errors.New("SSL and SASL_SSL listeners without a --listener-tls-dir, and --heartbeat-tls, need --tls-dir")
	}
	if s.saslMechanisms, err = parseMechanisms("--sasl-enabled-mechanisms", s.SASLMechanisms); err != nil {
		return err
	}
	if s.listenerMechs, err = parseListenerMechanisms(s.ListenerMechanisms, s.listenerSpecs); err != nil {
		return err
	}
	if s.needSASL {
		used := map[string]bool{}
		for _, l := range s.listenerSpecs {
			if l.Protocol != conn.ProtocolSASLPlaintext && l.Protocol != conn.ProtocolSASLSSL {
				continue
			}
			mechs, ok := s.listenerMechs[l.Name]
			if !ok {
				mechs = s.saslMechanisms
			}
			if len(mechs) == 0 {
				return fmt.Errorf("SASL listener %s has no mechanism: set --sasl-enabled-mechanisms", l.Name)
			}
			for _, m := range mechs {
				used[m] = true
			}
		}
		s.oauthServed = used[sasl.OAuthBearer]
		for _, m := range slices.Sorted(maps.Keys(used)) {
			if m == sasl.OAuthBearer && s.OAuthJWKSFile == "" && s.OAuthJWKSURL == "" && !s.OAuthUnsecured {
				return errors.New("OAUTHBEARER needs --sasl-oauthbearer-jwks-file, --sasl-oauthbearer-jwks-url or (for development) --sasl-oauthbearer-unsecured")
			}
			if m == sasl.GSSAPI && (s.KerberosKeytab == "" || s.KerberosService == "") {
				return errors.New("GSSAPI needs --sasl-kerberos-keytab and --sasl-kerberos-service-name")
			}
			// In cluster mode SCRAM users can come from KafkaUser objects alone.
			if m != sasl.OAuthBearer && m != sasl.GSSAPI && s.SASLCredentialsFile == "" && (m == sasl.Plain || !c.clusterMode()) {
				return fmt.Errorf("%s needs --sasl-credentials-file", m)
			}
		}
	}
	if s.OAuthJWKSFile != "" && s.OAuthJWKSURL != "" {
		return errors.New("--sasl-oauthbearer-jwks-file and --sasl-oauthbearer-jwks-url: give one")
	}
	if err := c.validateUnsecuredOAuth(); err != nil {
		return err
	}
	if s.OAuthJWKSURL != "" && (!strings.HasPrefix(s.OAuthJWKSURL, "https://") || s.OAuthJWKSRefresh <= 0) {
		return errors.New("--sasl-oauthbearer-jwks-url must be https:// and --sasl-oauthbearer-jwks-refresh positive")
	}
	if s.OAuthJWKSBackoff <= 0 || s.OAuthJWKSBackoffMax < s.OAuthJWKSBackoff {
		return errors.New("--sasl-oauthbearer-jwks-retry-backoff must be positive and --sasl-oauthbearer-jwks-retry-backoff-max not below it")
	}
	if err := s.validateInterBroker(); err != nil {
		return err
	}
	if s.MaxReauth < 0 || s.SASLMaxFailures < 0 || s.SASLFailureWindow <= 0 {
		return errors.New("--connections-max-reauth and --sasl-max-failures must not be negative, --sasl-failure-window must be positive")
	}
	return nil
}

// jwksFlags are the flags of OAUTHBEARER tokens checked against a JWKS.
var jwksFlags = []string{"sasl-oauthbearer-jwks-file", "sasl-oauthbearer-jwks-url", "sasl-oauthbearer-jwks-refresh",
	"sasl-oauthbearer-jwks-retry-backoff", "sasl-oauthbearer-jwks-retry-backoff-max", "sasl-oauthbearer-jwks-ca-file",
	"sasl-oauthbearer-issuer", "sasl-oauthbearer-audience", "sasl-oauthbearer-sub-claim-name", "sasl-oauthbearer-clock-skew"}

// unsecuredFlags are the options of --sasl-oauthbearer-unsecured.
var unsecuredFlags = []string{"sasl-oauthbearer-unsecured-principal-claim-name", "sasl-oauthbearer-unsecured-scope-claim-name",
	"sasl-oauthbearer-unsecured-required-scope", "sasl-oauthbearer-unsecured-allowable-clock-skew"}

// validateUnsecuredOAuth checks --sasl-oauthbearer-unsecured and its
// options: never with a JWKS flag (a broker checks tokens one way; an
// issuer or audience would not be checked), the options only with it.
func (c *serveConfig) validateUnsecuredOAuth() error {
	s := &c.securityConfig
	if !s.OAuthUnsecured {
		for _, f := range unsecuredFlags {
			if c.explicit[f] {
				return fmt.Errorf("--%s needs --sasl-oauthbearer-unsecured", f)
			}
		}
		return s.validateJWKSOAuth()
	}
	for _, f := range jwksFlags {
		if c.explicit[f] {
			return fmt.Errorf("--sasl-oauthbearer-unsecured and --%s: give one (unsigned tokens are not checked against a JWKS, an issuer or an audience)", f)
		}
	}
	if strings.TrimSpace(s.OAuthPrincipalClaim) == "" || strings.TrimSpace(s.OAuthScopeClaim) == "" {
		return errors.New("--sasl-oauthbearer-unsecured-principal-claim-name and --sasl-oauthbearer-unsecured-scope-claim-name must not be empty")
	}
	if s.OAuthClockSkew < 0 {
		return errors.New("--sasl-oauthbearer-unsecured-allowable-clock-skew must not be negative")
	}
	scope, err := sasl.ParseScope(s.OAuthRequiredScope)
	if err != nil {
		return fmt.Errorf("--sasl-oauthbearer-unsecured-required-scope: %w", err)
	}
	s.oauthRequiredScope = scope
	return nil
}

// validateJWKSOAuth checks the options of tokens checked against a JWKS.
func (s *securityConfig) validateJWKSOAuth() error {
	if strings.TrimSpace(s.OAuthSubClaim) == "" {
		return errors.New("--sasl-oauthbearer-sub-claim-name must not be empty")
	}
	if s.OAuthJWKSClockSkew < 0 {
		return errors.New("--sasl-oauthbearer-clock-skew must not be negative")
	}
	s.oauthAudiences = nil
	for _, a := range strings.Split(s.OAuthAudience, ",") {
		if a = strings.TrimSpace(a); a != "" {
			s.oauthAudiences = append(s.oauthAudiences, a)
		}
	}
	return nil
}

// validateInterBroker checks the credentials brokers use towards each other.
func (s *securityConfig) validateInterBroker() error {
	gssapi := s.InterBrokerMech == sasl.GSSAPI
	switch s.InterBrokerMech {
	case sasl.ScramSHA256, sasl.ScramSHA512, sasl.Plain:
	case sasl.GSSAPI:
		if s.InterBrokerUser != "" || s.InterBrokerPassFile != "" {
			return errors.New("--inter-broker-sasl-mechanism GSSAPI logs in with --sasl-kerberos-keytab (and --inter-broker-kerberos-principal), not --inter-broker-sasl-user")
		}
		if s.KerberosKeytab == "" || s.InterBrokerKrb5Conf == "" {
			return errors.New("--inter-broker-sasl-mechanism GSSAPI needs --sasl-kerberos-keytab and --inter-broker-krb5-conf")
		}
	default:
		return fmt.Errorf("--inter-broker-sasl-mechanism %q: want SCRAM-SHA-256, SCRAM-SHA-512, PLAIN or GSSAPI", s.InterBrokerMech)
	}
	if (s.InterBrokerUser == "") != (s.InterBrokerPassFile == "") {
		return errors.New("--inter-broker-sasl-user and --inter-broker-sasl-password-file go together")
	}
	if (s.InterBrokerUser != "" || gssapi) && len(s.listenerSpecs) > 0 {
		mechs, ok := s.listenerMechs[s.listenerSpecs[0].Name]
		if !ok {
			mechs = s.saslMechanisms
		}
		if !slices.Contains(mechs, s.InterBrokerMech) {
			return fmt.Errorf("--inter-broker-sasl-mechanism %s is not in --sasl-enabled-mechanisms (of the first listener)", s.InterBrokerMech)
		}
	}
	return nil
}

// parseClientAuth reads Kafka's ssl.client.auth.
func parseClientAuth(v string) (tls.ClientAuthType, error) {
	switch strings.TrimSpace(v) {
	case "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("%q: want none, requested or required", v)
}

// parseListenerValues parses NAME=VALUE;NAME=... of a per-listener flag:
// each name must be a listener that fits (kind says which), given once,
// and each value must parse.
func parseListenerValues[V any](flagName, v, kind string, listeners []listenerSpec, fits func(listenerSpec) bool, parse func(string) (V, error)) (map[string]V, error) {
	out := map[string]V{}
	for _, item := range strings.Split(v, ";") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		name, value, ok := strings.Cut(item, "=")
		name, value = strings.ToUpper(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return nil, fmt.Errorf("%s: %q is not NAME=VALUE", flagName, item)
		}
		i := slices.IndexFunc(listeners, func(l listenerSpec) bool { return l.Name == name })
		if i < 0 || !fits(listeners[i]) {
			return nil, fmt.Errorf("%s: %s is not %s listener of --listeners", flagName, name, kind)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s: listener %s given twice", flagName, name)
		}
		parsed, err := parse(value)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flagName, name, err)
		}
		out[name] = parsed
	}
	return out, nil
}

// parseMechanisms parses a comma-separated list of SASL mechanisms.
func parseMechanisms(flagName, v string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(v, ",") {
		m = strings.TrimSpace(m)
		if m == "" {
			continue
		}
		if !slices.Contains(sasl.Supported(), m) {
			return nil, fmt.Errorf("%s: unknown mechanism %q (served: %s)", flagName, m, strings.Join(sasl.Supported(), ", "))
		}
		out = append(out, m)
	}
	return out, nil
}

// parseListenerMechanisms parses NAME=MECH,MECH;NAME=...; each name must be
// a SASL listener.
func parseListenerMechanisms(v string, listeners []listenerSpec) (map[string][]string, error) {
	const flagName = "--listener-sasl-enabled-mechanisms"
	isSASL := func(l listenerSpec) bool {
		return l.Protocol == conn.ProtocolSASLPlaintext || l.Protocol == conn.ProtocolSASLSSL
	}
	return parseListenerValues(flagName, v, "a SASL", listeners, isSASL, func(list string) ([]string, error) {
		mechs, err := parseMechanisms(flagName, list)
		if err == nil && len(mechs) == 0 {
			err = errors.New("no mechanism")
		}
		return mechs, err
	})
}

// defaultAdvertisedHost is the host a listener without an advertised
// address advertises.
func (c *serveConfig) defaultAdvertisedHost() string {
	if c.clusterMode() {
		return c.podName + "." + c.Service + "." + c.podNamespace + ".svc"
	}
	return "localhost"
}

var protocols = []string{conn.ProtocolPlaintext, conn.ProtocolSSL, conn.ProtocolSASLPlaintext, conn.ProtocolSASLSSL}

// parseListeners parses Kafka's listeners, advertised.listeners and
// listener.security.protocol.map forms.
func parseListeners(listeners, advertised, protoMap, defaultHost string) ([]listenerSpec, error) {
	ls, err := routing.ParseEndpoints(listeners)
	if err != nil {
		return nil, fmt.Errorf("--listeners: %w", err)
	}
	as, err := routing.ParseEndpoints(advertised)
	if err != nil {
		return nil, fmt.Errorf("--advertised-listeners: %w", err)
	}
	adv := map[string]routing.Endpoint{}
	for _, a := range as {
		adv[a.Name] = a
	}
	proto := map[string]string{}
	if protoMap != "" {
		for _, item := range strings.Split(protoMap, ",") {
			name, p, ok := strings.Cut(strings.TrimSpace(item), ":")
			if !ok {
				return nil, fmt.Errorf("--listener-security-protocol-map: %q is not NAME:PROTOCOL", item)
			}
			proto[strings.ToUpper(name)] = strings.ToUpper(p)
		}
	}
	var out []listenerSpec
	for _, l := range ls {
		name := l.Name
		p, ok := proto[name]
		if !ok {
			p = name
		}
		valid := false
		for _, k := range protocols {
			valid = valid || k == p
		}
		if !valid {
			return nil, fmt.Errorf("listener %s: security protocol %q: want one of %s (map it with --listener-security-protocol-map)", name, p, strings.Join(protocols, ", "))
		}
		a, ok := adv[name]
		if !ok {
			a = routing.Endpoint{Name: name, Host: defaultHost, Port: l.Port}
		}
		delete(adv, name)
		if a.Host == "" || a.Port <= 0 {
			return nil, fmt.Errorf("listener %s: advertised address %q: want host:port", name, net.JoinHostPort(a.Host, strconv.Itoa(int(a.Port))))
		}
		out = append(out, listenerSpec{Name: name, Addr: net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))), Protocol: p, AdvHost: a.Host, AdvPort: a.Port})
	}
	for name := range adv {
		return nil, fmt.Errorf("--advertised-listeners names %s, which --listeners does not", name)
	}
	return out, nil
}

// security is what the listeners need at run time.
type security struct {
	tlsDir *tlsfiles.Dir // --tls-dir
	// listenerTLS are the listeners' own certificate directories
	// (--listener-tls-dir).
	listenerTLS map[string]*tlsfiles.Dir
	sasl        *sasl.Server
	jwksURL     *sasl.TokenValidator // the validator of --sasl-oauthbearer-jwks-url, refreshed on a schedule
	creds       *sasl.FileStore      // --sasl-credentials-file
	limiter     *sasl.Limiter
	// tokens are the delegation tokens (on the shared volume with a data
	// dir, else in memory) and tokenCfg their settings.
	tokens   *delegation.Store
	tokenCfg delegation.Config
	settings []*conn.Listener
}

// openSecurity loads the TLS directory, credentials and JWKS, and builds
// the conn listeners.
func openSecurity(cfg *serveConfig, log zerolog.Logger) (*security, error) {
	s := &cfg.securityConfig
	out := &security{limiter: sasl.NewLimiter(s.SASLMaxFailures, s.SASLFailureWindow), tokens: delegation.NewMemory(),
		tokenCfg: delegation.Config{SecretKey: []byte(s.TokenSecretKey), MaxLifetime: s.TokenMaxLifetime, RenewTime: s.TokenExpiryTime}}
	out.tokenCfg.Defaults()
	if cfg.DataDir != "" {
		out.tokens = delegation.NewFile(filepath.Join(cfg.DataDir, clusterDir))
	}
	out.tokens.Sweep = s.TokenExpiryCheck
	openDir := func(flagName, path string, log zerolog.Logger) (*tlsfiles.Dir, error) {
		d, err := tlsfiles.Open(path, time.Now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		d.Policy = s.tlsPolicy
		d.OnReload = logReloads(log.With().Str("tls_dir", path).Logger(),
			"TLS files changed but do not load; serving the previous certificate", "TLS certificate reloaded")
		return d, nil
	}
	if s.TLSDir != "" {
		d, err := openDir("--tls-dir", s.TLSDir, log)
		if err != nil {
			return nil, err
		}
		out.tlsDir = d
	}
	out.listenerTLS = map[string]*tlsfiles.Dir{}
	for name, path := range s.listenerTLSDirs {
		d, err := openDir("--listener-tls-dir "+name, path, log.With().Str("listener", name).Logger())
		if err != nil {
			return nil, err
		}
		out.listenerTLS[name] = d
	}
	if s.needSASL {
		srv := &sasl.Server{Mechanisms: s.saslMechanisms, Now: time.Now} // listeners with their own list get a copy
		if out.tokenCfg.Enabled() {
			srv.DelegationTokens = delegation.SASL{Store: out.tokens, Now: time.Now}
		}
		if s.SASLCredentialsFile != "" {
			f, err := sasl.OpenFile(s.SASLCredentialsFile, time.Now)
			if err != nil {
				return nil, fmt.Errorf("--sasl-credentials-file: %w", err)
			}
			f.OnReload = logReloads(log, "SASL credentials file changed but does not load; keeping the previous credentials", "SASL credentials reloaded")
			srv.Credentials, out.creds = f, f
		}
		if s.OAuthJWKSFile != "" {
			v, err := sasl.NewTokenValidator(s.OAuthJWKSFile, s.OAuthIssuer, s.oauthAudiences, time.Now)
			if err != nil {
				return nil, fmt.Errorf("--sasl-oauthbearer-jwks-file: %w", err)
			}
			v.PrincipalClaim, v.ClockSkew = s.OAuthSubClaim, s.OAuthJWKSClockSkew
			srv.Tokens = v
		}
		if s.OAuthUnsecured {
			v, err := sasl.NewUnsecuredValidator(s.OAuthPrincipalClaim, s.OAuthScopeClaim, s.oauthRequiredScope, s.OAuthClockSkew, time.Now)
			if err != nil {
				return nil, fmt.Errorf("--sasl-oauthbearer-unsecured: %w", err)
			}
			srv.Tokens = v
			if s.oauthServed {
				log.Warn().Str("mechanism", sasl.OAuthBearer).Str("validator", "unsecured").Str("principal_claim", v.PrincipalClaim).
					Strs("required_scope", v.RequiredScope).Dur("allowable_clock_skew", v.ClockSkew).
					Msg("OAUTHBEARER accepts unsigned tokens (--sasl-oauthbearer-unsecured): any client can claim any principal; for development and tests only")
			}
		}
		if s.KerberosKeytab != "" {
			k, err := sasl.OpenKeytab(s.KerberosKeytab, s.KerberosService, s.kerberosRules, time.Now)
			if err != nil {
				return nil, fmt.Errorf("--sasl-kerberos-keytab: %w", err)
			}
			k.OnReload = logReloads(log.With().Str("keytab", s.KerberosKeytab).Logger(),
				"Kerberos keytab changed but does not load; keeping the previous keys", "Kerberos keytab reloaded")
			srv.Keytab = k
		}
		if s.OAuthJWKSURL != "" {
			client, err := jwksClient(s.OAuthJWKSCAFile)
			if err != nil {
				return nil, err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			v, err := sasl.NewURLTokenValidator(ctx, s.OAuthJWKSURL, client, s.OAuthIssuer, s.oauthAudiences, time.Now)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("--sasl-oauthbearer-jwks-url: %w", err)
			}
			v.PrincipalClaim, v.ClockSkew = s.OAuthSubClaim, s.OAuthJWKSClockSkew
			v.RetryBackoff, v.RetryBackoffMax = s.OAuthJWKSBackoff, s.OAuthJWKSBackoffMax
			v.OnKeyFetch = logKeyFetches(log.With().Str("jwks_url", s.OAuthJWKSURL).Logger())
			srv.Tokens, out.jwksURL = v, v
		}
		out.sasl = srv
	}
	for _, l := range s.listenerSpecs {
		cl := &conn.Listener{Name: l.Name, SecurityProtocol: l.Protocol, MaxReauth: s.MaxReauth, FailedAuthDelay: s.FailedAuthDelay, AllowPlainWithoutTLS: s.SASLPlainWithoutTLS}
		if len(s.listenerSpecs) > 1 && l.Name != s.listenerSpecs[0].Name {
			cl.AdvertisedHost, cl.AdvertisedPort = l.AdvHost, l.AdvPort
		}
		switch l.Protocol {
		case conn.ProtocolSSL:
			auth, ok := s.listenerClientAuth[l.Name]
			if !ok {
				auth = s.clientAuth
			}
			cl.TLS = out.listenerDir(l.Name).ServerConfig(auth)
			cl.PrincipalMapping = s.principalMapping
		case conn.ProtocolSASLSSL:
			cl.TLS = out.listenerDir(l.Name).ServerConfig(tls.NoClientCert)
		}
		if l.Protocol == conn.ProtocolSASLPlaintext || l.Protocol == conn.ProtocolSASLSSL {
			cl.SASL = out.sasl
			if mechs, ok := s.listenerMechs[l.Name]; ok {
				own := *out.sasl
				own.Mechanisms = mechs
				cl.SASL = &own
			}
		}
		out.settings = append(out.settings, cl)
	}
	return out, nil
}

// listenerDir is the certificate directory a TLS listener serves: its own
// (--listener-tls-dir), else --tls-dir.
func (s *security) listenerDir(name string) *tlsfiles.Dir {
	if d, ok := s.listenerTLS[name]; ok {
		return d
	}
	return s.tlsDir
}

// logReloads logs the reloads of a watched file: failed ones (the
// previous content stays in use) as errors.
func logReloads(log zerolog.Logger, failed, reloaded string) func(error) {
	return func(err error) {
		if err != nil {
			log.Error().Err(err).Msg(failed)
			return
		}
		log.Info().Msg(reloaded)
	}
}

// logKeyFetches logs the fetches of the JWKS URL that tokens naming an
// unknown key id cause.
func logKeyFetches(log zerolog.Logger) func(kid string, found bool, err error) {
	return func(kid string, found bool, err error) {
		switch {
		case err != nil:
			log.Error().Err(err).Str("kid", kid).Msg("JWKS fetch for an unknown key id failed; keeping the previous keys")
		case found:
			log.Info().Str("kid", kid).Msg("JWKS fetched for an unknown key id: the key is in it")
		default:
			log.Warn().Str("kid", kid).Msg("JWKS fetched for an unknown key id: the key is not in it")
		}
	}
}

// startScramUsers picks the store of SCRAM credentials that SASL logins
// read and the credential APIs (keys 50, 51) write: in cluster mode with a
// SASL listener, KafkaUser objects (watched until ctx ends; it returns once
// the first list is in) over the credentials file; otherwise the
// credentials file. Nil (no SASL in the cluster, no file) leaves the APIs
// answering SECURITY_DISABLED.
func (b *broker) startScramUsers(ctx context.Context, cfg *serveConfig, dyn dynamic.Interface) (sasl.UserStore, error) {
	var store sasl.UserStore
	switch {
	case cfg.clusterMode() && cfg.needSASL:
		users := &cluster.Users{Dyn: dyn, Namespace: cfg.podNamespace, Log: b.logger("component", "scram-users")}
		if err := users.Watch(ctx); err != nil {
			return nil, err
		}
		store = users
		if b.sec.creds != nil {
			store = &sasl.Overlay{Store: users, Base: b.sec.creds, BaseContent: b.sec.creds.Content}
		}
	case b.sec.creds != nil:
		store = b.sec.creds
	default:
		return nil, nil
	}
	for _, l := range b.sec.settings {
		if l.SASL != nil {
			l.SASL.Credentials = store
		}
	}
	return store, nil
}

// jwksClient is the HTTP client of the JWKS URL: the CAs of caFile, or
// the system's.
func jwksClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--sasl-oauthbearer-jwks-ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("--sasl-oauthbearer-jwks-ca-file %s: no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, nil
}

// refreshJWKS fetches the OAUTHBEARER JWKS URL every interval until ctx
// ends (nothing without a URL); failures are logged, the last keys kept.
func (s *security) refreshJWKS(ctx context.Context, cfg *serveConfig, log zerolog.Logger) {
	if s.jwksURL == nil {
		return
	}
	t := time.NewTicker(cfg.OAuthJWKSRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.jwksURL.Refresh(ctx); err != nil {
			log.Error().Err(err).Msg("JWKS refresh failed; keeping the previous keys")
		}
	}
}

// heartbeatServerOptions are the heartbeat gRPC server's credentials.
func (s *security) heartbeatServerOptions(cfg *serveConfig) []grpc.ServerOption {
	if !cfg.HeartbeatTLS {
		return nil
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(s.tlsDir.ServerConfig(tls.RequireAndVerifyClientCert)))}
}

// heartbeatDialOptions are the heartbeat client's credentials: the peer is
// verified against ca.crt, not by host name.
func (s *security) heartbeatDialOptions(cfg *serveConfig) []grpc.DialOption {
	if !cfg.HeartbeatTLS {
		return nil
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(s.tlsDir.ClientConfig("")))}
}

// interBrokerClientOpts configure the Kafka clients a broker opens to
// another broker's published address (the first listener): TLS verified
// against the ca.crt of that listener's certificate directory, presenting
// this broker's certificate from it, and SASL with the inter-broker user. Without that user on a SASL listener the requests go
// unauthenticated and the peer closes them.
func (s *security) interBrokerClientOpts(cfg *serveConfig) []kgo.Opt {
	if len(cfg.listenerSpecs) == 0 {
		return nil
	}
	var opts []kgo.Opt
	switch cfg.listenerSpecs[0].Protocol {
	case conn.ProtocolSSL, conn.ProtocolSASLSSL:
		opts = append(opts, kgo.DialTLSConfig(s.listenerDir(cfg.listenerSpecs[0].Name).ClientConfig("")))
	}
	switch cfg.listenerSpecs[0].Protocol {
	case conn.ProtocolSASLPlaintext, conn.ProtocolSASLSSL:
		switch {
		case cfg.InterBrokerMech == sasl.GSSAPI:
			principal := cfg.InterBrokerKrbName
			if principal == "" {
				principal = cfg.KerberosService + "/" + cfg.advHost
			}
			opts = append(opts, kgo.SASL(interBrokerKerberos(cfg.KerberosKeytab, cfg.InterBrokerKrb5Conf, principal, cfg.KerberosService)))
		case cfg.InterBrokerUser != "":
			opts = append(opts, kgo.SASL(interBrokerMechanism(cfg.InterBrokerMech, cfg.InterBrokerUser, cfg.InterBrokerPassFile)))
		}
	}
	return opts
}

// interBrokerMechanism authenticates as user with the password read from
// passFile at each authentication.
func interBrokerMechanism(mech, user, passFile string) ksasl.Mechanism {
	password := func() (string, error) {
		b, err := os.ReadFile(passFile)
		if err != nil {
			return "", fmt.Errorf("--inter-broker-sasl-password-file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	switch mech {
	case sasl.Plain:
		return plain.Plain(func(context.Context) (plain.Auth, error) {
			p, err := password()
			return plain.Auth{User: user, Pass: p}, err
		})
	case sasl.ScramSHA256:
		return scram.Sha256(func(context.Context) (scram.Auth, error) {
			p, err := password()
			return scram.Auth{User: user, Pass: p}, err
		})
	default:
		return scram.Sha512(func(context.Context) (scram.Auth, error) {
			p, err := password()
			return scram.Auth{User: user, Pass: p}, err
		})
	}
}

// interBrokerKerberos logs in as principal ("name[/host][@REALM]", the
// keytab's realm by default) with its key in keytabPath and asks the KDCs
// of krb5Conf for tickets to service/<peer host>. Both files are read at
// each authentication, so a rotated keytab needs no restart; this runs on
// the Kafka client's goroutines, never in an actor.
func interBrokerKerberos(keytabPath, krb5Conf, principal, service string) ksasl.Mechanism {
	return kerberos.Kerberos(func(context.Context) (kerberos.Auth, error) {
		kt, err := keytab.Load(keytabPath)
		if err != nil {
			return kerberos.Auth{}, fmt.Errorf("--sasl-kerberos-keytab: %w", err)
		}
		conf, err := krbconfig.Load(krb5Conf)
		if err != nil {
			return kerberos.Auth{}, fmt.Errorf("--inter-broker-krb5-conf: %w", err)
		}
		name, realm, ok := strings.Cut(principal, "@")
		if !ok {
			if len(kt.Entries) == 0 {
				return kerberos.Auth{}, fmt.Errorf("--sasl-kerberos-keytab %s holds no key", keytabPath)
			}
			realm = kt.Entries[0].Principal.Realm
		}
		// A new client for each session: franz-go destroys it after.
		cl := krbclient.NewWithKeytab(name, realm, kt, conf, krbclient.DisablePAFXFAST(true))
		return kerberos.Auth{Client: cl, Service: service}, nil
	})
}

// advertisedListenersString is the advertised.listeners DescribeConfigs reports.
func (s *securityConfig) advertisedListenersString() string {
	return routing.JoinEndpoints(s.advertisedEndpoints(s.listenerSpecs))
}

// publishedListeners is what this broker publishes of its listeners besides
// the primary one (routing.Broker.Listeners): their advertised addresses,
// which the other brokers give their clients on those listeners.
func (s *securityConfig) publishedListeners() string {
	if len(s.listenerSpecs) < 2 {
		return ""
	}
	return routing.JoinEndpoints(s.advertisedEndpoints(s.listenerSpecs[1:]))
}

func (s *securityConfig) advertisedEndpoints(specs []listenerSpec) []routing.Endpoint {
	eps := make([]routing.Endpoint, len(specs))
	for i, l := range specs {
		eps[i] = routing.Endpoint{Name: l.Name, Host: l.AdvHost, Port: l.AdvPort}
	}
	return eps
}

// listen binds every Kafka listener.
func (b *broker) listen(cfg *serveConfig) error {
	for i, l := range cfg.listenerSpecs {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			b.closeKafkaListeners()
			if len(cfg.listenerSpecs) == 1 && cfg.Listeners == "" {
				return fmt.Errorf("listen on --kafka-addr %s: %w", l.Addr, err)
			}
			return fmt.Errorf("listen on listener %s (%s): %w", l.Name, l.Addr, err)
		}
		if i == 0 {
			b.kafkaLn = ln
		} else {
			b.extraLns = append(b.extraLns, ln)
		}
	}
	return nil
}

func (b *broker) closeKafkaListeners() {
	if b.kafkaLn != nil {
		_ = b.kafkaLn.Close()
	}
	for _, ln := range b.extraLns {
		_ = ln.Close()
	}
}
