package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// TestCredentialsMissing: doctor asked to check an account it has no
// credentials for names the AWS checks skipped, with the fix, instead of
// aborting the whole run (docs/doctor.md).
func TestCredentialsMissing(t *testing.T) {
	failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no EC2 IMDS role found")
	})
	for _, tc := range []struct {
		name  string
		creds aws.CredentialsProvider
		want  []string // substrings; none means no reason
	}{
		{"static credentials", credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), nil},
		{"no provider", nil, []string{"no AWS credentials", "AWS_PROFILE"}},
		{"provider fails", failing, []string{"no AWS credentials (no EC2 IMDS role found)", "AWS_ACCESS_KEY_ID"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := credentialsMissing(t.Context(), &aws.Config{Credentials: tc.creds})
			if len(tc.want) == 0 && got != "" {
				t.Fatalf("reason %q, want none", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("reason %q, want it to contain %q", got, w)
				}
			}
		})
	}
}

// TestDiagnoseSaysWhyAWSChecksSkipped: the skipped AWS checks carry the
// reason Run found (missing credentials), not "no account configured".
func TestDiagnoseSaysWhyAWSChecksSkipped(t *testing.T) {
	for _, tc := range []struct {
		name, missing, want string
	}{
		{"no account", "", "subnets: no AWS account configured (--cloud-provider=aws)"},
		{"no credentials", "no AWS credentials: set AWS_PROFILE", "subnets: no AWS credentials: set AWS_PROFILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Diagnose(&Inputs{AWSMissing: tc.missing})
			found := false
			for _, s := range r.Skipped {
				found = found || s == tc.want
			}
			if !found {
				t.Errorf("skipped %q, want %q among them", r.Skipped, tc.want)
			}
		})
	}
}
