package testenv

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki holds the paths of the generated certificates and keys, plus the PEM bytes the
// kubeconfig embeds.
type pki struct {
	CACert, CAKey           string
	ServingCert, ServingKey string
	AdminCert, AdminKey     string
	SAKey, SAPub            string

	caPEM, adminCertPEM, adminKeyPEM []byte
}

// writePKI generates, with Go crypto only, everything a loopback kube-apiserver needs:
// a CA, a serving certificate for 127.0.0.1, an admin client certificate in the
// system:masters group, and an RSA key pair for service-account tokens.
func writePKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		CACert: filepath.Join(dir, "ca.crt"), CAKey: filepath.Join(dir, "ca.key"),
		ServingCert: filepath.Join(dir, "apiserver.crt"), ServingKey: filepath.Join(dir, "apiserver.key"),
		AdminCert: filepath.Join(dir, "admin.crt"), AdminKey: filepath.Join(dir, "admin.key"),
		SAKey: filepath.Join(dir, "sa.key"), SAPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "kaas-testenv-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("ca certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	p.caPEM = pemBlock("CERTIFICATE", caDER)
	if err := writeFile(p.CACert, p.caPEM); err != nil {
		return nil, err
	}
	if err := writeKey(p.CAKey, caKey); err != nil {
		return nil, err
	}

	leaf := func(tmpl *x509.Certificate) (certPEM, keyPEM []byte, err error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl.SerialNumber = serial()
		tmpl.NotBefore = now.Add(-time.Hour)
		tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		kd, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", kd), nil
	}

	sc, sk, err := leaf(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback, net.ParseIP("10.0.0.1")},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	})
	if err != nil {
		return nil, fmt.Errorf("serving certificate: %w", err)
	}
	if err := writeFile(p.ServingCert, sc); err != nil {
		return nil, err
	}
	if err := writeFile(p.ServingKey, sk); err != nil {
		return nil, err
	}

	ac, ak, err := leaf(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kaas-testenv-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, fmt.Errorf("admin certificate: %w", err)
	}
	p.adminCertPEM, p.adminKeyPEM = ac, ak
	if err := writeFile(p.AdminCert, ac); err != nil {
		return nil, err
	}
	if err := writeFile(p.AdminKey, ak); err != nil {
		return nil, err
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	if err := writeFile(p.SAKey, pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))); err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, err
	}
	if err := writeFile(p.SAPub, pemBlock("PUBLIC KEY", pub)); err != nil {
		return nil, err
	}
	return p, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err)
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func writeKey(path string, k crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return err
	}
	return writeFile(path, pemBlock("PRIVATE KEY", der))
}

func writeFile(path string, data []byte) error {
	return os.WriteFile(path, data, 0o600)
}
