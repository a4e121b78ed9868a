// Package kafkacli holds kaas's versions of Apache Kafka's command-line admin
// tools (kafka-topics.sh, kafka-consumer-groups.sh, kafka-configs.sh,
// kafka-acls.sh): the same flags and the same output, spoken over the Kafka
// protocol to any broker, so an operator's runbook works without a JVM in
// the pod. Each tool is one file; this one is the connection every tool
// shares (--bootstrap-server and --command-config).
package kafkacli

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Conn is where a tool connects: the flags every tool takes.
type Conn struct {
	Bootstrap     string
	CommandConfig string
}

// Register adds --bootstrap-server and --command-config to fs.
func (c *Conn) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Bootstrap, "bootstrap-server", "", "REQUIRED: the broker(s) to connect to, comma-separated host:port")
	fs.StringVar(&c.CommandConfig, "command-config", "", "a client properties file (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location, ...)")
}

// Client connects: a franz-go client and its admin client over it. The
// caller closes the admin client (which closes the client).
func (c *Conn) Client(extra ...kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	if c.Bootstrap == "" {
		return nil, nil, errors.New("missing required argument --bootstrap-server")
	}
	opts := []kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap, ",")...), kgo.RetryTimeout(30 * time.Second)}
	if c.CommandConfig != "" {
		props, err := ReadProperties(c.CommandConfig)
		if err != nil {
			return nil, nil, err
		}
		sec, err := SecurityOpts(props)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.CommandConfig, err)
		}
		opts = append(opts, sec...)
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", c.Bootstrap, err)
	}
	return cl, kadm.NewClient(cl), nil
}

// ReadProperties reads a Java properties file as Kafka's tools read
// --command-config: key=value or key: value lines, # and ! comments, a
// trailing backslash continuing a line.
func ReadProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read command config: %w", err)
	}
	defer f.Close()
	props, err := parseProperties(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

func parseProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	var pending string
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending == "" && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			pending += strings.TrimSuffix(line, `\`)
			continue
		}
		line, pending = pending+line, ""
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[strings.TrimSpace(line)] = ""
			continue
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return props, nil
}

// jaasOption finds key="value" in a sasl.jaas.config line.
var jaasOption = regexp.MustCompile(`(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"`)

// SecurityOpts turns the security settings of Kafka's client properties
// (and librdkafka's names for the same, which kcat users keep) into client
// options: security.protocol, sasl.mechanism with sasl.jaas.config or
// sasl.username/sasl.password, and PEM trust and key material.
func SecurityOpts(props map[string]string) ([]kgo.Opt, error) {
	proto := strings.ToUpper(props["security.protocol"])
	if proto == "" {
		proto = "PLAINTEXT"
	}
	var opts []kgo.Opt
	switch proto {
	case "PLAINTEXT":
	case "SSL", "SASL_SSL":
		tc, err := tlsConfig(props)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	case "SASL_PLAINTEXT":
	default:
		return nil, fmt.Errorf("security.protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", props["security.protocol"])
	}
	if strings.HasPrefix(proto, "SASL_") {
		user, pass := props["sasl.username"], props["sasl.password"]
		for _, m := range jaasOption.FindAllStringSubmatch(props["sasl.jaas.config"], -1) {
			v := strings.ReplaceAll(strings.ReplaceAll(m[2], `\"`, `"`), `\\`, `\`)
			switch m[1] {
			case "username":
				user = v
			case "password":
				pass = v
			}
		}
		mech := strings.ToUpper(props["sasl.mechanism"])
		if mech == "" {
			mech = "GSSAPI" // Kafka's default
		}
		switch mech {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism()))
		default:
			return nil, fmt.Errorf("sasl.mechanism %s: kaas's tools log in with PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
		}
		if user == "" {
			return nil, fmt.Errorf("sasl.mechanism %s needs a username: sasl.jaas.config with username=\"...\" password=\"...\", or sasl.username and sasl.password", mech)
		}
	}
	return opts, nil
}

// tlsConfig builds the client side of TLS from PEM files: Java's PEM
// truststore and keystore (KIP-651) or librdkafka's ssl.ca.location,
// ssl.certificate.location and ssl.key.location. JKS and PKCS12 stores are
// Java formats these tools do not read.
func tlsConfig(props map[string]string) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	for _, k := range []string{"ssl.truststore.type", "ssl.keystore.type"} {
		if t := props[k]; t != "" && !strings.EqualFold(t, "PEM") {
			return nil, fmt.Errorf("%s %s: only PEM files are read (convert with keytool and openssl)", k, t)
		}
	}
	if ca := first(props, "ssl.truststore.location", "ssl.ca.location"); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("trust store: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("trust store %s: no PEM certificate in it", ca)
		}
		tc.RootCAs = pool
	}
	certFile := first(props, "ssl.certificate.location", "ssl.keystore.location")
	keyFile := first(props, "ssl.key.location", "ssl.keystore.location")
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	// Java's ssl.endpoint.identification.algorithm set empty turns host
	// name checks off; librdkafka's is "none".
	if alg, set := props["ssl.endpoint.identification.algorithm"]; set && (alg == "" || strings.EqualFold(alg, "none")) {
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = verifyChainOnly(tc)
	}
	return tc, nil
}

// verifyChainOnly checks the server's chain against the trusted roots
// without checking its name, as Java does with endpoint identification off.
func verifyChainOnly(tc *tls.Config) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, c := range cs.PeerCertificates[1:] {
			inter.AddCert(c)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: tc.RootCAs, Intermediates: inter})
		return err
	}
}

func first(props map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := props[k]; v != "" {
			return v
		}
	}
	return ""
}

// Repeated is a flag that may be given many times (--config a=1 --config b=2).
type Repeated []string

func (r *Repeated) String() string     { return strings.Join(*r, ",") }
func (r *Repeated) Set(v string) error { *r = append(*r, v); return nil }

// NewFlagSet is the flag set of the tool `kaas name`: errors reported by
// the caller, usage written to stderr with Kafka's double-dash spelling.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("kaas "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kaas %s --bootstrap-server HOST:PORT [flags], as Kafka's kafka-%s.sh\n", name, name)
		fs.VisitAll(func(f *flag.Flag) {
			arg, usage := flag.UnquoteUsage(f)
			fmt.Fprintf(stderr, "  --%s", f.Name)
			if arg != "" {
				fmt.Fprintf(stderr, " %s", arg)
			}
			fmt.Fprintf(stderr, "\n    \t%s\n", strings.ReplaceAll(usage, "\n", "\n    \t"))
		})
	}
	return fs
}

// Parse parses args into fs and returns the names of the flags given. An
// argument left after the flags is refused: every value of Kafka's tools
// follows its --flag.
func Parse(fs *flag.FlagSet, args []string) (map[string]bool, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (every value follows its --flag)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set, nil
}

// OneAction checks that exactly one of the named boolean actions is set and
// returns it.
func OneAction(fs *flag.FlagSet, actions ...string) (string, error) {
	var set []string
	fs.Visit(func(f *flag.Flag) {
		for _, a := range actions {
			if f.Name == a {
				set = append(set, a)
			}
		}
	})
	if len(set) != 1 {
		names := make([]string, len(actions))
		for i, a := range actions {
			names[i] = "--" + a
		}
		return "", fmt.Errorf("exactly one of %s is needed", strings.Join(names, ", "))
	}
	return set[0], nil
}
