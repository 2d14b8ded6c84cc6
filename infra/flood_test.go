package main

import (
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"
)

// TestStageThrottling: both API stages throttle every route by default at
// DefaultAPIRate and DefaultAPIBurst, the bound the flood cost of
// tests/cost/README.md is computed from; -c api_rate and -c api_burst change both.
func TestStageThrottling(t *testing.T) {
	for variant, want := range map[string]m{
		variantDefault: {"ThrottlingRateLimit": float64(DefaultAPIRate), "ThrottlingBurstLimit": float64(DefaultAPIBurst)},
		variantAll:     {"ThrottlingRateLimit": 12.5, "ThrottlingBurstLimit": float64(40)},
	} {
		s := stack(t, variant)
		stages := s.resources("AWS::ApiGateway::Stage")
		if len(stages) != 1 {
			t.Fatalf("%s: %d REST API stages, want 1", variant, len(stages))
		}
		for id, st := range stages {
			settings := list(props(st)["MethodSettings"])
			if len(settings) != 1 {
				t.Fatalf("%s: %s method settings %v, want one for every method", variant, id, settings)
			}
			ms := settings[0].(map[string]any)
			if ms["HttpMethod"] != "*" || ms["ResourcePath"] != "/*" ||
				ms["ThrottlingRateLimit"] != want["ThrottlingRateLimit"] || ms["ThrottlingBurstLimit"] != want["ThrottlingBurstLimit"] {
				t.Errorf("%s: %s method settings %v, want every method throttled at %v", variant, id, ms, want)
			}
		}
		ws := s.resources("AWS::ApiGatewayV2::Stage")
		if len(ws) != 1 {
			t.Fatalf("%s: %d WebSocket stages, want 1", variant, len(ws))
		}
		for id, st := range ws {
			rs, _ := props(st)["DefaultRouteSettings"].(map[string]any)
			if rs["ThrottlingRateLimit"] != want["ThrottlingRateLimit"] || rs["ThrottlingBurstLimit"] != want["ThrottlingBurstLimit"] {
				t.Errorf("%s: %s default route settings %v, want %v", variant, id, rs, want)
			}
		}
	}
}

// TestWAF: waf=on (and only waf=on) adds a regional web ACL whose one
// rule blocks an IP past WAF's rate limit, associated with the REST
// API's stage.
func TestWAF(t *testing.T) {
	def := stack(t, variantDefault)
	for _, typ := range []string{"AWS::WAFv2::WebACL", "AWS::WAFv2::WebACLAssociation"} {
		assert(t, "default has no "+typ, func() { def.template.ResourceCountIs(jsii.String(typ), jsii.Number(0)) })
	}
	for variant, limit := range map[string]float64{variantWAF: DefaultWAFLimit, variantAll: 2000} {
		s := stack(t, variant)
		acls := s.resources("AWS::WAFv2::WebACL")
		if len(acls) != 1 {
			t.Fatalf("%s: %d web ACLs, want 1", variant, len(acls))
		}
		var aclID string
		for id, acl := range acls {
			aclID = id
			p := props(acl)
			if p["Scope"] != "REGIONAL" || render(p["DefaultAction"]) != `{"Allow":{}}` {
				t.Errorf("%s: %s scope %v, default action %s; want REGIONAL, allow", variant, id, p["Scope"], render(p["DefaultAction"]))
			}
			rules := list(p["Rules"])
			if len(rules) != 1 {
				t.Fatalf("%s: %d rules, want the rate-based one", variant, len(rules))
			}
			r := rules[0].(map[string]any)
			rate, _ := r["Statement"].(map[string]any)["RateBasedStatement"].(map[string]any)
			if render(r["Action"]) != `{"Block":{}}` || rate == nil || rate["AggregateKeyType"] != "IP" ||
				rate["Limit"] != limit || rate["EvaluationWindowSec"] != float64(300) {
				t.Errorf("%s: rule %v, want a block of an IP past %v requests in 5 minutes", variant, r, limit)
			}
		}
		assocs := s.resources("AWS::WAFv2::WebACLAssociation")
		if len(assocs) != 1 {
			t.Fatalf("%s: %d web ACL associations, want 1", variant, len(assocs))
		}
		var stage string
		for id := range s.resources("AWS::ApiGateway::Stage") {
			stage = id
		}
		for id, a := range assocs {
			p := props(a)
			arn := render(p["ResourceArn"])
			if render(p["WebACLArn"]) != "${"+aclID+".Arn}" {
				t.Errorf("%s: %s associates %s, want %s", variant, id, render(p["WebACLArn"]), aclID)
			}
			if want := "/restapis/${" + restAPIID(s) + "}/stages/${" + stage + "}"; !strings.Contains(arn, want) {
				t.Errorf("%s: %s on %s, want the REST API's stage (%s)", variant, id, arn, want)
			}
		}
	}
}

// restAPIID returns the logical id of the REST API.
func restAPIID(s *synthesized) string {
	for id := range s.resources("AWS::ApiGateway::RestApi") {
		return id
	}
	return ""
}
