package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// certLifetime is how long the test certificates are valid, from an hour ago (clock
// skew) onwards.
const certLifetime = 24 * time.Hour

// serialBits is the size of a random certificate serial number.
const serialBits = 64

// CA is a certificate authority made for one test, and the server certificate it signed
// for the loopback address, written as PEM files in a test directory.
type CA struct {
	// Pool holds the CA certificate: the RootCAs of a client that trusts the server.
	Pool *x509.CertPool
	// CAFile, CertFile and KeyFile are the PEM files of the CA certificate, the server
	// certificate and the server's private key.
	CAFile, CertFile, KeyFile string
}

// NewCA makes a CA and a server certificate for 127.0.0.1 and localhost in dir.
func NewCA(dir string) (*CA, error) {
	caCert, caKey, err := newCert("bucketgate test CA", nil, nil, func(c *x509.Certificate) {
		c.IsCA, c.BasicConstraintsValid = true, true
		c.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	})
	if err != nil {
		return nil, err
	}
	cert, key, err := newCert("redis-server", caCert, caKey, func(c *x509.Certificate) {
		c.KeyUsage = x509.KeyUsageDigitalSignature
		c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		c.IPAddresses = []net.IP{net.ParseIP(loopback)}
		c.DNSNames = []string{"localhost"}
	})
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	ca := &CA{
		Pool:     x509.NewCertPool(),
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "server.pem"),
		KeyFile:  filepath.Join(dir, "server-key.pem"),
	}
	ca.Pool.AddCert(caCert)
	for _, f := range []struct {
		path, kind string
		der        []byte
	}{{ca.CAFile, "CERTIFICATE", caCert.Raw}, {ca.CertFile, "CERTIFICATE", cert.Raw}, {ca.KeyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return ca, nil
}

// newCert makes a P-256 key and a certificate for it named cn, valid from an hour ago
// for certLifetime, shaped by shape, and signed by parent's key (self-signed when
// parent is nil).
func newCert(cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, shape func(*x509.Certificate)) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: key: %w", cn, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), serialBits))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: serial: %w", cn, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
	}
	shape(tmpl)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: certificate: %w", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: certificate: %w", cn, err)
	}
	return cert, key, nil
}

// NewTLSServer starts a server that accepts only TLS (no plain port, no client
// certificates, as ElastiCache) with a certificate from a CA made for it, and returns
// it with the CA a client must trust. Close stops it.
func NewTLSServer(extra ...string) (*Server, *CA, error) {
	dir, err := os.MkdirTemp("", "redistest-ca-")
	if err != nil {
		return nil, nil, fmt.Errorf("redistest: %w", err)
	}
	ca, err := NewCA(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("redistest: %w", err)
	}
	tlsConfig := &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
	s, err := newServer(tlsConfig, func(port int) ([]string, error) {
		return append([]string{
			"--port", "0",
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", ca.CertFile,
			"--tls-key-file", ca.KeyFile,
			"--tls-ca-cert-file", ca.CAFile,
			"--tls-auth-clients", "no",
		}, extra...), nil
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, err
	}
	s.cleanup = func() { _ = os.RemoveAll(dir) }
	return s, ca, nil
}
