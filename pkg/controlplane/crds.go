package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// installCRDs creates or updates the CRDs in dirs and docs and waits until
// each is Established and its resources are in discovery.
func installCRDs(ctx context.Context, cfg *rest.Config, dirs []string, docs [][]byte) error {
	crds, err := readCRDs(dirs, docs)
	if err != nil {
		return err
	}
	if len(crds) == 0 {
		return nil
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("building crd scheme: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating crd client: %w", err)
	}
	for _, crd := range crds {
		if err := applyCRD(ctx, c, crd); err != nil {
			return err
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	for _, crd := range crds {
		if err := waitCRDServed(ctx, c, dc, crd); err != nil {
			return err
		}
	}
	return nil
}

func applyCRD(ctx context.Context, c client.Client, crd *apiextensionsv1.CustomResourceDefinition) error {
	for {
		err := c.Create(ctx, crd.DeepCopy())
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating crd %s: %w", crd.Name, err)
		}
		var existing apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &existing); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("getting crd %s: %w", crd.Name, err)
		}
		existing.Spec = crd.Spec
		existing.Labels, existing.Annotations = crd.Labels, crd.Annotations
		err = c.Update(ctx, &existing)
		if err == nil {
			return nil
		}
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("updating crd %s: %w", crd.Name, err)
		}
	}
}

// crdCreateHold is how long after a CRD is Established kube-apiserver holds
// creates of its resources, plus a margin.
const crdCreateHold = 2*time.Second + 100*time.Millisecond

func waitCRDServed(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	var last error
	for {
		last = crdServed(ctx, c, dc, crd)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for crd %s: %w (%w)", crd.Name, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func crdServed(ctx context.Context, c client.Client, dc discovery.DiscoveryInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	var got apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
		return err
	}
	var established time.Time
	for _, t := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.Established, apiextensionsv1.NamesAccepted} {
		i := slices.IndexFunc(got.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool { return c.Type == t })
		if i < 0 || got.Status.Conditions[i].Status != apiextensionsv1.ConditionTrue {
			return fmt.Errorf("crd %s is not %s", crd.Name, t)
		}
		if t == apiextensionsv1.Established {
			established = got.Status.Conditions[i].LastTransitionTime.Time
		}
	}
	// kube-apiserver holds every create of a custom resource for two seconds
	// while its CRD was Established less than two seconds ago. Waiting that
	// out here, once for all CRDs, keeps the callers' first creates fast.
	if wait := crdCreateHold - time.Since(established); wait > 0 {
		return fmt.Errorf("crd %s was established %s ago", crd.Name, crdCreateHold-wait)
	}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gv := crd.Spec.Group + "/" + v.Name
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			return fmt.Errorf("discovering %s: %w", gv, err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == crd.Spec.Names.Plural }) {
			return fmt.Errorf("%s %s is not in discovery yet", gv, crd.Spec.Names.Plural)
		}
	}
	return nil
}

// readCRDs parses every CRD manifest in dirs (not recursive) and docs.
// Documents of other kinds are an error: a CRD directory should hold CRDs.
func readCRDs(dirs []string, docs [][]byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	type source struct {
		name string
		data []byte
	}
	var sources []source
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("reading crd directory: %w", err)
		}
		for _, e := range entries {
			ext := strings.ToLower(filepath.Ext(e.Name()))
			if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
				continue
			}
			path := filepath.Join(dir, e.Name())
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("reading crd file: %w", err)
			}
			sources = append(sources, source{path, data})
		}
	}
	for i, d := range docs {
		sources = append(sources, source{fmt.Sprintf("CRDs[%d]", i), d})
	}

	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, src := range sources {
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(src.data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("parsing %s: %w", src.name, err)
			}
			if isEmptyDoc(doc) {
				continue
			}
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &meta); err != nil {
				return nil, fmt.Errorf("parsing %s: %w", src.name, err)
			}
			if meta.Kind != "CustomResourceDefinition" || meta.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
				return nil, fmt.Errorf("parsing %s: want apiextensions.k8s.io/v1 CustomResourceDefinition, got %s %s", src.name, meta.APIVersion, meta.Kind)
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(doc, crd); err != nil {
				return nil, fmt.Errorf("parsing %s: %w", src.name, err)
			}
			crds = append(crds, crd)
		}
	}
	return crds, nil
}

// isEmptyDoc tells whether a YAML document holds only comments or null.
func isEmptyDoc(doc []byte) bool {
	var v any
	return yaml.Unmarshal(doc, &v) == nil && v == nil
}
