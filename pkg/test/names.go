package test

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

var nameCounter atomic.Int64

// Name returns a DNS-1123 label unique within the test binary, made of
// prefix, t's name and a counter: "ns-testnodeready-3". Use it for every
// object a test creates, namespaced or not, so that tests sharing one control
// plane never collide and a name says which test made it.
func Name(t testing.TB, prefix string) string {
	t.Helper()
	suffix := "-" + strconv.FormatInt(nameCounter.Add(1), 10)
	const maxLen = 63
	var b strings.Builder
	dash := true // no leading dash, no double dash
	for _, r := range strings.ToLower(prefix + "-" + t.Name()) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	base := strings.TrimRight(b.String(), "-")
	if room := maxLen - len(suffix); len(base) > room {
		base = strings.TrimRight(base[:room], "-")
	}
	if base == "" {
		base = "x"
	}
	return base + suffix
}
