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
	"testing"
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
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	caTmpl, err := certTemplate("bucketgate test CA")
	if err != nil {
		return nil, err
	}
	caTmpl.IsCA, caTmpl.BasicConstraintsValid = true, true
	caTmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	tmpl, err := certTemplate("redis-server")
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = []net.IP{net.ParseIP(loopback)}
	tmpl.DNSNames = []string{"localhost"}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("server certificate: %w", err)
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
	}{{ca.CAFile, "CERTIFICATE", caDER}, {ca.CertFile, "CERTIFICATE", der}, {ca.KeyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.path, err)
		}
	}
	return ca, nil
}

func certTemplate(cn string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), serialBits))
	if err != nil {
		return nil, fmt.Errorf("certificate serial: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certLifetime),
	}, nil
}

// StartTLS runs a redis-server that accepts only TLS (no plain port, no client
// certificates, as ElastiCache) with a certificate from a CA made for this test, and
// returns it with the CA a client must trust.
func StartTLS(t testing.TB, extra ...string) (*Server, *CA) {
	t.Helper()
	ca, err := NewCA(t.TempDir())
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	tlsConfig := &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS12}
	s := start(t, tlsConfig, func(port int) ([]string, error) {
		return append([]string{
			"--port", "0",
			"--tls-port", strconv.Itoa(port),
			"--tls-cert-file", ca.CertFile,
			"--tls-key-file", ca.KeyFile,
			"--tls-ca-cert-file", ca.CAFile,
			"--tls-auth-clients", "no",
		}, extra...), nil
	})
	return s, ca
}
