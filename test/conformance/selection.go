package conformance

import (
	"fmt"
	"regexp"
	"strings"
)

// Selection is the part of whole suites a run takes: the specs whose full
// text matches Focus and not Skip (regular expressions; an empty Focus
// takes every spec, an empty Skip skips none).
type Selection struct {
	Focus, Skip string
}

// Specs returns, for each list (one suite's specs), the specs the selection
// takes, in order, excluded ones included (the run reports them with their
// reason). It fails when the selection leaves no spec to run, none matched
// or only excluded ones: a run that runs nothing has proven nothing, and a
// focus that misses by a word ("Host Name Spreading XL" for "Host Name
// Spreading Deployment XL") must say so rather than pass.
func (sel Selection) Specs(lists ...[]Spec) ([][]Spec, error) {
	focus, err := regexp.Compile(sel.Focus)
	if err != nil {
		return nil, fmt.Errorf("focus %q: %w", sel.Focus, err)
	}
	var skip *regexp.Regexp
	if sel.Skip != "" {
		if skip, err = regexp.Compile(sel.Skip); err != nil {
			return nil, fmt.Errorf("skip %q: %w", sel.Skip, err)
		}
	}
	out := make([][]Spec, len(lists))
	listed, runnable := 0, 0
	var excluded, suites []string
	for i, specs := range lists {
		for _, spec := range specs {
			if !focus.MatchString(spec.Text) || (skip != nil && skip.MatchString(spec.Text)) {
				continue
			}
			out[i] = append(out[i], spec)
			if Excluded(spec) != "" {
				excluded = append(excluded, fmt.Sprintf("%q", spec.Text))
				continue
			}
			runnable++
		}
		listed += len(specs)
		if len(specs) > 0 {
			suites = append(suites, fmt.Sprintf("%s %d", specs[0].Suite, len(specs)))
		}
	}
	if runnable > 0 {
		return out, nil
	}
	why := "no spec's full text matches"
	if len(excluded) > 0 {
		why = "the only specs matched are excluded (" + strings.Join(excluded, ", ") + ")"
	}
	return nil, fmt.Errorf("focus %q and skip %q select no spec to run of the %d listed (%s): %s; both are regular expressions on a spec's full text, its containers' texts and its own joined by spaces",
		sel.Focus, sel.Skip, listed, strings.Join(suites, ", "), why)
}
