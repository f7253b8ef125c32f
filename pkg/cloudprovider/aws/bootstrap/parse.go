package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/userdata"
)

// Parse reads userData (not base64-encoded) the way an image of family
// boots from it and returns what its kubelet registers with. An error is
// the reason the node never joins, worded like the image's boot log.
func Parse(family string, userData []byte) (*Kubelet, error) {
	switch family {
	case awsv1.AMIFamilyAL2:
		return parseAL2(string(userData))
	case awsv1.AMIFamilyAL2023:
		return parseAL2023(string(userData))
	case awsv1.AMIFamilyBottlerocket:
		return parseBottlerocket(string(userData))
	}
	if awsv1.IsWindows(family) {
		k, err := parseWindows(string(userData))
		if k != nil {
			k.OS = "windows"
		}
		return k, err
	}
	return nil, fmt.Errorf("images of family %q are not emulated", family)
}

// parts returns the parts cloud-init would process.
func parts(s string) ([]userdata.Part, error) {
	if userdata.IsMIME(s) {
		p, err := userdata.ParseMIME(s)
		if err != nil {
			return nil, fmt.Errorf("cloud-init cannot read the user data: %w", err)
		}
		return p, nil
	}
	return []userdata.Part{{ContentType: "text/x-not-multipart", Body: s}}, nil
}

// bootstrapValueOptions are the options of AL2's /etc/eks/bootstrap.sh;
// each takes the next argument as its value. Its argument loop matches
// them exactly: "--kubelet-extra-args=..." is not one of them and becomes
// a positional argument, which bootstrap.sh then ignores.
var bootstrapValueOptions = map[string]bool{
	"--use-max-pods": true, "--b64-cluster-ca": true, "--apiserver-endpoint": true,
	"--kubelet-extra-args": true, "--enable-docker-bridge": true, "--aws-api-retry-attempts": true,
	"--docker-config-json": true, "--containerd-config-file": true, "--pause-container-account": true,
	"--pause-container-version": true, "--dns-cluster-ip": true, "--container-runtime": true,
	"--ip-family": true, "--service-ipv6-cidr": true, "--enable-local-outpost": true,
	"--cluster-id": true, "--mount-bpf-fs": true, "--local-disks": true,
}

// parseAL2 finds the shell scripts of the user data and the call to
// /etc/eks/bootstrap.sh in them, expands its arguments as bash would
// (quotes, variables assigned earlier in the script) and runs
// bootstrap.sh's argument loop.
func parseAL2(s string) (*Kubelet, error) {
	ps, err := parts(s)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		body := p.Body
		mt := p.MediaType()
		if mt != userdata.ContentTypeShell && !(mt == "text/x-not-multipart" && strings.HasPrefix(body, "#!")) {
			continue
		}
		args, found, err := bootstrapCall(body)
		if err != nil {
			return nil, err
		}
		if found {
			return runBootstrapSh(args)
		}
	}
	return nil, errors.New("no shell script in the user data runs /etc/eks/bootstrap.sh, so the kubelet is never configured or started")
}

// bootstrapCall returns the expanded arguments of the first command whose
// name is bootstrap.sh.
func bootstrapCall(script string) (args []string, found bool, err error) {
	file, err := syntax.NewParser().Parse(strings.NewReader(script), "user-data")
	if err != nil {
		return nil, false, fmt.Errorf("bash cannot parse the user data script: %w", err)
	}
	var env []string
	cfg := func() *expand.Config {
		return &expand.Config{
			Env: expand.ListEnviron(env...),
			// Command substitutions print nothing: the emulator runs no
			// commands.
			CmdSubst: func(io.Writer, *syntax.CmdSubst) error { return nil },
		}
	}
	assign := func(as *syntax.Assign) {
		if as.Name == nil {
			return
		}
		v := ""
		if as.Value != nil {
			v, _ = expand.Literal(cfg(), as.Value)
		}
		env = append(env, as.Name.Value+"="+v)
	}
	var walkErr error
	syntax.Walk(file, func(n syntax.Node) bool {
		if found || walkErr != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.DeclClause:
			for _, a := range n.Args {
				assign(a)
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				for _, a := range n.Assigns {
					assign(a)
				}
				return true
			}
			fields, err := expand.Fields(cfg(), n.Args...)
			if err != nil {
				walkErr = fmt.Errorf("expanding %q: %w", "bootstrap.sh", err)
				return false
			}
			if len(fields) > 0 && path.Base(fields[0]) == "bootstrap.sh" {
				args, found = fields[1:], true
				return false
			}
		}
		return true
	})
	return args, found, walkErr
}

// runBootstrapSh is bootstrap.sh's argument handling and kubelet setup.
func runBootstrapSh(args []string) (*Kubelet, error) {
	opts := map[string]string{}
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-h" || a == "--help" {
			return nil, errors.New("bootstrap.sh was called with --help: it prints its usage and exits 1")
		}
		if bootstrapValueOptions[a] {
			v := ""
			if i+1 < len(args) {
				v = args[i+1]
			}
			opts[a] = v
			i++
			continue
		}
		positional = append(positional, a)
	}
	if len(positional) == 0 || positional[0] == "" {
		return nil, errors.New("bootstrap.sh: You must specify a cluster name (the first positional argument)")
	}
	k := &Kubelet{ClusterName: positional[0], APIServerEndpoint: opts["--apiserver-endpoint"]}
	if extra := opts["--kubelet-extra-args"]; extra != "" {
		// systemd splits KUBELET_EXTRA_ARGS at whitespace and removes
		// quotes, as the shell does.
		words, err := splitWords(extra)
		if err != nil {
			return nil, fmt.Errorf("kubelet cannot parse --kubelet-extra-args %q: %w", extra, err)
		}
		if err := k.applyFlags(words); err != nil {
			return nil, fmt.Errorf("kubelet exits at start: %w", err)
		}
	}
	return k, nil
}

func splitWords(s string) ([]string, error) {
	file, err := syntax.NewParser().Parse(strings.NewReader("x "+s), "")
	if err != nil {
		return nil, err
	}
	if len(file.Stmts) != 1 {
		return nil, errors.New("more than one command")
	}
	call, ok := file.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok {
		return nil, errors.New("not a list of words")
	}
	fields, err := expand.Fields(&expand.Config{Env: expand.ListEnviron()}, call.Args...)
	if err != nil {
		return nil, err
	}
	return fields[1:], nil
}

// validateNodeConfig imitates nodeadm's ValidateNodeConfig (its
// internal/api package cannot be imported): the same checks in the same
// order with nodeadm's own messages. package nodeadm runs the real one.
//
//nolint:staticcheck // ST1005: nodeadm's messages, verbatim.
func validateNodeConfig(c userdata.NodeConfigCluster) error {
	switch {
	case c.Name == "":
		return errors.New("Name is missing in cluster configuration")
	case c.APIServerEndpoint == "":
		return errors.New("Apiserver endpoint is missing in cluster configuration")
	case c.CertificateAuthority == "":
		return errors.New("Certificate authority is missing in cluster configuration")
	case c.CIDR == "":
		return errors.New("CIDR is missing in cluster configuration")
	}
	return nil
}

// parseAL2023 merges the NodeConfig parts in order, as nodeadm does:
// scalars of later documents win, kubelet config maps merge, flags append.
func parseAL2023(s string) (*Kubelet, error) {
	ps, err := parts(s)
	if err != nil {
		return nil, err
	}
	merged := map[string]any{}
	var flags []string
	n := 0
	for i, p := range ps {
		mt := p.MediaType()
		if mt != userdata.ContentTypeNodeConfig && !(mt == "text/x-not-multipart" && !strings.HasPrefix(p.Body, "#!")) {
			continue
		}
		doc := map[string]any{}
		if err := yaml.Unmarshal([]byte(p.Body), &doc); err != nil {
			return nil, fmt.Errorf("nodeadm cannot read NodeConfig part %d: %w", i+1, err)
		}
		if doc["kind"] != "NodeConfig" {
			if mt != userdata.ContentTypeNodeConfig {
				continue // a bare document that is no NodeConfig: nodeadm ignores it
			}
			return nil, fmt.Errorf("nodeadm: part %d has kind %v, not NodeConfig", i+1, doc["kind"])
		}
		n++
		if spec, ok := doc["spec"].(map[string]any); ok {
			if kl, ok := spec["kubelet"].(map[string]any); ok {
				if fl, ok := kl["flags"].([]any); ok {
					for _, f := range fl {
						flags = append(flags, fmt.Sprint(f))
					}
					delete(kl, "flags")
				}
			}
			mergeMaps(merged, spec)
		}
	}
	if n == 0 {
		return nil, errors.New("nodeadm found no NodeConfig in the user data, so it never configures or starts the kubelet")
	}
	nc := &userdata.NodeConfig{}
	b, err := yaml.Marshal(map[string]any{"spec": merged})
	if err == nil {
		err = yaml.Unmarshal(b, nc)
	}
	if err != nil {
		return nil, fmt.Errorf("nodeadm cannot read the merged NodeConfig: %w", err)
	}
	c := nc.Spec.Cluster
	if err := validateNodeConfig(c); err != nil {
		return nil, fmt.Errorf("nodeadm init fails validating the configuration: %w", err)
	}
	k := &Kubelet{ClusterName: c.Name, APIServerEndpoint: c.APIServerEndpoint}
	config := nc.Spec.Kubelet.Config
	if v, ok := config["maxPods"]; ok {
		n, err := strconv.ParseInt(fmt.Sprint(v), 10, 32)
		if err != nil {
			return nil, fmt.Errorf("kubelet exits at start: invalid maxPods %v", v)
		}
		k.MaxPods = ptrInt32(int32(n))
	}
	if raw, ok := config["registerWithTaints"]; ok {
		var taints []corev1.Taint
		b, _ := yaml.Marshal(raw)
		if err := yaml.Unmarshal(b, &taints); err != nil {
			return nil, fmt.Errorf("kubelet exits at start: invalid registerWithTaints: %w", err)
		}
		for _, t := range taints {
			if _, err := ParseTaint(taintString(t)); err != nil {
				return nil, fmt.Errorf("kubelet exits at start: registerWithTaints: %w", err)
			}
		}
		k.Taints = taints
	}
	k.KubeReserved = stringMap(config["kubeReserved"])
	k.SystemReserved = stringMap(config["systemReserved"])
	k.EvictionHard = stringMap(config["evictionHard"])
	// Flags win over the configuration file.
	if err := k.applyFlags(flags); err != nil {
		return nil, fmt.Errorf("kubelet exits at start: %w", err)
	}
	return k, nil
}

func taintString(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// mergeMaps merges src into dst: maps recursively, anything else replaced.
func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeMaps(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}

func stringMap(v any) map[string]string {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// parseBottlerocket reads the TOML settings as Bottlerocket's settings API
// does at first boot.
func parseBottlerocket(s string) (*Kubelet, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal([]byte(s), &doc); err != nil {
		return nil, fmt.Errorf("Bottlerocket rejects the user data, it is not TOML: %w", err)
	}
	settings, _ := doc["settings"].(map[string]any)
	k8s, _ := settings["kubernetes"].(map[string]any)
	name, _ := k8s["cluster-name"].(string)
	endpoint, _ := k8s["api-server"].(string)
	if name == "" || endpoint == "" {
		return nil, errors.New("Bottlerocket: settings.kubernetes.cluster-name and api-server are required to start the kubelet")
	}
	k := &Kubelet{ClusterName: name, APIServerEndpoint: endpoint}
	if labels, ok := k8s["node-labels"].(map[string]any); ok {
		k.Labels = map[string]string{}
		for key, v := range labels {
			if err := parseLabels(key+"="+fmt.Sprint(v), k.Labels); err != nil {
				return nil, fmt.Errorf("Bottlerocket rejects settings.kubernetes.node-labels: %w", err)
			}
		}
	}
	if taints, ok := k8s["node-taints"].(map[string]any); ok {
		for _, key := range sortedKeys(taints) {
			list, ok := taints[key].([]any)
			if !ok {
				list = []any{taints[key]}
			}
			for _, entry := range list {
				t, err := ParseTaint(key + "=" + fmt.Sprint(entry))
				if err != nil {
					return nil, fmt.Errorf("Bottlerocket rejects settings.kubernetes.node-taints: %w", err)
				}
				k.Taints = append(k.Taints, t)
			}
		}
	}
	if v, ok := k8s["max-pods"].(int64); ok {
		k.MaxPods = ptrInt32(int32(v))
	}
	k.KubeReserved = stringMap(k8s["kube-reserved"])
	k.SystemReserved = stringMap(k8s["system-reserved"])
	k.EvictionHard = stringMap(k8s["eviction-hard"])
	return k, nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
