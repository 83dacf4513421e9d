// Package servertest helps tests of the HTTP server: a self-signed certificate to serve TLS
// with, and a client that trusts it.
package servertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Names of the files WriteCert writes, as Kubernetes TLS Secrets name them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// WriteCert writes a self-signed certificate for 127.0.0.1 and localhost, with commonName,
// and its key to dir (CertFile, KeyFile), and returns the certificate. The files are replaced
// by rename, key first, so a watcher never reads a half-written pair.
func WriteCert(t testing.TB, dir, commonName string) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name  string
		block *pem.Block
	}{{KeyFile, &pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}}, {CertFile, &pem.Block{Type: "CERTIFICATE", Bytes: der}}} {
		tmp := filepath.Join(dir, f.name+".new")
		if err := os.WriteFile(tmp, pem.EncodeToMemory(f.block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, f.name)); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// TrustingClient is an HTTP client that trusts only cert (and verifies it as any client
// does); http2 makes it speak HTTP/2, else HTTP/1.1. Its idle connections close when the test
// ends.
func TrustingClient(t testing.TB, cert *x509.Certificate, http2 bool) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	p := new(http.Protocols)
	if http2 {
		p.SetHTTP2(true)
	} else {
		p.SetHTTP1(true)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Protocols: p}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
