package test

import (
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ChromiumPath is Debian's chromium, which hack/apt-install.sh chromium installs.
const ChromiumPath = "/usr/bin/chromium"

// BrowserWindow is the window headless Chromium renders in.
const (
	BrowserWidth  = 1280
	BrowserHeight = 900
)

// Browse loads url in headless Chromium and returns the DOM as rendered,
// and the path of a PNG screenshot written to the test's artifact
// directory (kept with `go test -artifacts`; the path is logged). It fails
// the test, never skips it, when Chromium is missing.
func Browse(t *testing.T, url string) (dom, screenshot string) {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		t.Fatalf("headless Chromium is missing at %s: run `bash hack/apt-install.sh chromium` (it runs apt-get install -y chromium; `make test` does it first)", ChromiumPath)
	}
	profile := t.TempDir()
	screenshot = filepath.Join(t.ArtifactDir(), "screenshot.png")
	start := time.Now()
	dom = chromium(t, profile, "--dump-dom", url)
	chromium(t, profile, "--screenshot="+screenshot, url)
	t.Logf("headless Chromium rendered %s in %.1fs; screenshot: %s", url, time.Since(start).Seconds(), screenshot)
	return dom, screenshot
}

// chromium runs one headless Chromium with no network of its own beyond
// url, in a throwaway profile, and returns its stdout.
func chromium(t *testing.T, profile, action, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ChromiumPath,
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+profile, fmt.Sprintf("--window-size=%d,%d", BrowserWidth, BrowserHeight),
		action, url)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s %s: %v\n%s", action, url, err, stderr.String())
	}
	return stdout.String()
}

// CheckScreenshot fails the test unless path is a PNG of the browser
// window's size showing more than a blank page: at least minColours
// distinct colours.
func CheckScreenshot(t *testing.T, path string, minColours int) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding screenshot %s: %v", path, err)
	}
	b := img.Bounds()
	if b.Dx() != BrowserWidth || b.Dy() != BrowserHeight {
		t.Errorf("screenshot %s is %dx%d, want %dx%d", path, b.Dx(), b.Dy(), BrowserWidth, BrowserHeight)
	}
	colours := map[[4]uint32]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, bl, a}]++
		}
	}
	if len(colours) < minColours {
		t.Errorf("screenshot %s has %d distinct colours, want at least %d: the page looks blank", path, len(colours), minColours)
	}
	return img
}

// CountColour counts the pixels of img within a small distance of the
// colour r, g, b (8 bits each), so a test can see that a drawn element is
// on screen.
func CountColour(img image.Image, r, g, b uint8) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near8(pr>>8, r) && near8(pg>>8, g) && near8(pb>>8, b) {
				n++
			}
		}
	}
	return n
}

func near8(v uint32, want uint8) bool {
	d := int(v) - int(want)
	return d >= -6 && d <= 6
}
