//go:build chaosbugs

package plantedbug

import (
	"os"
	"strings"
)

const enabled = true

var planted = parse(os.Getenv(EnvVar))

func parse(s string) map[Bug]bool {
	out := map[Bug]bool{}
	for _, name := range strings.Split(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out[Bug(name)] = true
		}
	}
	return out
}
