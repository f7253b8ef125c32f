//go:build kueue

package kueue_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/joiner-dev/joiner/pkg/test"
)

// Kueue's names for its webhook service, certificate secret and
// namespace (its configuration's defaults).
const (
	kueueNamespace = "kueue-system"
	kueueService   = "kueue-webhook-service"
	kueueSecret    = "kueue-webhook-server-cert"
)

// kueueConverted are the CRDs whose conversion webhook Kueue's certificate
// manager keeps a CA bundle in (it refuses to start while one has none).
var kueueConverted = []string{
	"localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io", "workloads.kueue.x-k8s.io",
	"cohorts.kueue.x-k8s.io", "multikueueclusters.kueue.x-k8s.io",
}

// startKueue runs Kueue's manager with its webhooks on a loopback port.
//
// Kueue either manages its certificates itself (a secret it keeps, whose
// CA it injects into its webhook configurations and conversion CRDs) or
// reads them from files, the metrics one at a fixed path under /etc. The
// test takes the first way, as a cluster installation does, and plays the
// kubelet: it seeds the secret with a CA and a serving certificate for
// both Kueue's service name (which the certificate manager checks) and
// 127.0.0.1 (which kube-apiserver dials), and writes the serving
// certificate into Kueue's certificate directory, as the secret's volume
// would. Kueue's webhook configurations and conversion CRDs point at the
// loopback port by URL; Kueue keeps the CA in them.
func startKueue(t *testing.T) {
	t.Helper()
	env := test.Env(t)
	dir := t.TempDir()
	port := freePort(t)
	probe := freePort(t)
	secret := kueueCerts(t, dir)
	caPEM := secret.Data["ca.crt"]
	if err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kueueNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(t.Context(), secret); err != nil {
		t.Fatalf("seeding Kueue's certificate secret: %v", err)
	}
	registerWebhooks(t, port, caPEM)
	convertByURL(t, port, caPEM)

	cfg := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health: {healthProbeBindAddress: "127.0.0.1:%d"}
metrics: {bindAddress: "0"}
webhook: {port: %d, host: 127.0.0.1, certDir: %q}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: true, webhookServiceName: %s, webhookSecretName: %s}
manageJobsWithoutQueueName: false
integrations: {frameworks: ["batch/job"]}
`, kueueNamespace, probe, port, dir, kueueService, kueueSecret)
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	test.StartJoiner(t, filepath.Join(kueueDir(), "kueue"), "kueue",
		[]string{"--config=" + cfgPath, "--feature-gates=VisibilityOnDemand=false", "--zap-log-level=2"},
		[]string{"KUBECONFIG=" + env.ControlPlane.KubeconfigPath()})
	test.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", probe))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("kueue readyz: %s", resp.Status)
		}
		return nil
	})
}

// registerWebhooks installs Kueue's webhook configurations under the names
// its certificate manager keeps, with only the Job integration's and
// Kueue's own kinds' webhooks (the other integrations' paths are not
// served with only batch/job enabled), each reached by its loopback URL.
func registerWebhooks(t *testing.T, port int, caPEM []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(kueueDir(), "webhooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env := test.Env(t)
	for _, cfg := range decodeAll(t, b) {
		hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
		var kept []any
		for _, h := range hooks {
			m := h.(map[string]any)
			path, _, _ := unstructured.NestedString(m, "clientConfig", "service", "path")
			if !strings.Contains(path, "kueue-x-k8s-io") && !strings.Contains(path, "batch-v1-job") {
				continue
			}
			m["clientConfig"] = map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d%s", port, path), "caBundle": base64.StdEncoding.EncodeToString(caPEM)}
			kept = append(kept, m)
		}
		if err := unstructured.SetNestedSlice(cfg.Object, kept, "webhooks"); err != nil {
			t.Fatal(err)
		}
		// kueue-mutating-webhook-configuration, as its installation names it.
		cfg.SetName("kueue-" + strings.TrimPrefix(cfg.GetName(), "kueue-"))
		raw, err := yaml.Marshal(cfg.Object)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(t.Context(), obj); err != nil {
			t.Fatalf("registering %s: %v", cfg.GetKind(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
}

// convertByURL gives Kueue's multi-version CRDs their conversion webhook
// (as Kueue's installation patches them), reached by its loopback URL.
func convertByURL(t *testing.T, port int, caPEM []byte) {
	t.Helper()
	env := test.Env(t)
	for _, name := range kueueConverted {
		test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			crd := &unstructured.Unstructured{}
			crd.SetAPIVersion("apiextensions.k8s.io/v1")
			crd.SetKind("CustomResourceDefinition")
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			conversion := map[string]any{
				"strategy": "Webhook",
				"webhook": map[string]any{
					"clientConfig":             map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d/convert", port), "caBundle": base64.StdEncoding.EncodeToString(caPEM)},
					"conversionReviewVersions": []any{"v1"},
				},
			}
			if err := unstructured.SetNestedMap(crd.Object, conversion, "spec", "conversion"); err != nil {
				return err
			}
			return env.Client.Update(ctx, crd)
		})
	}
}

// kueueCerts makes Kueue's certificate secret: a CA as Kueue's certificate
// manager makes one (RSA, PKCS#1, named kueue-ca) and a serving
// certificate for Kueue's service and 127.0.0.1, valid well past the
// manager's 90-day renewal horizon (it would replace them otherwise). The
// serving pair is also written into dir as tls.crt and tls.key.
func kueueCerts(t *testing.T, dir string) *corev1.Secret {
	t.Helper()
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kueue-ca", Organization: []string{"kueue"}},
		DNSNames: []string{"kueue-ca"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(5 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: kueueService + "." + kueueNamespace + ".svc"},
		DNSNames: []string{kueueService + "." + kueueNamespace + ".svc"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(5 * 365 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pemOf := func(typ string, b []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}) }
	data := map[string][]byte{
		"ca.crt":  pemOf("CERTIFICATE", caDER),
		"ca.key":  pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(caKey)),
		"tls.crt": pemOf("CERTIFICATE", der),
		"tls.key": pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)),
	}
	for _, name := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(dir, name), data[name], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")); err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: kueueNamespace, Name: kueueSecret}, Data: data}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
