package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	gocmp "github.com/google/go-cmp/cmp"
)

// motoVariants are the variants deployed to moto: the default, the
// Fargate sandbox in each of its networks, and every option at once.
var motoVariants = []string{variantDefault, variantSandbox, variantSandboxPublic, variantAll}

// motoAccount and motoRegion are moto's default account and the Region
// the stacks are deployed to.
const (
	motoAccount = "123456789012"
	motoRegion  = "us-east-1"
)

// TestDeployToMoto deploys each variant's cloud assembly to moto (moto_server,
// installed on the project's machines and CI beside cfn-lint) the way `cdk
// deploy` does: the assets uploaded to the bootstrap bucket, the template
// from its asset by TemplateURL, the bootstrap version in SSM. moto builds
// every resource it models from the template, resolving each Ref,
// Fn::GetAtt and Fn::Sub between them, and the stack must reach
// CREATE_COMPLETE with no resource or event failed.
//
// Two things moto does not do, which the test covers as follows:
//
//   - Resource types moto's CloudFormation does not model it skips (a Ref
//     to one resolves to nothing, and a Fn::GetAtt to one fails the
//     stack). The test asks moto's Python which types it models, requires
//     that moto made every resource but those, and checks that every
//     reference to them names a resource of the template and, for an
//     attribute, one that CloudFormation's schema of the type (cfn-lint's)
//     defines; then it hands moto the template with those references as
//     literals (arn:aws:unmodelled:…:Id.Attr), the one change to what it
//     deploys. It logs the types.
//   - A custom resource's Lambda function moto would run in Docker, which
//     it is not given: the test answers each custom resource's request in
//     its provider's place (SUCCESS, no data), after moto has checked that
//     its ServiceToken is a function of the stack (CreateStack fails
//     otherwise). The providers' own code is not run here.
func TestDeployToMoto(t *testing.T) {
	m := startMoto(t)
	for _, name := range motoVariants {
		t.Run(name, func(t *testing.T) {
			s := stack(t, name)
			m.reset(t)
			m.deploy(t, s)
		})
	}
}

// moto is a running moto_server and clients of it.
type moto struct {
	url string
	s3  *s3.Client
	cfn *cloudformation.Client
	ssm *ssm.Client
	log *tailBuffer
}

// startMoto starts moto_server on a port the system picks and stops it
// when the test ends.
func startMoto(t *testing.T) *moto {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		t.Fatalf("moto_server is not installed (pip install 'moto[server]'): %v", err)
	}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", "0")
	// No Docker for moto: it would try to run the custom resources'
	// functions in containers; the test answers for them instead.
	cmd.Env = append(os.Environ(), "DOCKER_HOST=unix:///nonexistent/docker.sock")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting moto_server: %v", err)
	}
	log := &tailBuffer{max: 64 << 10}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("moto_server's log (its end):\n%s", log.String())
		}
	})
	// moto_server says where it listens ("Running on http://127.0.0.1:PORT")
	// on stderr, then logs each request there.
	listening := make(chan string, 1)
	running := regexp.MustCompile(`Running on (http://127\.0\.0\.1:\d+)`)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			if m := running.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	var u string
	select {
	case u = <-listening:
	case <-done:
		t.Fatalf("moto_server exited before listening:\n%s", log.String())
	case <-time.After(time.Minute):
		t.Fatalf("moto_server did not listen within a minute:\n%s", log.String())
	}
	cfg := aws.Config{
		Region:      motoRegion,
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", ""),
		// moto takes what S3's newer default checksums send too, but
		// the requests stay the plainest.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
	}
	return &moto{
		url: u,
		log: log,
		s3: s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.BaseEndpoint, o.UsePathStyle = aws.String(u), true
		}),
		cfn: cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = aws.String(u) }),
		ssm: ssm.NewFromConfig(cfg, func(o *ssm.Options) { o.BaseEndpoint = aws.String(u) }),
	}
}

// reset empties moto: each variant is deployed to a fresh account.
func (m *moto) reset(t *testing.T) {
	t.Helper()
	resp, err := http.Post(m.url+"/moto-api/reset", "application/json", nil)
	if err != nil {
		t.Fatalf("resetting moto: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resetting moto: %s", resp.Status)
	}
}

// deploy deploys the synthesized variant and checks the stack.
func (m *moto) deploy(t *testing.T, s *synthesized) {
	ctx := t.Context()
	resources := s.json["Resources"].(map[string]any)
	typeOf := func(id string) string { return resources[id].(map[string]any)["Type"].(string) }
	var ids []string
	types := map[string]bool{}
	for _, id := range keys(resources) {
		ids = append(ids, id)
		types[typeOf(id)] = true
	}
	known := typesKnown(t, keys(types))
	unmodelled := map[string]bool{}
	count := map[string]int{}
	for _, id := range ids {
		typ := typeOf(id)
		if !known.modelled[typ] && !isCustom(typ) {
			unmodelled[id] = true
			count[typ]++
		}
	}
	var list []string
	for _, typ := range keys(count) {
		list = append(list, fmt.Sprintf("%s ×%d", typ, count[typ]))
	}
	t.Logf("moto does not model: %s", strings.Join(list, ", "))
	for _, problem := range checkReferences(s.json, unmodelled, known.attributes) {
		t.Error(problem)
	}

	start := time.Now()
	defer func() { t.Logf("deployed to moto in %s", time.Since(start).Round(time.Millisecond)) }()
	templateURL := m.uploadAssets(t, s.outdir, motoTemplate(t, s.json, unmodelled))
	// What `cdk bootstrap` leaves in the account: the template's
	// BootstrapVersion parameter reads it.
	bootstrap, _ := s.json["Parameters"].(map[string]any)["BootstrapVersion"].(map[string]any)
	name, _ := bootstrap["Default"].(string)
	if name == "" {
		t.Fatal("the template has no BootstrapVersion parameter naming an SSM parameter")
	}
	if _, err := m.ssm.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String("30"), Type: ssmtypes.ParameterTypeString}); err != nil {
		t.Fatalf("SSM PutParameter %s: %v", name, err)
	}

	created, err := m.cfn.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName:    aws.String(StackName),
		TemplateURL:  aws.String(templateURL),
		Capabilities: []cfntypes.Capability{cfntypes.CapabilityCapabilityIam, cfntypes.CapabilityCapabilityNamedIam, cfntypes.CapabilityCapabilityAutoExpand},
	})
	if err != nil {
		t.Fatalf("CreateStack: %v", err)
	}
	stackID := aws.ToString(created.StackId)
	made := m.stackResources(t, stackID)
	for _, id := range ids {
		got, ok := made[id]
		switch {
		case ok == unmodelled[id]:
			t.Errorf("%s (%s): made by moto %v, a type moto models %v", id, typeOf(id), ok, !unmodelled[id])
		case !ok:
		case got.ResourceStatus != cfntypes.ResourceStatusCreateComplete:
			t.Errorf("%s (%s): %s %s", id, typeOf(id), got.ResourceStatus, aws.ToString(got.ResourceStatusReason))
		case isCustom(typeOf(id)):
			m.answerCustomResource(t, stackID, id)
		}
	}

	out, err := m.cfn.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackID)})
	if err != nil || len(out.Stacks) != 1 {
		t.Fatalf("DescribeStacks: %v", err)
	}
	if st := out.Stacks[0]; st.StackStatus != cfntypes.StackStatusCreateComplete {
		t.Errorf("stack %s: %s", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	events, err := m.cfn.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(stackID)})
	if err != nil {
		t.Fatalf("DescribeStackEvents: %v", err)
	}
	for _, e := range events.StackEvents {
		if strings.HasSuffix(string(e.ResourceStatus), "_FAILED") {
			t.Errorf("event: %s %s: %s", aws.ToString(e.LogicalResourceId), e.ResourceStatus, aws.ToString(e.ResourceStatusReason))
		}
	}
}

// isCustom says whether typ is a custom resource's.
func isCustom(typ string) bool {
	return strings.HasPrefix(typ, "Custom::") || typ == "AWS::CloudFormation::CustomResource"
}

// uploadAssets publishes the cloud assembly's file assets as `cdk deploy`
// does, a directory zipped, with template as the template's, and returns
// the URL of the template's.
func (m *moto) uploadAssets(t *testing.T, outdir string, template []byte) string {
	t.Helper()
	var manifest struct {
		Files map[string]struct {
			Source struct {
				Path, Packaging string
			}
			Destinations map[string]struct {
				BucketName, ObjectKey string
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(outdir, StackName+".assets.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatalf("the assets' manifest: %v", err)
	}
	placeholders := strings.NewReplacer("${AWS::AccountId}", motoAccount, "${AWS::Region}", motoRegion, "${AWS::Partition}", "aws")
	var templateURL string
	for _, hash := range keys(manifest.Files) {
		f := manifest.Files[hash]
		src := filepath.Join(outdir, f.Source.Path)
		var body []byte
		switch {
		case f.Source.Path == StackName+".template.json":
			body = template
		case f.Source.Packaging == "file":
			body, err = os.ReadFile(src)
		case f.Source.Packaging == "zip":
			body, err = zipDir(src)
		default:
			t.Fatalf("asset %s: packaging %q", hash, f.Source.Packaging)
		}
		if err != nil {
			t.Fatalf("asset %s: %v", hash, err)
		}
		for _, d := range f.Destinations {
			bucket, key := placeholders.Replace(d.BucketName), placeholders.Replace(d.ObjectKey)
			if _, err := m.s3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil && !strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") {
				t.Fatalf("CreateBucket %s: %v", bucket, err)
			}
			if _, err := m.s3.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
				t.Fatalf("PutObject %s/%s: %v", bucket, key, err)
			}
			if f.Source.Path == StackName+".template.json" {
				templateURL = "https://s3." + motoRegion + ".amazonaws.com/" + bucket + "/" + key
			}
		}
	}
	if templateURL == "" {
		t.Fatal("the assets' manifest has no template")
	}
	return templateURL
}

// zipDir zips a directory's files as the CDK packages a directory asset.
func zipDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		h.Name, h.Method = filepath.ToSlash(rel), zip.Deflate
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// stackResources returns the stack's resources that moto made, by
// logical id.
func (m *moto) stackResources(t *testing.T, stackID string) map[string]cfntypes.StackResourceSummary {
	t.Helper()
	out := map[string]cfntypes.StackResourceSummary{}
	p := cloudformation.NewListStackResourcesPaginator(m.cfn, &cloudformation.ListStackResourcesInput{StackName: aws.String(stackID)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatalf("ListStackResources: %v", err)
		}
		for _, r := range page.StackResourceSummaries {
			// moto lists a type it skipped as an empty summary.
			if id := aws.ToString(r.LogicalResourceId); id != "" {
				out[id] = r
			}
		}
	}
	return out
}

// answerCustomResource sends the custom resource's provider's answer to
// the response URL moto gave it, as the provider's cfn-response would.
func (m *moto) answerCustomResource(t *testing.T, stackID, logicalID string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"Status": "SUCCESS", "StackId": stackID, "LogicalResourceId": logicalID,
		"PhysicalResourceId": logicalID, "Reason": "answered by TestDeployToMoto", "Data": map[string]any{},
	})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut,
		m.url+"/cloudformation_"+motoRegion+"/cfnresponse?stack="+url.QueryEscape(stackID), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("answering custom resource %s: %v", logicalID, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answering custom resource %s: %s", logicalID, resp.Status)
	}
}

// checkReferences returns what is wrong with the template's references:
// each must name a parameter, a pseudo parameter or a resource of it, and
// an attribute of an unmodelled resource one its type has (attributes, by
// type).
func checkReferences(template map[string]any, unmodelled map[string]bool, attributes map[string][]string) []string {
	var problems []string
	resources := template["Resources"].(map[string]any)
	params, _ := template["Parameters"].(map[string]any)
	for _, ref := range templateRefs(template) {
		if strings.HasPrefix(ref.target, "AWS::") || params[ref.target] != nil {
			continue
		}
		r, ok := resources[ref.target].(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %q names no resource of the template", ref.from, ref.target))
			continue
		}
		if !unmodelled[ref.target] || ref.attr == "" {
			continue
		}
		typ, _ := r["Type"].(string)
		if attrs, ok := attributes[typ]; !ok {
			problems = append(problems, fmt.Sprintf("%s: %s is no type of CloudFormation's schemas", ref.from, typ))
		} else if !slices.Contains(attrs, ref.attr) {
			problems = append(problems, fmt.Sprintf("%s: %s (%s) has no attribute %s (it has %v)", ref.from, ref.target, typ, ref.attr, attrs))
		}
	}
	return problems
}

// unmodelledValue is what moto is given for an attribute of an unmodelled
// resource: shaped as an ARN, which moto's IAM requires of a policy's
// resources, and naming the attribute.
func unmodelledValue(id, attr string) string {
	return "arn:aws:unmodelled:" + motoRegion + ":" + motoAccount + ":" + id + "." + attr
}

// motoTemplate returns the template as moto is given it: each Ref,
// Fn::GetAtt, ${Id} and ${Id.Attr} of an unmodelled resource a literal
// (moto resolves a Ref to one to nothing, and fails a Fn::GetAtt).
func motoTemplate(t *testing.T, template map[string]any, unmodelled map[string]bool) []byte {
	t.Helper()
	sub := func(s string) string {
		return subVar.ReplaceAllStringFunc(s, func(m string) string {
			id, attr, ok := strings.Cut(m[2:len(m)-1], ".")
			if !ok {
				attr = "Ref"
			}
			if unmodelled[id] {
				return unmodelledValue(id, attr)
			}
			return m
		})
	}
	var rewrite func(v any) any
	rewrite = func(v any) any {
		switch v := v.(type) {
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = rewrite(e)
			}
			return out
		case map[string]any:
			if l, ok := v["Fn::GetAtt"].([]any); ok && len(l) == 2 && len(v) == 1 {
				if id, _ := l[0].(string); unmodelled[id] {
					return unmodelledValue(id, fmt.Sprint(l[1]))
				}
			}
			if id, ok := v["Ref"].(string); ok && len(v) == 1 && unmodelled[id] {
				return unmodelledValue(id, "Ref")
			}
			out := make(map[string]any, len(v))
			for k, e := range v {
				if k == "Fn::Sub" {
					if s, ok := e.(string); ok {
						e = sub(s)
					} else if l, ok := e.([]any); ok && len(l) == 2 {
						if s, ok := l[0].(string); ok {
							e = []any{sub(s), l[1]}
						}
					}
				}
				out[k] = rewrite(e)
			}
			return out
		}
		return v
	}
	b, err := json.Marshal(rewrite(template))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reference is one Ref, Fn::GetAtt or ${} of Fn::Sub in the template.
type reference struct {
	from, target, attr string
}

// subVar is a ${Name} or ${Name.Attr} of Fn::Sub, not ${!Literal}.
var subVar = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// templateRefs returns every reference of the template's resources and
// outputs.
func templateRefs(template map[string]any) []reference {
	var out []reference
	var walk func(from string, v any)
	walk = func(from string, v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(from, e)
			}
		case map[string]any:
			for k, e := range v {
				switch k {
				case "Ref":
					if name, ok := e.(string); ok {
						out = append(out, reference{from: from, target: name})
						continue
					}
				case "Fn::GetAtt":
					if l, ok := e.([]any); ok && len(l) == 2 {
						target, _ := l[0].(string)
						attr, _ := l[1].(string)
						out = append(out, reference{from: from, target: target, attr: attr})
						continue
					}
				case "Fn::Sub":
					text, local := e, map[string]bool{}
					if l, ok := e.([]any); ok && len(l) == 2 {
						text = l[0]
						if m, ok := l[1].(map[string]any); ok {
							for name, val := range m {
								local[name] = true
								walk(from, val)
							}
						}
					}
					if s, ok := text.(string); ok {
						for _, m := range subVar.FindAllStringSubmatch(s, -1) {
							if local[m[1]] {
								continue
							}
							target, attr, _ := strings.Cut(m[1], ".")
							out = append(out, reference{from: from, target: target, attr: attr})
						}
						continue
					}
				}
				walk(from, e)
			}
		}
	}
	for _, section := range []string{"Resources", "Outputs"} {
		m, _ := template[section].(map[string]any)
		for _, id := range keys(m) {
			walk(section+"."+id, m[id])
		}
	}
	return out
}

// knownTypes is what moto's CloudFormation models, of the types asked
// about, and each type's attributes in CloudFormation's schemas.
type knownTypes struct {
	modelled   map[string]bool
	attributes map[string][]string
}

// knownTypesScript answers typesKnown's question from moto's and
// cfn-lint's Python packages.
const knownTypesScript = `
import json, sys
from moto.cloudformation.parsing import get_model_map
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
types = json.load(sys.stdin)
models = get_model_map()
attributes = {}
for t in types:
    try:
        attributes[t] = sorted(PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", t).get_atts)
    except Exception:
        pass
print(json.dumps({"modelled": [t for t in types if t in models], "attributes": attributes}))
`

// typesKnown asks moto's and cfn-lint's Python packages about types.
func typesKnown(t *testing.T, types []string) knownTypes {
	t.Helper()
	in, _ := json.Marshal(types)
	cmd := exec.Command("python3", "-c", knownTypesScript)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("asking python3 which types moto models and what cfn-lint's schemas say (moto and cfn-lint are installed for python3?): %v\n%s", err, stderr.String())
	}
	var answer struct {
		Modelled   []string
		Attributes map[string][]string
	}
	if err := json.Unmarshal(out, &answer); err != nil {
		t.Fatalf("python3's answer %q: %v", out, err)
	}
	k := knownTypes{modelled: map[string]bool{}, attributes: answer.Attributes}
	for _, typ := range answer.Modelled {
		k.modelled[typ] = true
	}
	return k
}

// TestMotoReferences: references to a resource the template lacks, or to
// an attribute an unmodelled resource's type lacks, are found, in Ref,
// Fn::GetAtt and both forms of Fn::Sub; moto is handed literals for the
// unmodelled resource's and nothing else changes.
func TestMotoReferences(t *testing.T) {
	template := map[string]any{
		"Parameters": map[string]any{"P": map[string]any{"Type": "String"}},
		"Resources": map[string]any{
			"Alarm": map[string]any{"Type": "AWS::CloudWatch::Alarm"},
			"Fn":    map[string]any{"Type": "AWS::Lambda::Function"},
			"Uses": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{
				"A": map[string]any{"Ref": "Alarm"},
				"B": map[string]any{"Fn::GetAtt": []any{"Alarm", "Arn"}},
				"C": map[string]any{"Fn::GetAtt": []any{"Alarm", "Nope"}},
				"D": map[string]any{"Fn::Sub": "${Alarm.Arn}/${Fn.Arn}/${AWS::Region}/${P}/${!Literal}/${Gone}"},
				"E": map[string]any{"Fn::Sub": []any{"${X}/${Alarm.Size}", map[string]any{"X": map[string]any{"Ref": "Missing"}}}},
				"F": map[string]any{"Fn::GetAtt": []any{"Fn", "Arn"}},
			}},
		},
		"Outputs": map[string]any{"O": map[string]any{"Value": map[string]any{"Ref": "Nowhere"}}},
	}
	unmodelled := map[string]bool{"Alarm": true}
	got := checkReferences(template, unmodelled, map[string][]string{"AWS::CloudWatch::Alarm": {"Arn"}})
	slices.Sort(got)
	want := []string{
		`Outputs.O: "Nowhere" names no resource of the template`,
		"Resources.Uses: Alarm (AWS::CloudWatch::Alarm) has no attribute Nope (it has [Arn])",
		"Resources.Uses: Alarm (AWS::CloudWatch::Alarm) has no attribute Size (it has [Arn])",
		`Resources.Uses: "Gone" names no resource of the template`,
		`Resources.Uses: "Missing" names no resource of the template`,
	}
	slices.Sort(want)
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}

	var moto map[string]any
	if err := json.Unmarshal(motoTemplate(t, template, unmodelled), &moto); err != nil {
		t.Fatal(err)
	}
	alarm := func(attr string) string { return unmodelledValue("Alarm", attr) }
	wantProps := map[string]any{
		"A": alarm("Ref"),
		"B": alarm("Arn"),
		"C": alarm("Nope"),
		"D": map[string]any{"Fn::Sub": alarm("Arn") + "/${Fn.Arn}/${AWS::Region}/${P}/${!Literal}/${Gone}"},
		"E": map[string]any{"Fn::Sub": []any{"${X}/" + alarm("Size"), map[string]any{"X": map[string]any{"Ref": "Missing"}}}},
		"F": map[string]any{"Fn::GetAtt": []any{"Fn", "Arn"}},
	}
	if diff := gocmp.Diff(wantProps, props(moto["Resources"].(map[string]any)["Uses"].(map[string]any))); diff != "" {
		t.Errorf("moto's template (-want +got):\n%s", diff)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (b *tailBuffer) Write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b = append(b.b, p...)
	if over := len(b.b) - b.max; over > 0 {
		b.b = slices.Clone(b.b[over:])
	}
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}
