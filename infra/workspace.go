package main

import (
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
)

// Workspace key prefixes: an agent's workspace is agents/NAME/ (its
// bootstrap files, MEMORY.md, daily logs, the files its tools write), the
// shared skills are under skills/. The functions may touch nothing else.
var workspacePrefixes = []string{"agents/", "skills/"}

// workspaceBucket creates the S3 bucket of the agents' workspaces, read
// and written through shared/adapters/s3. It holds the users' files, so:
// encrypted with S3-managed keys (SSE-S3, whose ETags of single-part
// uploads are the content's MD5, which `agent push` compares), never
// public, reached over TLS only, versioned so that an overwritten or
// deleted file can be restored for -c workspace_version_days (default 30)
// days, after which the lifecycle rule expires the old versions; and
// retained when the stack is deleted, like the table. S3 bills per
// request and GB stored: an idle bucket of a few workspaces costs cents.
func (s *builder) workspaceBucket() {
	rules := []*awss3.LifecycleRule{{
		Id:                                  jsii.String("ExpireOldVersions"),
		NoncurrentVersionExpiration:         awscdk.Duration_Days(jsii.Number(float64(s.cfg.WorkspaceVersionDays))),
		ExpiredObjectDeleteMarker:           jsii.Bool(true),
		AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
	}}
	if s.cfg.Sandbox == SandboxFargate {
		// What the sandbox's tasks and the step function leave of their
		// commands and results (sandbox.go) goes after a day.
		rules = append(rules, &awss3.LifecycleRule{
			Id:                          jsii.String("ExpireSandboxControl"),
			Prefix:                      jsii.String(controlPrefix),
			Expiration:                  awscdk.Duration_Days(jsii.Number(1)),
			NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(1)),
		})
	}
	s.workspaces = awss3.NewBucket(s.stack, jsii.String("Workspaces"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(true),
		LifecycleRules:    &rules,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
	})
}

// grantWorkspace lets fn read, write and delete the objects under the
// workspace prefixes and list the bucket, which holds nothing else. The
// adapter needs nothing more: HeadObject is s3:GetObject, a conditional
// PutObject s3:PutObject, DeleteObjects one s3:DeleteObject per key.
// Listing is not limited by an s3:prefix condition on purpose: without
// s3:ListBucket on the whole bucket, S3 answers a read of a missing key
// with 403 instead of 404, and telling the two apart then costs a
// ListObjectsV2 ($0.005 per 1,000, twelve times a HEAD) for every
// missing file an agent's prompt looks for, on every turn.
func (s *builder) grantWorkspace(fn awslambda.Function) {
	s.grantWorkspaceTo(fn.Role())
}

// grantWorkspaceTo grants role what grantWorkspace grants a function, on
// the workspace prefixes and the extra ones (the sandbox's control
// objects, sandbox.go).
func (s *builder) grantWorkspaceTo(role awsiam.IRole, extra ...string) {
	var objects []*string
	for _, p := range append(slices.Clone(workspacePrefixes), extra...) {
		objects = append(objects, s.workspaces.ArnForObjects(jsii.String(p+"*")))
	}
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:GetObject", "s3:PutObject", "s3:DeleteObject"),
		Resources: &objects,
	}))
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("s3:ListBucket"),
		Resources: &[]*string{s.workspaces.BucketArn()},
	}))
}
