// Package reference renders joiner's settings and metrics references
// (docs/settings.md, docs/metrics.md) from the code: the settings from the
// flags options.AddFlags registers, the metrics from metrics.Catalog with
// every controller linked in. A test fails when the committed documents
// drift from the code; `make generate` rewrites them.
package reference
