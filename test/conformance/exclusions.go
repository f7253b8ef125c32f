package conformance

// Exclusions are upstream specs the harness does not run, by suite and full
// spec text, each with its reason. Only specs that probe upstream's own
// Deployment, logs, image or metrics endpoint belong here, or behaviour
// where joiner deliberately differs (docs/migrating.md says how); a
// behaviour difference that is a joiner bug is never excluded: it fails
// until fixed.
var Exclusions = map[string]map[string]string{
	"regression":  {},
	"performance": {},
}

// Excluded returns the reason spec is excluded, or "".
func Excluded(spec Spec) string {
	return Exclusions[spec.Suite][spec.Text]
}
