package options

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// Flag annotations the settings reference is generated from.
const (
	// AnnotationEnv names a flag's environment variable.
	AnnotationEnv = "joiner.dev/env"
	// AnnotationDefault is a flag's default in the code, before the
	// environment overrides it.
	AnnotationDefault = "joiner.dev/default"
	// AnnotationScope is "core" or "aws" for Karpenter's settings (the
	// provider that defines it upstream), "joiner" for joiner's own.
	AnnotationScope = "joiner.dev/scope"
)

// Scopes of a setting.
const (
	ScopeCore   = "core"
	ScopeAWS    = "aws"
	ScopeJoiner = "joiner"
)

// registrar registers flags whose default comes from an environment
// variable, annotated with the variable's name and the setting's scope.
type registrar struct {
	o     *Options
	fs    *pflag.FlagSet
	scope string
}

func (r registrar) aws() registrar    { r.scope = ScopeAWS; return r }
func (r registrar) joiner() registrar { r.scope = ScopeJoiner; return r }

func (r registrar) annotate(name, env string, def any) {
	_ = r.fs.SetAnnotation(name, AnnotationDefault, []string{fmt.Sprint(def)})
	scope := r.scope
	if scope == "" {
		scope = ScopeCore
	}
	_ = r.fs.SetAnnotation(name, AnnotationEnv, []string{env})
	_ = r.fs.SetAnnotation(name, AnnotationScope, []string{scope})
}

func usage(help, env string) string { return help + " [" + env + "]" }

func (r registrar) str(p *string, name, env, def, help string) {
	r.fs.StringVar(p, name, lookup(r.o, env, def, "", func(v string) (string, error) { return v, nil }), usage(help, env))
	r.annotate(name, env, def)
}

// The typed readers fall back to the default on a malformed value and
// remember the mistake for Validate, so a typo in a chart is an error at
// start naming the variable, not a silently ignored setting.
func (r registrar) duration(p *time.Duration, name, env string, def time.Duration, help string) {
	r.fs.DurationVar(p, name, lookup(r.o, env, def, "a duration such as 10s", time.ParseDuration), usage(help, env))
	r.annotate(name, env, def)
}

func (r registrar) int(p *int, name, env string, def int, help string) {
	r.fs.IntVar(p, name, lookup(r.o, env, def, "an integer", strconv.Atoi), usage(help, env))
	r.annotate(name, env, def)
}

func (r registrar) int64(p *int64, name, env string, def int64, help string) {
	parse := func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
	r.fs.Int64Var(p, name, lookup(r.o, env, def, "an integer", parse), usage(help, env))
	r.annotate(name, env, def)
}

func (r registrar) float(p *float64, name, env string, def float64, help string) {
	parse := func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }
	r.fs.Float64Var(p, name, lookup(r.o, env, def, "a number", parse), usage(help, env))
	r.annotate(name, env, def)
}

func (r registrar) bool(p *bool, name, env string, def bool, help string) {
	r.fs.BoolVar(p, name, lookup(r.o, env, def, "a boolean (true or false)", strconv.ParseBool), usage(help, env))
	r.annotate(name, env, def)
}

func lookup[T any](o *Options, env string, def T, what string, parse func(string) (T, error)) T {
	v, ok := os.LookupEnv(env)
	if !ok {
		return def
	}
	t, err := parse(v)
	if err != nil {
		o.envErrs = append(o.envErrs, fmt.Errorf("environment variable %s=%q is not %s", env, v, what))
		return def
	}
	return t
}
