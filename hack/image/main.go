// Command image builds joiner's container image without a Docker daemon:
// a static binary on an empty base, run as the nonroot user 65532, written
// as a tar that `docker load` and `podman load` read (and that is an OCI
// image layout too). The build is reproducible: every timestamp is
// SOURCE_DATE_EPOCH (0 when unset), so the same sources, version and
// revision give the same digest on any machine.
//
//	go run ./hack/image -o bin/joiner-image.tar -tag ghcr.io/joiner-dev/joiner:v0.1.0
//
// It prints the image digest on stdout. `make image` runs it with the
// commit's time and hash.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	out := flag.String("o", "bin/joiner-image.tar", "Where to write the image tarball")
	tag := flag.String("tag", "ghcr.io/joiner-dev/joiner:dev", "Name and tag the loaded image gets")
	arch := flag.String("arch", runtime.GOARCH, "GOARCH of the image (amd64, arm64)")
	version := flag.String("version", "dev", "Version stamped in the binary and the image labels")
	revision := flag.String("revision", "", "Source revision (commit hash) recorded in the image labels")
	flag.Parse()

	created := time.Unix(0, 0)
	if epoch := os.Getenv("SOURCE_DATE_EPOCH"); epoch != "" {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds: %w", epoch, err)
		}
		created = time.Unix(sec, 0)
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", *tag, err)
	}
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "joiner-image")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	binary := filepath.Join(tmp, "joiner")
	if err := BuildBinary(root, binary, *arch, *version); err != nil {
		return err
	}
	img, err := Build(Spec{Binary: binary, Arch: *arch, Version: *version, Revision: *revision, Created: created})
	if err != nil {
		return err
	}
	if err := WriteTarball(*out, img, ref, created); err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest)
	fmt.Fprintf(os.Stderr, "image: wrote %s (%s, linux/%s); load it with `docker load -i %s` or `podman load -i %s`\n", *out, ref, *arch, *out, *out)
	return nil
}
