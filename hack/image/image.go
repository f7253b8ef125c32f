package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// Where things are inside the image. The binary sits at the root, as in
// Karpenter's ko-built image, and the user is distroless' nonroot.
const (
	binaryPath = "joiner"
	caPath     = "etc/ssl/certs/ca-certificates.crt"
	nonRootUID = 65532
)

// Spec is everything the image is made of: the same Spec and the same
// sources give the same image digest.
type Spec struct {
	// Binary is the path of a static linux joiner binary (BuildBinary).
	Binary string
	// Arch is the binary's GOARCH, recorded in the image config.
	Arch string
	// Version and Revision go into the OCI labels.
	Version  string
	Revision string
	// Created is the one timestamp of the image: config, history and every
	// file's mtime (SOURCE_DATE_EPOCH, the commit time).
	Created time.Time
}

// BuildBinary compiles ./cmd/joiner as a static, reproducible binary: no
// cgo (so the empty base needs no libc), -trimpath (no checkout path in
// it), no build id and no VCS stamp (a dirty tree must not change it).
func BuildBinary(repoRoot, out, arch, version string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false",
		"-ldflags", "-s -w -buildid= -X main.version="+version,
		"-o", out, "./cmd/joiner")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building joiner for linux/%s: %w\n%s", arch, err, output)
	}
	return nil
}

// Build assembles the image: one layer on an empty base holding the
// binary, CA certificates, a passwd/group naming the nonroot user and a
// writable /tmp; the config runs `joiner controller` as 65532.
func Build(s Spec) (v1.Image, error) {
	binary, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading binary: %w", err)
	}
	layerTar, err := rootFS(binary, s.Created)
	if err != nil {
		return nil, err
	}
	// Compressed once here (Go's gzip is deterministic for a given level and
	// the header carries no time or name); the layer hashes these bytes.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(layerTar); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz.Bytes())), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making layer: %w", err)
	}
	created := v1.Time{Time: s.Created.UTC()}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "hack/image", Comment: "joiner " + s.Version},
	})
	if err != nil {
		return nil, fmt.Errorf("appending layer: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = created
	cfg.OS = "linux"
	cfg.Architecture = s.Arch
	cfg.Config.User = fmt.Sprintf("%d:%d", nonRootUID, nonRootUID)
	cfg.Config.Entrypoint = []string{"/" + binaryPath}
	cfg.Config.Cmd = []string{"controller"}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/", "SSL_CERT_FILE=/" + caPath}
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "joiner",
		"org.opencontainers.image.description": "A Kubernetes node autoscaler, API-compatible with Karpenter",
		"org.opencontainers.image.source":      "https://github.com/joiner-dev/joiner",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.revision":    s.Revision,
		"org.opencontainers.image.created":     created.Format(time.RFC3339),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("setting config: %w", err)
	}
	return img, nil
}

// rootFS is the layer's tar: entries sorted, every owner, mode and mtime
// fixed, so the bytes depend on the inputs only.
func rootFS(binary []byte, mtime time.Time) ([]byte, error) {
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	type entry struct {
		mode  int64
		uid   int
		body  []byte
		isDir bool
	}
	files := map[string]entry{
		"etc/":           {mode: 0o755, isDir: true},
		"etc/ssl/":       {mode: 0o755, isDir: true},
		"etc/ssl/certs/": {mode: 0o755, isDir: true},
		caPath:           {mode: 0o644, body: ca},
		"etc/passwd": {mode: 0o644, body: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonRootUID, nonRootUID))},
		"etc/group":     {mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", nonRootUID))},
		"home/":         {mode: 0o755, isDir: true},
		"home/nonroot/": {mode: 0o700, isDir: true, uid: nonRootUID},
		"tmp/":          {mode: 0o1777, isDir: true},
		binaryPath:      {mode: 0o755, body: binary},
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := files[n]
		h := &tar.Header{Name: n, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if e.isDir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing %s: %w", n, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("writing %s: %w", n, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// caBundle is the Mozilla NSS root store as pinned by go.sum
// (golang.org/x/crypto/x509roots/fallback), in PEM: a version bump is a
// reviewed go.mod change, never whatever the build machine has. Roots
// that NSS trusts only with constraints X.509 cannot express (a
// distrust-after date) are left out, as Debian's ca-certificates does.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, fmt.Errorf("the fallback root bundle is empty")
	}
	return buf.Bytes(), nil
}

// WriteTarball writes img as one tar file that is both an OCI image layout
// (oci-layout, index.json, blobs/) and a `docker save` archive
// (manifest.json pointing at the same blobs), so `docker load`, `podman
// load`, containerd's `ctr import` and skopeo all read it. Entries are
// sorted with fixed headers: the same image gives the same bytes.
func WriteTarball(path string, img v1.Image, ref name.Tag, mtime time.Time) error {
	files := map[string][]byte{"oci-layout": []byte(ociLayout)}
	if err := addImageBlobs(files, img); err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	var layerPaths []string
	for _, l := range m.Layers {
		layerPaths = append(layerPaths, blobPath(l.Digest))
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIManifestSchema1,
			Size:      int64(len(files[blobPath(digest)])),
			Digest:    digest,
			Annotations: map[string]string{
				// containerd (and Docker on it) name the image from this one,
				// the OCI layout readers from ref.name.
				"io.containerd.image.name":          ref.Name(),
				"org.opencontainers.image.ref.name": ref.TagStr(),
			},
		}},
	})
	if err != nil {
		return err
	}
	dockerManifest, err := json.Marshal([]tarball.Descriptor{{
		Config:   blobPath(m.Config.Digest),
		RepoTags: []string{ref.Name()},
		Layers:   layerPaths,
	}})
	if err != nil {
		return err
	}
	files["index.json"], files["manifest.json"] = index, dockerManifest
	return writeArchive(path, files, mtime)
}

const ociLayout = `{"imageLayoutVersion":"1.0.0"}`

// Index gathers one image per platform into an OCI image index, in the
// order given (the same images in the same order give the same digest),
// each under the platform its config names. Two images of one platform
// are an error.
func Index(images []v1.Image) (v1.ImageIndex, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	adds := make([]mutate.IndexAddendum, 0, len(images))
	for _, img := range images {
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		platform := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture}
		if seen[platform.String()] {
			return nil, fmt.Errorf("two images for %s", platform)
		}
		seen[platform.String()] = true
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{MediaType: types.OCIManifestSchema1, Platform: &platform}})
	}
	if len(adds) == 0 {
		return nil, fmt.Errorf("no image to index")
	}
	return mutate.AppendManifests(idx, adds...), nil
}

// WriteIndexTarball writes idx as an OCI image layout in one tar file
// (oci-archive): index.json names the multi-platform index, whose blobs
// and every platform's manifest, config and layer follow. podman load,
// skopeo (oci-archive:) and crane read it and pick the platform; entries
// are sorted with fixed headers, so the same index gives the same bytes.
func WriteIndexTarball(path string, idx v1.ImageIndex, ref name.Tag, mtime time.Time) error {
	raw, err := idx.RawManifest()
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	files := map[string][]byte{"oci-layout": []byte(ociLayout), blobPath(digest): raw}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := addImageBlobs(files, img); err != nil {
			return err
		}
	}
	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: types.OCIImageIndex,
			Size:      int64(len(raw)),
			Digest:    digest,
			Annotations: map[string]string{
				"io.containerd.image.name":          ref.Name(),
				"org.opencontainers.image.ref.name": ref.TagStr(),
			},
		}},
	})
	if err != nil {
		return err
	}
	files["index.json"] = index
	return writeArchive(path, files, mtime)
}

// addImageBlobs adds an image's manifest, config and layers to files,
// under their blob paths.
func addImageBlobs(files map[string][]byte, img v1.Image) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	files[blobPath(digest)], files[blobPath(configName)] = manifest, config
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		files[blobPath(d)] = b
	}
	return nil
}

// writeArchive writes files as a tar at path: entries sorted, parent
// directories first, every header fixed, so the bytes depend on files only.
func writeArchive(path string, files map[string][]byte, mtime time.Time) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	dirs := map[string]bool{}
	for _, n := range names {
		// Parent directories first, once each, as docker save writes them.
		for i := range n {
			if n[i] != '/' || dirs[n[:i+1]] {
				continue
			}
			dirs[n[:i+1]] = true
			if err := tw.WriteHeader(&tar.Header{Name: n[:i+1], Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime.UTC(), Format: tar.FormatPAX}); err != nil {
				f.Close()
				return err
			}
		}
		h := &tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[n])), ModTime: mtime.UTC(), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			f.Close()
			return err
		}
		if _, err := tw.Write(files[n]); err != nil {
			f.Close()
			return err
		}
	}
	if err := tw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func blobPath(h v1.Hash) string {
	return strings.Join([]string{"blobs", h.Algorithm, h.Hex}, "/")
}
