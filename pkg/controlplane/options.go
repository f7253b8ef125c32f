package controlplane

import (
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// Options configure a ControlPlane. The zero value runs etcd and
// kube-apiserver only, in a temporary directory.
type Options struct {
	// BinDir holds the binaries built by `make controlplane`. Empty means
	// FindBinDir: $JOINER_K8S_BIN, else bin/k8s beside the nearest go.mod.
	BinDir string

	// RunDir holds the run's certificates, kubeconfig, etcd data and logs.
	// Empty means a fresh temporary directory that Stop removes; a RunDir that
	// is set is created when missing and kept by Stop.
	RunDir string

	// Scheduler runs kube-scheduler.
	Scheduler bool
	// ControllerManager runs kube-controller-manager (deployments, replica
	// sets, garbage collection, node lifecycle, service accounts, ...).
	ControllerManager bool
	// Controllers is kube-controller-manager's --controllers list. Empty
	// means "*", the default set. Needs ControllerManager.
	Controllers []string

	// SchedulerProfiles, when set, is the profiles: section of
	// kube-scheduler's KubeSchedulerConfiguration (YAML), appended to the
	// default configuration; empty keeps kube-scheduler's one default
	// profile.
	SchedulerProfiles string

	// Kwok runs kwok, which plays the kubelet for fake nodes: a managed Node
	// becomes Ready (keeping the capacity it was created with), its Lease is
	// renewed, pods bound to it run, and pods deleted on it disappear.
	Kwok bool
	// KwokNodeSelector is a label selector for the Nodes kwok manages, for
	// example "joiner.sh/fake=true". Empty means every Node. Needs Kwok.
	KwokNodeSelector string

	// CRDDirectories are directories of CRD manifests (*.yaml, *.yml,
	// *.json; multi-document files allowed) installed once kube-apiserver is
	// ready. Start waits until they are Established.
	CRDDirectories []string
	// CRDs are CRD manifests given as bytes (for example embedded YAML),
	// installed the same way.
	CRDs [][]byte

	// Scheme is the scheme of the client returned by Client. Nil means
	// client-go's built-in types plus apiextensions.k8s.io/v1.
	Scheme *runtime.Scheme

	// StartTimeout bounds Start. Zero means DefaultStartTimeout.
	StartTimeout time.Duration

	// ExtraArgs are appended to a component's command line, keyed by binary
	// name ("etcd", "kube-apiserver", "kube-scheduler",
	// "kube-controller-manager", "kwok"); a later flag overrides an earlier
	// one in these programs.
	ExtraArgs map[string][]string
}

// DefaultStartTimeout is how long Start waits for every component to be
// healthy when Options.StartTimeout is zero.
const DefaultStartTimeout = 2 * time.Minute

// validate checks the options and fills the defaults; it returns the
// directory that holds the binaries.
func (o *Options) validate() (string, error) {
	var errs []error
	if o.StartTimeout < 0 {
		errs = append(errs, fmt.Errorf("StartTimeout must not be negative, got %s", o.StartTimeout))
	}
	if len(o.Controllers) > 0 && !o.ControllerManager {
		errs = append(errs, errors.New("Controllers needs ControllerManager"))
	}
	if o.KwokNodeSelector != "" {
		if !o.Kwok {
			errs = append(errs, errors.New("KwokNodeSelector needs Kwok"))
		}
		if _, err := labels.Parse(o.KwokNodeSelector); err != nil {
			errs = append(errs, fmt.Errorf("KwokNodeSelector: %w", err))
		}
	}
	for _, dir := range o.CRDDirectories {
		if info, err := os.Stat(dir); err != nil {
			errs = append(errs, fmt.Errorf("CRDDirectories: %w", err))
		} else if !info.IsDir() {
			errs = append(errs, fmt.Errorf("CRDDirectories: %s is not a directory", dir))
		}
	}
	known := map[string]bool{binEtcd: true, binAPIServer: true, binScheduler: true, binControllerManager: true, binKwok: true}
	for name := range o.ExtraArgs {
		if !known[name] {
			errs = append(errs, fmt.Errorf("ExtraArgs: unknown component %q", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("invalid control-plane options: %w", err)
	}

	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	binDir := o.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinDir(); err != nil {
			return "", err
		}
	}
	if err := checkBinaries(binDir, o.binaries()); err != nil {
		return "", err
	}
	return binDir, nil
}

// binaries lists the binaries these options run.
func (o *Options) binaries() []string {
	names := []string{binEtcd, binAPIServer}
	if o.Scheduler {
		names = append(names, binScheduler)
	}
	if o.ControllerManager {
		names = append(names, binControllerManager)
	}
	if o.Kwok {
		names = append(names, binKwok)
	}
	return names
}
