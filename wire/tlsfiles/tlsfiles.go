// Package tlsfiles serves TLS from a directory laid out like a Kubernetes
// TLS Secret (as cert-manager writes it): tls.crt (certificate chain),
// tls.key (private key) and, optionally, ca.crt (the CA that signs client
// and peer certificates). The files are re-read when they change, so a
// renewed certificate is used by the next handshake without a restart:
// kubelet swaps a mounted Secret's files atomically (the ..data symlink),
// and every handshake checks, at most once per CheckEvery, whether their
// modification times or sizes changed.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kaas-project/kaas/wire/reload"
)

// File names inside the directory (the keys of a kubernetes.io/tls Secret).
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
	CAFile   = "ca.crt"
)

// CheckEvery bounds how often the files are stat'ed.
const CheckEvery = reload.CheckEvery

// Dir is a reloading view of one certificate directory.
type Dir struct {
	path string
	// OnReload, if set, is told about every reload and every failed one
	// (the previous certificate stays in use on failure).
	OnReload func(err error)
	// Policy is the TLS versions and cipher suites the configurations
	// below allow (zero: DefaultPolicy). Set it before taking one.
	Policy Policy

	files *reload.Files[keyPair]
}

// keyPair is what the directory holds.
type keyPair struct {
	cert *tls.Certificate
	pool *x509.CertPool // nil without ca.crt
}

// Open loads the directory once; a missing or unreadable certificate or key
// is an error. now is the clock (time.Now outside tests).
func Open(path string, now func() time.Time) (*Dir, error) {
	d := &Dir{path: path}
	ca := filepath.Join(path, CAFile)
	files, err := reload.Open([]string{filepath.Join(path, CertFile), filepath.Join(path, KeyFile), ca}, []string{ca}, d.load, now)
	if err != nil {
		return nil, fmt.Errorf("tls dir %s: %w", path, err)
	}
	files.OnReload = func(err error) {
		if d.OnReload != nil {
			d.OnReload(err)
		}
	}
	d.files = files
	return d, nil
}

func (d *Dir) load() (keyPair, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(d.path, CertFile), filepath.Join(d.path, KeyFile))
	if err != nil {
		return keyPair{}, fmt.Errorf("tls dir %s: %w", d.path, err)
	}
	if len(cert.Certificate) > 0 {
		if leaf, err := x509.ParseCertificate(cert.Certificate[0]); err == nil {
			cert.Leaf = leaf
		}
	}
	var pool *x509.CertPool
	if pem, err := os.ReadFile(filepath.Join(d.path, CAFile)); err == nil {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return keyPair{}, fmt.Errorf("tls dir %s: %s holds no PEM certificate", d.path, CAFile)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return keyPair{}, fmt.Errorf("tls dir %s: %w", d.path, err)
	}
	return keyPair{cert: &cert, pool: pool}, nil
}

// current returns the certificate and CA pool, re-reading the files if
// they changed since the last check.
func (d *Dir) current() (*tls.Certificate, *x509.CertPool) {
	kp := d.files.Get()
	return kp.cert, kp.pool
}

// Certificate returns the current certificate.
func (d *Dir) Certificate() *tls.Certificate {
	c, _ := d.current()
	return c
}

// CAPool returns the current ca.crt pool, nil when the directory has none.
func (d *Dir) CAPool() *x509.CertPool {
	_, p := d.current()
	return p
}

// ServerConfig is a TLS server configuration that serves the current
// certificate and, with clientAuth above tls.NoClientCert, verifies client
// certificates against the current ca.crt; versions and suites are the
// Policy's.
func (d *Dir) ServerConfig(clientAuth tls.ClientAuthType) *tls.Config {
	c := &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cert, pool := d.current()
			auth := clientAuth
			if auth == tls.RequireAndVerifyClientCert && pool == nil {
				return nil, fmt.Errorf("tls dir %s: client certificates required but there is no %s", d.path, CAFile)
			}
			if auth == tls.VerifyClientCertIfGiven && pool == nil {
				auth = tls.NoClientCert
			}
			c := &tls.Config{
				Certificates: []tls.Certificate{*cert},
				ClientAuth:   auth,
				ClientCAs:    pool,
			}
			d.Policy.apply(c)
			return c, nil
		},
	}
	d.Policy.apply(c)
	return c
}

// ClientConfig is a TLS client configuration presenting the current
// certificate and verifying the server against the current ca.crt (peer
// brokers: the heartbeat).
func (d *Dir) ClientConfig(serverName string) *tls.Config {
	c := &tls.Config{
		ServerName: serverName,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return d.Certificate(), nil
		},
		// The CA pool can change under a live config: verify by hand
		// against the current one.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			return VerifyPeer(cs, d.CAPool(), serverName, x509.ExtKeyUsageServerAuth)
		},
	}
	d.Policy.apply(c)
	return c
}

// VerifyPeer checks the peer's chain against pool; an empty name skips
// the host name check (peers are identified by their CA, not their name).
func VerifyPeer(cs tls.ConnectionState, pool *x509.CertPool, name string, usage x509.ExtKeyUsage) error {
	if pool == nil {
		return errors.New("no ca.crt to verify the peer against")
	}
	if len(cs.PeerCertificates) == 0 {
		return errors.New("peer sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}})
	return err
}

// Principal is Kafka's default principal of a client certificate: "User:"
// and the subject's distinguished name in RFC 2253 order (CN first).
func Principal(cert *x509.Certificate) string {
	return "User:" + cert.Subject.String()
}
