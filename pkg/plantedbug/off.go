//go:build !chaosbugs

package plantedbug

const enabled = false

var planted map[Bug]bool
