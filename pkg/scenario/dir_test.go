package scenario

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDir(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	shared := filepath.Join(tmp, "shared", "scenarios")
	for _, d := range []string{filepath.Join(repo, "pkg", "x"), shared, filepath.Join(tmp, "bare")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		env     string
		wd      string
		want    string
		wantErr string
	}{
		{name: "relative to the repository root", wd: filepath.Join(repo, "pkg", "x"), want: shared},
		{name: "override", env: filepath.Join(tmp, "bare"), wd: filepath.Join(tmp, "bare"), want: filepath.Join(tmp, "bare")},
		{name: "override missing", env: filepath.Join(tmp, "nope"), wd: repo, wantErr: "JOINER_SCENARIOS=" + filepath.Join(tmp, "nope")},
		{name: "no repository", wd: filepath.Join(tmp, "bare"), wantErr: "no go.mod at or above " + filepath.Join(tmp, "bare")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(DirEnv, tt.env)
			t.Chdir(tt.wd)
			got, err := Dir()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Dir() error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Dir() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
