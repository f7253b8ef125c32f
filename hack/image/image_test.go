package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds the image as `make image` does, twice, and checks that
// it is reproducible, that both readers of the tarball (docker load's
// manifest.json and the OCI layout) see the same image, that its config
// runs joiner as nonroot, and that the binary in its layer runs.
func TestImage(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "joiner")
	start := time.Now()
	if err := BuildBinary(repoRoot(t), binary, runtime.GOARCH, "v9.9.9-test"); err != nil {
		t.Fatal(err)
	}
	t.Logf("static binary built in %s", time.Since(start).Round(time.Millisecond))
	ref, err := name.NewTag("example.com/joiner:v9.9.9-test")
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{Binary: binary, Arch: runtime.GOARCH, Version: "v9.9.9-test", Revision: "abc123", Created: time.Unix(1700000000, 0)}

	var built v1.Image
	build := func(s Spec, path string) v1.Hash {
		t.Helper()
		img, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteTarball(path, img, ref, s.Created); err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		built = img
		return d
	}
	first := build(spec, filepath.Join(dir, "a.tar"))
	wantID, _ := built.ConfigName()
	second := build(spec, filepath.Join(dir, "b.tar"))
	if first != second {
		t.Fatalf("same inputs, different digests: %s and %s", first, second)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.tar"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.tar"))
	if string(a) != string(b) {
		t.Fatal("same inputs, different tarball bytes")
	}
	// Each input is in the digest (a small stand-in binary keeps this cheap).
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("#!/bin/false\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := spec
	base.Binary = small
	baseDigest := build(base, filepath.Join(dir, "c.tar"))
	for what, change := range map[string]func(*Spec){
		"SOURCE_DATE_EPOCH": func(s *Spec) { s.Created = s.Created.Add(time.Second) },
		"version":           func(s *Spec) { s.Version = "v9.9.10" },
		"revision":          func(s *Spec) { s.Revision = "def456" },
		"arch":              func(s *Spec) { s.Arch = "arm64" },
	} {
		changed := base
		change(&changed)
		if d := build(changed, filepath.Join(dir, "d.tar")); d == baseDigest {
			t.Errorf("a different %s gave the same digest %s", what, d)
		}
	}
	t.Logf("digest %s, twice", first)

	// docker load reads manifest.json; the image ID it reports is the
	// config's digest.
	img, err := tarball.ImageFromPath(filepath.Join(dir, "a.tar"), &ref)
	if err != nil {
		t.Fatalf("reading the tarball as docker load does: %v", err)
	}
	if id, _ := img.ConfigName(); id != wantID {
		t.Errorf("manifest.json's image has ID %s, want %s", id, wantID)
	}
	// podman, containerd and skopeo read the OCI layout.
	layoutDir := filepath.Join(dir, "layout")
	untar(t, filepath.Join(dir, "a.tar"), layoutDir)
	index, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatalf("reading the OCI layout: %v", err)
	}
	im, err := index.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != first ||
		im.Manifests[0].Annotations["io.containerd.image.name"] != ref.Name() {
		t.Fatalf("index.json = %+v, want one manifest %s named %s", im.Manifests, first, ref.Name())
	}
	if _, err := index.Image(first); err != nil {
		t.Fatalf("the OCI layout's image %s: %v", first, err)
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, got, want string }{
		{"user", cfg.Config.User, "65532:65532"},
		{"entrypoint", strings.Join(cfg.Config.Entrypoint, " "), "/joiner"},
		{"cmd", strings.Join(cfg.Config.Cmd, " "), "controller"},
		{"os/arch", cfg.OS + "/" + cfg.Architecture, "linux/" + runtime.GOARCH},
		{"created", cfg.Created.UTC().Format(time.RFC3339), "2023-11-14T22:13:20Z"},
		{"version label", cfg.Config.Labels["org.opencontainers.image.version"], "v9.9.9-test"},
		{"revision label", cfg.Config.Labels["org.opencontainers.image.revision"], "abc123"},
		{"source label", cfg.Config.Labels["org.opencontainers.image.source"], "https://github.com/joiner-dev/joiner"},
	} {
		if c.got != c.want {
			t.Errorf("image config %s = %q, want %q", c.what, c.got, c.want)
		}
	}

	// The files of the one layer, and the binary run from it.
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, got %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	extracted := filepath.Join(dir, "from-layer")
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if h.Name == binaryPath {
			f, err := os.OpenFile(extracted, os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(f, tr); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		if h.Name == caPath {
			body, _ := io.ReadAll(tr)
			if n := strings.Count(string(body), "BEGIN CERTIFICATE"); n < 100 {
				t.Errorf("%s holds %d certificates, want the NSS store (over 100)", caPath, n)
			}
		}
		if !h.ModTime.Equal(spec.Created) {
			t.Errorf("%s has mtime %s, want %s", h.Name, h.ModTime, spec.Created)
		}
	}
	for _, want := range []string{binaryPath, caPath, "etc/passwd", "etc/group", "tmp/", "home/nonroot/"} {
		if files[want] == nil {
			t.Errorf("the layer has no %s", want)
		}
	}
	if h := files[binaryPath]; h != nil && h.Mode&0o111 == 0 {
		t.Errorf("%s is not executable (mode %o)", binaryPath, h.Mode)
	}
	out, err := exec.Command(extracted, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("joiner version from the layer: %v\n%s", err, out)
	}
	if want := "joiner v9.9.9-test "; !strings.HasPrefix(string(out), want) || !strings.Contains(string(out), "linux/"+runtime.GOARCH) {
		t.Errorf("joiner version printed %q, want it to start with %q and name linux/%s", out, want, runtime.GOARCH)
	}
	// Static: no program interpreter (dynamic loader) in the ELF.
	if elf, _ := os.ReadFile(extracted); strings.Contains(string(elf), "/lib64/ld-linux") || strings.Contains(string(elf), "/lib/ld-") {
		t.Error("the binary asks for a dynamic loader; the empty base has none (CGO_ENABLED=0 missing?)")
	}
	manifest, _ := json.Marshal(cfg.Config)
	t.Logf("config: %s", manifest)

	// The tarball as users load it.
	loaded := podmanLoad(t, filepath.Join(dir, "a.tar"), ref.Name())
	if loaded.Config.User != "65532:65532" || strings.Join(loaded.Config.Entrypoint, " ") != "/joiner" ||
		strings.Join(loaded.Config.Cmd, " ") != "controller" || loaded.Os+"/"+loaded.Architecture != "linux/"+runtime.GOARCH {
		t.Errorf("podman loaded %+v, want user 65532:65532, entrypoint /joiner controller, linux/%s", loaded, runtime.GOARCH)
	}
}

// untar extracts the tarball at path into dir.
func untar(t *testing.T, path, dir string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// repoRoot is the directory of go.mod above the test's directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// TestIndex assembles the multi-platform index from small stand-in
// binaries (the real cross-compiled ones are `make image`'s; TestImage
// builds the host's) and checks it is reproducible, names each platform,
// refuses two images of one platform, and that its OCI layout tarball
// holds every platform's image, readable as go-containerregistry's
// layout reader (skopeo's and podman's format) reads it.
func TestIndex(t *testing.T) {
	dir := t.TempDir()
	ref, err := name.NewTag("example.com/joiner:v9.9.9-test")
	if err != nil {
		t.Fatal(err)
	}
	created := time.Unix(1700000000, 0)
	build := func(arch, body string) v1.Image {
		t.Helper()
		bin := filepath.Join(dir, "joiner-"+arch)
		if err := os.WriteFile(bin, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		img, err := Build(Spec{Binary: bin, Arch: arch, Version: "v9.9.9-test", Created: created})
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
	write := func(images []v1.Image, path string) v1.Hash {
		t.Helper()
		idx, err := Index(images)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteIndexTarball(path, idx, ref, created); err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	amd, arm := build("amd64", "amd64 binary"), build("arm64", "arm64 binary")
	first := write([]v1.Image{amd, arm}, filepath.Join(dir, "a.tar"))
	second := write([]v1.Image{build("amd64", "amd64 binary"), build("arm64", "arm64 binary")}, filepath.Join(dir, "b.tar"))
	if first != second {
		t.Fatalf("same inputs, different index digests: %s and %s", first, second)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "a.tar"))
	b, _ := os.ReadFile(filepath.Join(dir, "b.tar"))
	if string(a) != string(b) {
		t.Fatal("same inputs, different index tarball bytes")
	}
	if d := write([]v1.Image{amd, build("arm64", "another arm64 binary")}, filepath.Join(dir, "c.tar")); d == first {
		t.Error("a different arm64 binary gave the same index digest")
	}
	if _, err := Index([]v1.Image{amd, build("amd64", "x")}); err == nil {
		t.Error("two amd64 images made an index")
	}

	layoutDir := filepath.Join(dir, "layout")
	untar(t, filepath.Join(dir, "a.tar"), layoutDir)
	top, err := layout.ImageIndexFromPath(layoutDir)
	if err != nil {
		t.Fatalf("reading the OCI layout: %v", err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest != first || tm.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" ||
		tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != ref.TagStr() {
		t.Fatalf("index.json = %+v, want the index %s tagged %s", tm.Manifests, first, ref.TagStr())
	}
	idx, err := top.ImageIndex(first)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]v1.Image{"amd64": amd, "arm64": arm}
	if len(im.Manifests) != len(want) {
		t.Fatalf("the index has %d manifests, want %d", len(im.Manifests), len(want))
	}
	for _, d := range im.Manifests {
		if d.Platform == nil || d.Platform.OS != "linux" || want[d.Platform.Architecture] == nil {
			t.Fatalf("manifest %s has platform %+v", d.Digest, d.Platform)
		}
		wantDigest, _ := want[d.Platform.Architecture].Digest()
		if d.Digest != wantDigest {
			t.Errorf("linux/%s is %s in the index, want the image built for it, %s", d.Platform.Architecture, d.Digest, wantDigest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatalf("linux/%s's image is not in the layout: %v", d.Platform.Architecture, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != d.Platform.Architecture || cfg.Config.User != "65532:65532" {
			t.Errorf("linux/%s's config: arch %s, user %s", d.Platform.Architecture, cfg.Architecture, cfg.Config.User)
		}
		layers, err := img.Layers()
		if err != nil || len(layers) != 1 {
			t.Fatalf("linux/%s: %d layers (%v), want 1", d.Platform.Architecture, len(layers), err)
		}
		rc, err := layers[0].Compressed()
		if err == nil {
			_, err = io.Copy(io.Discard, rc)
			rc.Close()
		}
		if err != nil {
			t.Errorf("linux/%s's layer blob: %v", d.Platform.Architecture, err)
		}
	}
	// podman loads the index and keeps the host's platform (amd64 here,
	// arm64 on Graviton: both are in the index).
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		loaded := podmanLoad(t, filepath.Join(dir, "a.tar"), ref.Name())
		if loaded.Architecture != runtime.GOARCH || loaded.Config.User != "65532:65532" || strings.Join(loaded.Config.Entrypoint, " ") != "/joiner" {
			t.Errorf("podman loaded the index as %+v, want linux/%s run as 65532:65532 from /joiner", loaded, runtime.GOARCH)
		}
	}
	if got := PlatformPath("bin/joiner-image.tar", "arm64"); got != "bin/joiner-image-linux-arm64.tar" {
		t.Errorf("PlatformPath = %s", got)
	}
}
