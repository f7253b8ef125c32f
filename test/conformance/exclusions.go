package conformance

// Exclusions are upstream specs the harness does not run, by suite and full
// spec text, each with its reason. Only specs that probe upstream's own
// Deployment, logs, image or metrics endpoint belong here, or behaviour
// where joiner deliberately differs (docs/migrating.md says how); a
// behaviour difference that is a joiner bug is never excluded: it fails
// until fixed.
var Exclusions = map[string]map[string]string{
	"regression": {
		"Drift should update the nodepool-hash annotation on the nodepool and nodeclaim when the nodepool's nodepool-hash-version annotation does not match the controller hash version": "" +
			"asserts the values of Karpenter's own NodePool hash function and hash version (v3); joiner stamps its own hash " +
			"(joiner-v1, FNV-64a over the template's canonical JSON) and, as Karpenter does, re-stamps rather than drifts on a " +
			"version mismatch (docs/migrating.md, Drift)",
	},
	"performance": {},
}

// Excluded returns the reason spec is excluded, or "".
func Excluded(spec Spec) string {
	return Exclusions[spec.Suite][spec.Text]
}
