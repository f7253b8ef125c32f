// Command image builds joiner's container image without a Docker daemon:
// a static binary on an empty base, run as the nonroot user 65532, for
// linux/amd64 and linux/arm64 (CGO_ENABLED=0 cross-compiles). It writes
//
//   - one tar per platform (bin/joiner-image-linux-amd64.tar, ...) that
//     `docker load` and `podman load` read (a docker save archive that is
//     an OCI image layout too), and
//   - the multi-platform OCI image index as an OCI layout in one tar (the
//     -o path), for `skopeo copy oci-archive:` / `crane push` to a
//     registry, and `podman load`, which picks the host's platform.
//
// The build is reproducible: every timestamp is SOURCE_DATE_EPOCH (0 when
// unset), so the same sources, version and revision give the same digests
// on any machine.
//
//	go run ./hack/image -o bin/joiner-image.tar -tag ghcr.io/joiner-dev/joiner:v0.1.0
//
// It prints the index digest on stdout. `make image` runs it with the
// commit's time and hash.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
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
	archs := flag.String("arch", "amd64,arm64", "GOARCHs of the image's platforms, comma separated (linux/<arch> each)")
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
	defer func() {
		if err := os.RemoveAll(tmp); err != nil {
			fmt.Fprintln(os.Stderr, "removing", tmp+":", err)
		}
	}()
	var images []v1.Image
	for _, arch := range strings.Split(*archs, ",") {
		binary := filepath.Join(tmp, "joiner-"+arch)
		if err := BuildBinary(root, binary, arch, *version); err != nil {
			return err
		}
		img, err := Build(Spec{Binary: binary, Arch: arch, Version: *version, Revision: *revision, Created: created})
		if err != nil {
			return err
		}
		path := PlatformPath(*out, arch)
		if err := WriteTarball(path, img, ref, created); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "image: wrote %s (%s, linux/%s, %s); load it with `docker load -i %s` or `podman load -i %s`\n", path, ref, arch, digest, path, path)
		images = append(images, img)
	}
	idx, err := Index(images)
	if err != nil {
		return err
	}
	if err := WriteIndexTarball(*out, idx, ref, created); err != nil {
		return fmt.Errorf("writing %s: %w", *out, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest)
	fmt.Fprintf(os.Stderr, "image: wrote %s, the OCI image index of %s for %s; push it with `skopeo copy oci-archive:%s docker://%s`\n", *out, ref, *archs, *out, ref)
	return nil
}

// PlatformPath is where the image of one arch goes beside the index at
// out: bin/joiner-image.tar gives bin/joiner-image-linux-arm64.tar.
func PlatformPath(out, arch string) string {
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + "-linux-" + arch + ext
}
