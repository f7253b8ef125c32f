package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/joiner-dev/joiner/pkg/doctor"
)

// TestWriteDoctorReport checks the two output formats: one line per
// finding with the summary, and JSON a machine reads back.
func TestWriteDoctorReport(t *testing.T) {
	r := doctor.Report{
		Findings: []doctor.Finding{
			{Check: "node-role", Severity: doctor.Error, Object: "ec2nodeclass/default", Message: "the node role is not mapped", Fix: "map it"},
			{Check: "pod-requests", Severity: doctor.Warning, Object: "pod/default/a", Message: "pod a has no cpu or memory requests", Fix: "set them"},
		},
		Skipped: []string{"subnets: no AWS account configured (--cloud-provider=aws)"},
	}
	tests := []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{format: "text", check: func(t *testing.T, out string) {
			want := "error [node-role] ec2nodeclass/default: the node role is not mapped; fix: map it\n" +
				"warning [pod-requests] pod/default/a: pod a has no cpu or memory requests; fix: set them\n" +
				"skipped subnets: no AWS account configured (--cloud-provider=aws)\n" +
				"1 error(s), 1 warning(s)\n"
			if out != want {
				t.Errorf("text output:\n%s\nwant:\n%s", out, want)
			}
		}},
		{format: "json", check: func(t *testing.T, out string) {
			var got doctor.Report
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if len(got.Findings) != 2 || got.Findings[0].Fix != "map it" || got.Errors() != 1 || !strings.Contains(out, `"severity": "warning"`) {
				t.Errorf("json output does not round-trip:\n%s", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeDoctorReport(&b, r, tt.format); err != nil {
				t.Fatal(err)
			}
			tt.check(t, b.String())
		})
	}
}
