package lowerbound

import (
	v1 "github.com/joiner-dev/joiner/pkg/apis/v1"
	"github.com/joiner-dev/joiner/pkg/scheduling"
)

// admitsAll reports whether every requirement admits at least one of the
// label's values (a missing key or an empty list means the type has no value
// for it, which only the negative operators admit).
func admitsAll(reqs []scheduling.Requirement, labels map[string][]string) bool {
	for _, r := range reqs {
		if !v1.RequirementAdmitsAny(r.Operator, r.Values, labels[r.Key]) {
			return false
		}
	}
	return true
}
