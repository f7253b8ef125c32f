package statuspage

import (
	"bytes"
	"flag"
	"github.com/joiner-dev/joiner/pkg/capacitybuffer"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/test"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenInputs are the pictures whose HTML is checked in under testdata/.
func goldenInputs() map[string]Input {
	live := cluster()
	room := bufferRoom(live)
	plan := cluster()
	return map[string]Input{
		"live": {
			Title: "joiner-local", Subtitle: "live", Snapshot: live, Plan: lastBatch(live), Refresh: 5 * time.Second,
			Buffers: []capacitybuffer.Room{room},
			Skipped: map[string]string{"gpu": "its node class is not ready"},
			History: []Sample{
				{At: now.Add(-4 * time.Minute), CostPerHour: 0, Nodes: 0},
				{At: now.Add(-3 * time.Minute), CostPerHour: 0.05, Nodes: 1},
				{At: now.Add(-2 * time.Minute), CostPerHour: 0.35, Nodes: 3},
				{At: now.Add(-1 * time.Minute), CostPerHour: 0.25, Nodes: 3},
			},
		},
		"plan":  {Title: "cluster.yaml", Subtitle: "what-if plan (joiner simulate)", Snapshot: plan, Plan: whatIf(plan), Notes: []string{"ignored 1 object of kinds simulate does not read: ConfigMap default/x"}},
		"empty": {Title: "empty", Subtitle: "live"},
	}
}

// TestRenderGolden compares the page with testdata/<name>.html;
// `go test ./pkg/statuspage -update` rewrites them.
func TestRenderGolden(t *testing.T) {
	for name, in := range goldenInputs() {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Render(&buf, Build(in)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+".html")
			if *update {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("%s differs from the rendered page (run with -update and review the diff):\n%s", path, firstDiff(buf.String(), string(want)))
			}
		})
	}
}

// TestRenderSelfContained checks the page needs nothing from a network
// and runs no script.
func TestRenderSelfContained(t *testing.T) {
	for name, in := range goldenInputs() {
		var buf bytes.Buffer
		if err := Render(&buf, Build(in)); err != nil {
			t.Fatal(err)
		}
		page := buf.String()
		for _, banned := range []string{"<script", "http://", "https://", "src=", "@import", "url("} {
			if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), banned) {
				t.Errorf("%s page contains %q", name, banned)
			}
		}
	}
}

// TestRenderEscapes checks names reach the page as text, not markup.
func TestRenderEscapes(t *testing.T) {
	snap := cluster()
	snap.Pods[1].Name = `<img src=x onerror=alert(1)>`
	var buf bytes.Buffer
	if err := Render(&buf, Build(Input{Title: "<b>x</b>", Snapshot: snap})); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "<img") || strings.Contains(buf.String(), "<b>x</b>") {
		t.Errorf("a pod or cluster name was rendered as markup")
	}
}

// TestChromiumRendersGolden opens the live golden page in headless
// Chromium: the DOM has a bar per node and resource, and the screenshot
// shows the cpu bars' colour.
func TestChromiumRendersGolden(t *testing.T) {
	var buf bytes.Buffer
	in := goldenInputs()["live"]
	if err := Render(&buf, Build(in)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "live.html")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, shot := test.Browse(t, "file://"+path)
	if got, want := strings.Count(dom, `class="bar cpu"`), len(in.Snapshot.Nodes); got != want {
		t.Errorf("rendered DOM has %d cpu bars, want %d", got, want)
	}
	if !strings.Contains(dom, `data-verdict="unschedulable"`) {
		t.Errorf("rendered DOM lacks the unschedulable pod")
	}
	img := test.CheckScreenshot(t, shot, 16)
	if n := test.CountColour(img, 0x25, 0x63, 0xeb); n < 500 {
		t.Errorf("screenshot has %d pixels of the cpu bars' colour, want at least 500", n)
	}
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  got:  " + gl + "\n  want: " + wl
		}
	}
	return ""
}
