package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// TestWorkspaceBucket: the agents' workspaces live in one bucket that is
// encrypted, private, TLS-only, versioned with old versions expiring, and
// kept when the stack is deleted.
func TestWorkspaceBucket(t *testing.T) {
	for variant, days := range map[string]float64{variantDefault: DefaultWorkspaceVersionDays, variantShortApproval: 7} {
		s := stack(t, variant)
		assert(t, variant+": one bucket", func() { s.template.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(1)) })
		assert(t, variant+": bucket properties", func() {
			s.template.HasResourceProperties(jsii.String("AWS::S3::Bucket"), m{
				"BucketEncryption": m{"ServerSideEncryptionConfiguration": []any{
					m{"ServerSideEncryptionByDefault": m{"SSEAlgorithm": "AES256"}},
				}},
				"PublicAccessBlockConfiguration": m{
					"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
				},
				"VersioningConfiguration": m{"Status": "Enabled"},
				"OwnershipControls":       m{"Rules": []any{m{"ObjectOwnership": "BucketOwnerEnforced"}}},
				"LifecycleConfiguration": m{"Rules": []any{m{
					"Id":                             "ExpireOldVersions",
					"Status":                         "Enabled",
					"NoncurrentVersionExpiration":    m{"NoncurrentDays": days},
					"ExpiredObjectDeleteMarker":      true,
					"AbortIncompleteMultipartUpload": m{"DaysAfterInitiation": 1.0},
				}}},
			})
		})
		assert(t, variant+": bucket outlives the stack", func() {
			s.template.HasResource(jsii.String("AWS::S3::Bucket"), m{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
		})
		id := keys(s.resources("AWS::S3::Bucket"))[0]
		assert(t, variant+": TLS only", func() {
			s.template.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), m{
				"Bucket": m{"Ref": id},
				"PolicyDocument": objectLike(m{"Statement": arrayWith(objectLike(m{
					"Effect":    "Deny",
					"Action":    "s3:*",
					"Principal": m{"AWS": "*"},
					"Condition": m{"Bool": m{"aws:SecureTransport": "false"}},
				}))}),
			})
		})
		o, _ := s.json["Outputs"].(map[string]any)["WorkspaceBucket"].(map[string]any)
		if got := render(o["Value"]); got != "${"+id+"}" {
			t.Errorf("%s: WorkspaceBucket output = %s, want the bucket %s", variant, got, id)
		}
	}
}

// TestWorkspaceGrants: every function that builds agents knows the
// bucket and may read, write and delete under agents/ and skills/ and list
// those prefixes, nothing more; the indexer has no access.
func TestWorkspaceGrants(t *testing.T) {
	s := stack(t, variantOpenSearch) // every function
	id := keys(s.resources("AWS::S3::Bucket"))[0]
	arn := "${" + id + ".Arn}"
	objects := []string{arn + "/agents/*", arn + "/skills/*"}
	for name, access := range map[string]bool{"api": true, "ws": true, "telegram": true, "step": true, "scheduler": true, "indexer": false} {
		fn := s.functionID(t, name)
		vars, _ := props(s.resources("AWS::Lambda::Function")[fn])["Environment"].(map[string]any)["Variables"].(map[string]any)
		if b, ok := vars["WORKSPACE_BUCKET"]; ok != access || ok && render(b) != "${"+id+"}" {
			t.Errorf("%s: WORKSPACE_BUCKET=%v, want it %v and the bucket %s", name, b, access, id)
		}
		role := "${" + s.roleOf(t, fn) + "}"
		got := map[string][]string{}
		for _, st := range s.statements() {
			if !slices.Contains(st.roles, role) {
				continue
			}
			for _, a := range st.actions {
				if !strings.HasPrefix(a, "s3:") {
					continue
				}
				for _, r := range st.resources {
					got[a] = append(got[a], render(r))
				}
				if a == "s3:ListBucket" && st.raw["Condition"] != nil {
					// A condition would turn 404s for missing keys into
					// 403s (see grantWorkspace).
					t.Errorf("%s: s3:ListBucket has condition %v, want none", name, st.raw["Condition"])
				}
			}
		}
		want := map[string][]string{}
		if access {
			want = map[string][]string{"s3:GetObject": objects, "s3:PutObject": objects, "s3:DeleteObject": objects, "s3:ListBucket": {arn}}
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: S3 grants %v, want %v", name, got, want)
		}
	}
}
