// Package statuspage draws one picture of a cluster for people: its nodes
// as bars filled by their pods' cpu and memory requests, what they cost per
// hour over time, and the pending pods with the provisioner's verdict on
// each (the solver's typed reasons, in scheduling.Message's words).
//
// The picture has two sources and one rendering. Build turns a scheduling
// Snapshot (plus, optionally, a Plan) into a View: `joiner run` and
// `joiner controller --status-page` feed it the provisioner's live
// snapshot and its last batch's verdicts; `joiner simulate -o html` feeds
// it a what-if snapshot and the plan the solver made for it. Render writes
// a View as a self-contained HTML page (inline CSS and SVG, no script, no
// external resource: it must work on a machine with no internet). Server
// serves the live page and samples the cost over time.
//
// What it decides: nothing about the cluster. It reads; it never writes to
// the API server or the cloud, and its HTTP server answers GET and HEAD
// only.
package statuspage
