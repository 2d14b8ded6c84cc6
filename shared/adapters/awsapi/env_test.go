package awsapi

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"
)

// EnvConfig reads what Lambda sets (Region, the role's credentials) and
// the SDK's endpoint and attempts variables; half a key or a bad number
// is an error.
func TestEnvConfig(t *testing.T) {
	type want struct {
		Region, Endpoint   string
		Attempts           int
		Key, Secret, Token string
		NoCredentials      bool
		Err                string
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want want
	}{
		{"lambda", map[string]string{"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "ASIAX", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "tok"},
			want{Region: "eu-west-3", Key: "ASIAX", Secret: "s", Token: "tok"}},
		{"default region, endpoint, attempts", map[string]string{"AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "s",
			"AWS_ENDPOINT_URL": "http://localhost:4566", "AWS_MAX_ATTEMPTS": "5"},
			want{Region: "us-east-1", Endpoint: "http://localhost:4566", Attempts: 5, Key: "AKIA", Secret: "s"}},
		{"no credentials", map[string]string{"AWS_REGION": "eu-west-3"}, want{Region: "eu-west-3", NoCredentials: true}},
		{"half a key", map[string]string{"AWS_ACCESS_KEY_ID": "AKIA"}, want{Err: "set both or neither"}},
		{"bad attempts", map[string]string{"AWS_MAX_ATTEMPTS": "0"}, want{Err: "AWS_MAX_ATTEMPTS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := EnvConfig(func(k string) string { return tc.env[k] })
			var got want
			if err != nil {
				got.Err = tc.want.Err
				if tc.want.Err == "" || !strings.Contains(err.Error(), tc.want.Err) {
					t.Fatalf("EnvConfig: %v, want %q", err, tc.want.Err)
				}
			} else {
				if tc.want.Err != "" {
					t.Fatalf("EnvConfig succeeded, want an error saying %q", tc.want.Err)
				}
				if cfg.HTTPClient == nil {
					t.Error("no HTTP client")
				}
				got = want{Region: cfg.Region, Endpoint: aws.ToString(cfg.BaseEndpoint), Attempts: cfg.RetryMaxAttempts, NoCredentials: cfg.Credentials == nil}
				if cfg.Credentials != nil {
					c, err := cfg.Credentials.Retrieve(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					got.Key, got.Secret, got.Token = c.AccessKeyID, c.SecretAccessKey, c.SessionToken
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("EnvConfig (-want +got):\n%s", diff)
			}
		})
	}
}
