package controlplane

import (
	"context"
	_ "embed"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func loopbackURL(scheme string, port int) string {
	return scheme + "://127.0.0.1:" + strconv.Itoa(port)
}

// startEtcd runs a single-member etcd without fsync: the data is thrown away.
func (cp *ControlPlane) startEtcd(ctx context.Context) (string, error) {
	hc := &http.Client{}
	ports, err := cp.launch(ctx, component{
		name:  binEtcd,
		ports: 2,
		args: func(ports []int) []string {
			client, peer := loopbackURL("http", ports[0]), loopbackURL("http", ports[1])
			return []string{
				"--name=joiner",
				"--data-dir=" + filepath.Join(cp.runDir, "etcd"),
				"--listen-client-urls=" + client,
				"--advertise-client-urls=" + client,
				"--listen-peer-urls=" + peer,
				"--initial-advertise-peer-urls=" + peer,
				"--initial-cluster=joiner=" + peer,
				"--initial-cluster-state=new",
				"--unsafe-no-fsync=true",
				"--quota-backend-bytes=" + strconv.Itoa(8<<30),
				"--log-level=warn",
			}
		},
		healthy: func(ctx context.Context, ports []int) error {
			return getOK(ctx, hc, loopbackURL("http", ports[0])+"/health")
		},
	})
	if err != nil {
		return "", err
	}
	return loopbackURL("http", ports[0]), nil
}

// startAPIServer runs kube-apiserver with client-certificate authentication
// and RBAC. The ServiceAccount admission plugin is off so that pods can be
// created in a namespace before its default ServiceAccount exists.
func (cp *ControlPlane) startAPIServer(ctx context.Context, etcdURL string) error {
	return cp.runAPIServer(ctx, etcdURL, nil)
}

// runAPIServer starts kube-apiserver on port, or on a free port when
// port is nil.
func (cp *ControlPlane) runAPIServer(ctx context.Context, etcdURL string, port []int) error {
	hc, err := cp.httpsClient(true)
	if err != nil {
		return err
	}
	ports, err := cp.launch(ctx, component{
		name:  binAPIServer,
		ports: 1,
		fixed: port,
		args: func(ports []int) []string {
			return []string{
				"--etcd-servers=" + etcdURL,
				"--bind-address=127.0.0.1",
				"--advertise-address=127.0.0.1",
				"--secure-port=" + strconv.Itoa(ports[0]),
				"--cert-dir=" + filepath.Join(cp.runDir, "pki"),
				"--tls-cert-file=" + cp.pki.servingCert,
				"--tls-private-key-file=" + cp.pki.servingKey,
				"--client-ca-file=" + cp.pki.caCert,
				"--requestheader-client-ca-file=" + cp.pki.caCert,
				"--requestheader-allowed-names=" + frontProxyUser,
				"--requestheader-username-headers=X-Remote-User",
				"--requestheader-group-headers=X-Remote-Group",
				"--requestheader-extra-headers-prefix=X-Remote-Extra-",
				"--proxy-client-cert-file=" + cp.pki.proxyCert,
				"--proxy-client-key-file=" + cp.pki.proxyKey,
				"--authorization-mode=RBAC",
				"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
				"--service-account-key-file=" + cp.pki.saPub,
				"--service-account-signing-key-file=" + cp.pki.saKey,
				"--service-cluster-ip-range=" + serviceCIDR,
				"--endpoint-reconciler-type=none",
				"--disable-admission-plugins=ServiceAccount",
				"--allow-privileged=true",
				"--enable-priority-and-fairness=false",
				"--profiling=false",
			}
		},
		healthy: func(ctx context.Context, ports []int) error {
			return getOK(ctx, hc, loopbackURL("https", ports[0])+"/readyz")
		},
	})
	if err != nil {
		return err
	}
	cp.etcdURL = etcdURL
	cp.apiserverPort = ports[0]
	cp.apiserverURL = loopbackURL("https", ports[0])
	return nil
}

// servingArgs are the flags that make kube-scheduler and
// kube-controller-manager serve /healthz on a loopback port with the run's
// certificate.
func (cp *ControlPlane) servingArgs(port int) []string {
	return []string{
		"--authentication-kubeconfig=" + cp.kubeconfigPath,
		"--authorization-kubeconfig=" + cp.kubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + cp.pki.servingCert,
		"--tls-private-key-file=" + cp.pki.servingKey,
	}
}

// schedulerConfig is kube-scheduler's configuration: the default profile,
// no leader election, and a client fast enough to bind thousands of pods.
const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`

func (cp *ControlPlane) startScheduler(ctx context.Context) error {
	hc, err := cp.httpsClient(false)
	if err != nil {
		return err
	}
	config := filepath.Join(cp.runDir, "kube-scheduler.yaml")
	doc := fmt.Appendf(nil, schedulerConfig, cp.kubeconfigPath)
	if cp.opts.SchedulerProfiles != "" {
		doc = append(doc, cp.opts.SchedulerProfiles...)
	}
	if err := os.WriteFile(config, doc, 0o644); err != nil {
		return fmt.Errorf("writing kube-scheduler configuration: %w", err)
	}
	ports, err := cp.launch(ctx, component{
		name:  binScheduler,
		ports: 1,
		args:  func(ports []int) []string { return append(cp.servingArgs(ports[0]), "--config="+config) },
		healthy: func(ctx context.Context, ports []int) error {
			return getOK(ctx, hc, loopbackURL("https", ports[0])+"/healthz")
		},
	})
	if err == nil {
		cp.setServingPort(binScheduler, ports[0])
	}
	return err
}

// setServingPort records a component's secure port for Metrics.
func (cp *ControlPlane) setServingPort(component string, port int) {
	cp.portsMu.Lock()
	defer cp.portsMu.Unlock()
	if cp.servingPorts == nil {
		cp.servingPorts = map[string]int{}
	}
	cp.servingPorts[component] = port
}

func (cp *ControlPlane) startControllerManager(ctx context.Context) error {
	hc, err := cp.httpsClient(false)
	if err != nil {
		return err
	}
	controllers := "*"
	if len(cp.opts.Controllers) > 0 {
		controllers = strings.Join(cp.opts.Controllers, ",")
	}
	ports, err := cp.launch(ctx, component{
		name:  binControllerManager,
		ports: 1,
		args: func(ports []int) []string {
			return append(cp.servingArgs(ports[0]),
				"--kubeconfig="+cp.kubeconfigPath,
				"--leader-elect=false",
				"--controllers="+controllers,
				"--root-ca-file="+cp.pki.caCert,
				"--service-account-private-key-file="+cp.pki.saKey,
				"--cluster-signing-cert-file="+cp.pki.caCert,
				"--cluster-signing-key-file="+cp.pki.caKey,
				"--service-cluster-ip-range="+serviceCIDR,
				"--kube-api-qps=200",
				"--kube-api-burst=400",
			)
		},
		healthy: func(ctx context.Context, ports []int) error {
			return getOK(ctx, hc, loopbackURL("https", ports[0])+"/healthz")
		},
	})
	if err == nil {
		cp.setServingPort(binControllerManager, ports[0])
	}
	return err
}

// kwokStages is the kwok configuration: the stages that play the kubelet.
//
//go:embed kwok-stages.yaml
var kwokStages []byte

// KwokLeaseDurationSeconds is the duration of the node Leases kwok renews
// for the Nodes it manages.
const KwokLeaseDurationSeconds = 40

func (cp *ControlPlane) startKwok(ctx context.Context) error {
	config := filepath.Join(cp.runDir, "kwok.yaml")
	if err := os.WriteFile(config, kwokStages, 0o644); err != nil {
		return fmt.Errorf("writing kwok configuration: %w", err)
	}
	manage := "--manage-all-nodes=true"
	if cp.opts.KwokNodeSelector != "" {
		manage = "--manage-nodes-with-label-selector=" + cp.opts.KwokNodeSelector
	}
	hc := &http.Client{}
	_, err := cp.launch(ctx, component{
		name:  binKwok,
		ports: 1,
		args: func(ports []int) []string {
			return []string{
				"--kubeconfig=" + cp.kubeconfigPath,
				"--config=" + config,
				manage,
				"--cidr=" + podCIDR,
				"--node-ip=127.0.0.1",
				"--node-lease-duration-seconds=" + strconv.Itoa(KwokLeaseDurationSeconds),
				"--server-address=127.0.0.1:" + strconv.Itoa(ports[0]),
			}
		},
		healthy: func(ctx context.Context, ports []int) error {
			return getOK(ctx, hc, loopbackURL("http", ports[0])+"/healthz")
		},
	})
	return err
}
