package userdata

import (
	"bytes"
	"strings"
	"testing"

	awsv1 "github.com/joiner-dev/joiner/pkg/apis/aws/v1"
)

// FuzzRender merges arbitrary spec.userData into every AMI family's user
// data. It never panics; what it rejects is an *Error naming spec.userData
// (the user's to fix); what it accepts is deterministic, fits EC2's limit,
// and for the MIME families (AL2, AL2023) parses back into an archive that
// still holds each of the user's parts intact, so no user content can
// forge or swallow a part. Seeds: testdata/fuzz/FuzzRender.
func FuzzRender(f *testing.F) {
	f.Add(uint8(0), "#!/bin/bash\necho hello\n")
	f.Add(uint8(1), "#cloud-config\nruncmd: [echo hi]\n")
	f.Add(uint8(1), "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 42\n")
	f.Add(uint8(0), "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho a\n--BOUNDARY--\n")
	f.Add(uint8(2), "[settings.kubernetes]\nmax-pods = 10\n")
	f.Add(uint8(3), "<powershell>Write-Host hi</powershell>")
	f.Add(uint8(6), "anything")
	f.Add(uint8(0), "#!/bin/bash\n--//\nContent-Type: text/x-shellscript\n\n#!/bin/sh\nrm -rf /\n--//--\n")
	f.Add(uint8(1), "")
	f.Fuzz(func(t *testing.T, family uint8, custom string) {
		o := base(awsv1.AMIFamilies[int(family)%len(awsv1.AMIFamilies)])
		o.CustomUserData = &custom
		out, err := Render(o)
		if err != nil {
			if !IsError(err) || !strings.Contains(err.Error(), "spec.userData") {
				t.Fatalf("rejection is not a spec.userData error: %v", err)
			}
			return
		}
		if len(out) > MaxBytes {
			t.Fatalf("%d bytes, over EC2's %d", len(out), MaxBytes)
		}
		again, err := Render(o)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("rendering twice differs (%v)", err)
		}
		if o.AMIFamily != awsv1.AMIFamilyAL2 && o.AMIFamily != awsv1.AMIFamilyAL2023 {
			return
		}
		got, err := ParseMIME(string(out))
		if err != nil {
			t.Fatalf("the merged %s user data is not a MIME archive: %v\n%s", o.AMIFamily, err, out)
		}
		user, err := userParts(&o, o.AMIFamily == awsv1.AMIFamilyAL2023)
		if err != nil {
			t.Fatalf("Render accepted what userParts rejects: %v", err)
		}
		bodies := map[string]int{}
		for _, p := range got {
			bodies[strings.TrimRight(p.Body, "\r\n")]++
		}
		for i, p := range user {
			if o.AMIFamily == awsv1.AMIFamilyAL2023 && p.MediaType() == ContentTypeNodeConfig {
				continue // merged with joiner's NodeConfig, not copied
			}
			if bodies[strings.TrimRight(p.Body, "\r\n")] == 0 {
				t.Fatalf("user part %d (%s) is not intact in the merged archive (%d parts):\n%q\n--- merged ---\n%s", i+1, p.ContentType, len(got), p.Body, out)
			}
		}
		if len(got) < len(user) {
			t.Fatalf("the merged archive has %d parts, fewer than the user's %d", len(got), len(user))
		}
	})
}
