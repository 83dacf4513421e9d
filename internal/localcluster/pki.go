package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

// certValidity covers any test run and any evening of `make cluster`; a cluster is made anew
// at every start.
const certValidity = 7 * 24 * time.Hour

// authority signs the cluster's certificates.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// leaf is what a certificate is for.
type leaf struct {
	// name is the file name, without extension, in the PKI folder.
	name string
	// commonName and organizations are the user and groups of a client certificate.
	commonName    string
	organizations []string
	// ips and dnsNames make it a serving certificate.
	ips      []string
	dnsNames []string
	client   bool
}

// leaves are every certificate of the cluster: the API server's, the registry's and the
// kubelet's serving certificates, and one client certificate per component and user.
func leaves() []leaf {
	return []leaf{
		{name: "kube-apiserver", commonName: "kube-apiserver", ips: []string{Gateway, KubernetesServiceIP, "127.0.0.1"},
			dnsNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}},
		{name: "registry", commonName: "registry", ips: []string{Gateway, "127.0.0.1"}, dnsNames: []string{"localhost"}},
		{name: "kubelet", commonName: NodeName, ips: []string{NodeName}},
		{name: "admin", commonName: "kubernetes-admin", organizations: []string{"system:masters"}, client: true},
		{name: "kube-apiserver-kubelet-client", commonName: "kube-apiserver-kubelet-client", organizations: []string{"system:masters"}, client: true},
		{name: "kube-controller-manager", commonName: "system:kube-controller-manager", client: true},
		{name: "kube-scheduler", commonName: "system:kube-scheduler", client: true},
		{name: "kube-proxy", commonName: "system:kube-proxy", client: true},
		{name: "kubelet-client", commonName: "system:node:" + NodeName, organizations: []string{"system:nodes"}, client: true},
	}
}

// writePKI writes the certificate authority, every certificate of leaves and the
// service-account signing key pair into dir.
func writePKI(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := newAuthority()
	if err != nil {
		return err
	}
	if err := writeCert(filepath.Join(dir, "ca.crt"), ca.cert.Raw); err != nil {
		return err
	}
	for _, l := range leaves() {
		der, key, err := ca.sign(l)
		if err != nil {
			return fmt.Errorf("certificate %s: %w", l.name, err)
		}
		if err := writeCert(filepath.Join(dir, l.name+".crt"), der); err != nil {
			return err
		}
		if err := writeKey(filepath.Join(dir, l.name+".key"), key); err != nil {
			return err
		}
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "service-account.key"), saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "service-account.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600)
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "release-controller local cluster CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key}, nil
}

func (a *authority) sign(l leaf) ([]byte, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: l.commonName, Organization: l.organizations},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		DNSNames:     l.dnsNames,
	}
	for _, ip := range l.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	if l.client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	return der, key, err
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func writeCert(path string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
