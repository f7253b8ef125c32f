package options

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestStatusPageOptions(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		check   func(*Options) bool
		wantErr string
	}{
		{name: "off by default, loopback when on", check: func(o *Options) bool {
			return !o.StatusPage && o.StatusPageAddress == "127.0.0.1:8082"
		}},
		{name: "on from env", env: map[string]string{"STATUS_PAGE": "true", "STATUS_PAGE_ADDRESS": "127.0.0.1:9000"}, check: func(o *Options) bool {
			return o.StatusPage && o.StatusPageAddress == "127.0.0.1:9000"
		}},
		{name: "malformed env", env: map[string]string{"STATUS_PAGE": "yes please"}, wantErr: `STATUS_PAGE="yes please" is not a boolean`},
		{name: "address without a port", args: []string{"--status-page", "--status-page-address=localhost"}, wantErr: `status-page-address "localhost" is not host:port`},
		{name: "port out of range", args: []string{"--status-page", "--status-page-address=127.0.0.1:70000"}, wantErr: `"70000" is not a port`},
		{name: "a bad address is ignored while the page is off", args: []string{"--status-page-address=nonsense"}, check: func(o *Options) bool { return !o.StatusPage }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o := &Options{}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			if !tt.check(o) {
				t.Fatalf("unexpected options %+v", o)
			}
		})
	}
}
