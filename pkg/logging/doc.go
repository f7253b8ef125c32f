// Package logging holds the keys of joiner's structured logs: one
// spelling per thing a line can be about. It decides names only; the
// logger itself is built by pkg/operator.
package logging
