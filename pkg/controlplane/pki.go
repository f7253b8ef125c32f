package controlplane

import (
	"crypto"
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

// adminUser and adminGroup are the identity of the admin client certificate:
// system:masters bypasses RBAC.
const (
	adminUser  = "joiner-admin"
	adminGroup = "system:masters"
	// frontProxyUser is the only name kube-apiserver accepts request headers from.
	frontProxyUser = "front-proxy-client"
)

// pki holds the paths of the run's certificates and keys, all PEM.
type pki struct {
	caCert, caKey       string // signs the serving and client certificates
	servingCert         string // kube-apiserver, kube-scheduler, kube-controller-manager
	servingKey          string
	adminCert, adminKey string // client certificate in system:masters
	proxyCert, proxyKey string // kube-apiserver's front-proxy client certificate
	saKey, saPub        string // signs and verifies service-account tokens
	caPEM, adminCertPEM []byte
	adminKeyPEM         []byte
}

// writePKI generates a fresh CA, serving and admin certificates and a
// service-account signing key into dir.
func writePKI(dir string, now time.Time) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating pki directory: %w", err)
	}
	p := &pki{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "serving.crt"), servingKey: filepath.Join(dir, "serving.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		proxyCert: filepath.Join(dir, "front-proxy.crt"), proxyKey: filepath.Join(dir, "front-proxy.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(10*365*24*time.Hour)

	caKey, err := newKey()
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "joiner-local-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, ca, err := sign(caTmpl, caKey, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("signing ca certificate: %w", err)
	}

	servingKey, err := newKey()
	if err != nil {
		return nil, err
	}
	servingDER, _, err := sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.ParseIP(kubernetesServiceIP)},
	}, servingKey, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing serving certificate: %w", err)
	}

	adminKey, err := newKey()
	if err != nil {
		return nil, err
	}
	adminDER, _, err := sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: adminUser, Organization: []string{adminGroup}},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, adminKey, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing admin certificate: %w", err)
	}

	// kube-apiserver presents this one to aggregated API servers; the
	// delegated authentication of kube-scheduler and
	// kube-controller-manager wants it configured.
	proxyKey, err := newKey()
	if err != nil {
		return nil, err
	}
	proxyDER, _, err := sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: frontProxyUser},
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, proxyKey, ca, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing front-proxy certificate: %w", err)
	}

	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("encoding service-account public key: %w", err)
	}

	p.caPEM = pemBlock("CERTIFICATE", caDER)
	p.adminCertPEM = pemBlock("CERTIFICATE", adminDER)
	if p.adminKeyPEM, err = keyPEM(adminKey); err != nil {
		return nil, err
	}
	files := map[string][]byte{
		p.caCert:      p.caPEM,
		p.servingCert: pemBlock("CERTIFICATE", servingDER),
		p.adminCert:   p.adminCertPEM,
		p.adminKey:    p.adminKeyPEM,
		p.proxyCert:   pemBlock("CERTIFICATE", proxyDER),
		p.saPub:       pemBlock("PUBLIC KEY", saPubDER),
	}
	for path, key := range map[string]*ecdsa.PrivateKey{p.caKey: caKey, p.servingKey: servingKey, p.proxyKey: proxyKey, p.saKey: saKey} {
		if files[path], err = keyPEM(key); err != nil {
			return nil, err
		}
	}
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating key: %w", err)
	}
	return key, nil
}

// sign signs tmpl with parentKey as parent, or self-signs it when parent is
// nil, and returns the DER and the parsed certificate.
func sign(tmpl *x509.Certificate, key crypto.Signer, parent *x509.Certificate, parentKey crypto.Signer) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return der, cert, nil
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding private key: %w", err)
	}
	return pemBlock("PRIVATE KEY", der), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
