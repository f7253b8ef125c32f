package chaos

// regression is a round that once found a bug: `make test` runs it every
// time, before the drawn rounds (see README.md, "What it found").
type regression struct {
	// Cloud is "sim" or "aws"; Seed the round's seed.
	Cloud string
	Seed  uint64
	// Bug is what the round found, and where it was fixed.
	Bug string
}

var regressions = []regression{
	{Cloud: "aws", Seed: 1, Bug: "a new leader's concurrent Creates found the AWS provider's instance index primed but not yet filled and launched NodeClaims the killed leader had launched a second time (pkg/cloudprovider/aws, List)"},
}
