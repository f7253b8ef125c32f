package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	// A repository laid out as CI has it: <tmp>/repo/go.mod beside
	// <tmp>/shared/scenarios, and the test running in a package below.
	laidOut := t.TempDir()
	mustMkdir(t, filepath.Join(laidOut, "repo", "pkg", "x"))
	mustMkdir(t, filepath.Join(laidOut, "shared", "scenarios"))
	mustWrite(t, filepath.Join(laidOut, "repo", "go.mod"))
	// A repository without the shared directory beside it.
	alone := t.TempDir()
	mustMkdir(t, filepath.Join(alone, "repo", "pkg", "x"))
	mustWrite(t, filepath.Join(alone, "repo", "go.mod"))
	override := t.TempDir()

	for _, tc := range []struct {
		name    string
		wd, env string
		want    string
		wantErr []string
	}{
		{name: "beside the repository root", wd: filepath.Join(laidOut, "repo", "pkg", "x"), want: filepath.Join(laidOut, "shared", "scenarios")},
		{name: "override", wd: filepath.Join(alone, "repo", "pkg", "x"), env: override, want: override},
		{name: "override wins over the default", wd: filepath.Join(laidOut, "repo"), env: override, want: override},
		{name: "missing says where it looked", wd: filepath.Join(alone, "repo", "pkg", "x"),
			wantErr: []string{filepath.Join(alone, "shared", "scenarios"), EnvDir}},
		{name: "missing override", wd: filepath.Join(laidOut, "repo"), env: filepath.Join(override, "nope"),
			wantErr: []string{filepath.Join(override, "nope"), EnvDir}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tc.wd)
			t.Setenv(EnvDir, tc.env)
			got, err := Dir()
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Dir() = %s, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %s", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Dir() = %s, want %s", got, tc.want)
			}
		})
	}
}

func mustMkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, f string) {
	t.Helper()
	if err := os.WriteFile(f, []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
