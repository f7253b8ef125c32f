// Package nodeadm runs the AL2023 image's own node agent, nodeadm
// (github.com/awslabs/amazon-eks-ami/nodeadm, built by the separate module
// under hack/nodeadm), as the judge of the user data joiner renders.
//
// `nodeadm init` is run for real: it reads the user data from an instance
// metadata service the local EC2 serves (localec2.ServeIMDS), merges the
// NodeConfig parts, enriches the configuration from the instance identity
// document, validates it (ValidateNodeConfig: name, API server endpoint,
// certificate authority, CIDR) and only then creates its systemd daemon
// manager, which fails here since no systemd runs. Getting that far is
// what "nodeadm accepts the user data" means; what comes after
// (containerd and kubelet configuration, starting them) is not run.
//
// It is test and demo machinery: joiner's controllers never import it.
package nodeadm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/joiner-dev/joiner/pkg/cloudprovider/aws/localec2"
)

// EnvBinary names an already built nodeadm to use instead of building one.
const EnvBinary = "JOINER_NODEADM"

// Refusal is nodeadm refusing the user data before it touches any daemon:
// the NodeConfig could not be read, or ValidateNodeConfig failed. Reason
// is nodeadm's own message.
type Refusal struct {
	// Phase is the nodeadm step that failed: "loading" or "validating".
	Phase  string
	Reason string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("nodeadm init refuses the user data (%s the configuration): %s", r.Phase, r.Reason)
}

// IsRefusal reports whether err is (or wraps) a *Refusal.
func IsRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

// nodeadm's log messages (cmd/nodeadm/init) that mark its steps.
const (
	msgLoading    = "Loading configuration.."
	msgEnriching  = "Enriching configuration.."
	msgValidating = "Validating configuration.."
	// msgDaemons comes right after a successful validation.
	msgDaemons = "Creating daemon manager.."
	msgFailed  = "Command failed"
)

// Init runs `nodeadm init` for the instance md describes, its user data
// included, and returns nil when nodeadm accepted the configuration (got
// past its validation), a *Refusal when it refused it, and any other
// error when it could not be run or failed before judging (instance
// metadata, which is this harness's fault, not the user data's).
func Init(ctx context.Context, binary string, md localec2.InstanceMetadata) error {
	imds, err := localec2.ServeIMDS(md)
	if err != nil {
		return err
	}
	defer func() { _ = imds.Close() }()
	// Skipping both phases keeps nodeadm from writing containerd's and
	// the kubelet's configuration or starting them, should the host run
	// systemd.
	args := []string{binary, "init", "--skip", "config", "--skip", "run"}
	// nodeadm insists on uid 0; a user namespace gives it that without
	// privileges.
	if os.Geteuid() != 0 {
		args = append([]string{"unshare", "--map-root-user"}, args...)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = append(cleanEnv(), "AWS_EC2_METADATA_SERVICE_ENDPOINT="+imds.Endpoint, "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE=IPv4")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	var last, failure string
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg   string `json:"msg"`
			Error string `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch line.Msg {
		case msgDaemons:
			return nil
		case msgFailed:
			failure = line.Error
		case msgLoading, msgEnriching, msgValidating:
			last = line.Msg
		}
	}
	switch {
	case failure != "" && last == msgValidating:
		return &Refusal{Phase: "validating", Reason: failure}
	case failure != "" && last == msgLoading:
		return &Refusal{Phase: "loading", Reason: failure}
	case failure != "":
		return fmt.Errorf("nodeadm init failed before judging the user data (after %q): %s", last, failure)
	default:
		return fmt.Errorf("nodeadm init ended without a verdict (%v): %s", runErr, tail(out.String()))
	}
}

// cleanEnv is the process environment without AWS settings that would
// point nodeadm's SDK elsewhere than the instance's metadata service.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "AWS_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Binary returns a nodeadm executable: $JOINER_NODEADM when set, else
// bin/nodeadm of the repository holding the working directory, built
// from hack/nodeadm when missing (the first build downloads nodeadm and
// its dependencies from the Go module proxy and takes minutes; later ones
// come from Go's build cache).
func Binary(ctx context.Context) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvBinary, p, err)
		}
		return p, nil
	}
	buildOnce.Do(func() { built, buildErr = build(ctx) })
	return built, buildErr
}

func build(ctx context.Context) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "nodeadm")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", fmt.Errorf("building nodeadm: %w", err)
	}
	// Build beside the target and rename: test binaries of several
	// packages may build at once.
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, "github.com/awslabs/amazon-eks-ami/nodeadm/cmd/nodeadm")
	cmd.Dir = filepath.Join(root, "hack", "nodeadm")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building nodeadm (go build in hack/nodeadm): %w: %s", err, tail(string(out)))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("building nodeadm: %w", err)
	}
	return bin, nil
}

// repoRoot is the nearest directory above the working directory holding
// hack/nodeadm/go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "nodeadm", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("building nodeadm: no hack/nodeadm/go.mod above the working directory; set %s", EnvBinary)
		}
		dir = parent
	}
}
