package operator_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/joiner-dev/joiner/pkg/test"
)

// statusPageURL matches the URL joiner logs when it serves the page.
var statusPageURL = regexp.MustCompile(`"serving the status page".*"url":"(http://127\.0\.0\.1:[0-9]+/)"`)

// TestStatusPage runs `joiner controller --status-page` on a free loopback
// port, scales a Deployment up and adds a pod no instance type can hold,
// then reads the live page over HTTP and in headless Chromium: a bar per
// node of the NodePool filled by the pods' requests, a cost above zero,
// and the big pod pending with the provisioner's verdict.
func TestStatusPage(t *testing.T) {
	s := newScenario(t)
	s.apply()
	j := s.joiner("--status-page", "--status-page-address=127.0.0.1:0")
	s.deployment("web", 4, "500m", "512Mi", nil)
	s.deployment("huge", 1, "1000", "1Gi", nil)
	s.waitRunning("web", 4, 2*time.Minute)

	url := j.statusPage(t)

	nodes, err := s.nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	hugePods, err := s.pods(t.Context(), "huge")
	if err != nil || len(hugePods) != 1 {
		t.Fatalf("huge pods: %v, %v", hugePods, err)
	}
	huge := s.ns + "/" + hugePods[0].Name
	var page string
	test.Eventually(t, 30*time.Second, func(ctx context.Context) error {
		var err error
		if page, err = getPage(ctx, url); err != nil {
			return err
		}
		for _, n := range nodes {
			if !strings.Contains(page, `data-node="`+n.Name+`" data-status="ready"`) {
				return fmt.Errorf("the page lacks ready node %s", n.Name)
			}
		}
		if !strings.Contains(page, `data-pod="`+huge+`" data-verdict="unschedulable"`) {
			return fmt.Errorf("the page does not show %s unschedulable", huge)
		}
		return nil
	})
	if strings.Contains(page, `<div class="n">$0.0000</div><div class="l">per hour now`) {
		t.Errorf("the page says the cluster costs nothing with %d nodes running", len(nodes))
	}
	if !strings.Contains(page, "nodepool &#34;"+s.nodePool.Name+"&#34;</b>: ") {
		t.Errorf("the huge pod's verdict does not name nodepool %s:\n%s", s.nodePool.Name, page)
	}
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: %s, want 405", url, resp.Status)
	}

	dom, shot := test.Browse(t, url)
	if got := strings.Count(dom, `class="bar cpu"`); got < len(nodes) {
		t.Errorf("the rendered page has %d cpu bars, want at least %d (one per node)", got, len(nodes))
	}
	if !strings.Contains(dom, `class="cost-line"`) {
		t.Errorf("the rendered page has no cost line")
	}
	img := test.CheckScreenshot(t, shot, 16)
	if n := test.CountColour(img, 0x25, 0x63, 0xeb); n < 200 {
		t.Errorf("screenshot %s has %d pixels of the cpu bars' colour, want at least 200", shot, n)
	}
}

// statusPage is the URL of the status page j serves (--status-page), from
// its log.
func (j *joiner) statusPage(t *testing.T) string {
	t.Helper()
	var url string
	test.Eventually(t, 30*time.Second, func(context.Context) error {
		b, err := os.ReadFile(j.logPath)
		if err != nil {
			return err
		}
		m := statusPageURL.FindSubmatch(b)
		if m == nil {
			return fmt.Errorf("joiner has not logged the status page's URL")
		}
		url = string(m[1])
		return nil
	})
	return url
}

// getPage reads the status page at url.
func getPage(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}
