package main

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"
)

// The messaging channels whose platforms call webhooks (-c slack=on,
// -c discord=on, -c whatsapp=on): one function, channels
// (functions/channels), serves the webhooks of all that are on, behind
// the REST API, buffered, and answers within the platforms' deadlines;
// the runs they start go to the state machine like any other, and the
// step function sends their replies through each channel's outbox in the
// table. Each channel's credentials are a secret the stack creates empty,
// <stack>/channels/<name>, which `lambdaclaw channel set-secret NAME
// --stack STACK` fills (JSON of the channel's fields,
// shared/wiring/cloud/channels.go): until then its webhook answers 503
// and starts nothing. Nothing of them runs while nobody writes.

// webhookChannels are the channels the stack can serve, in order.
var webhookChannels = []string{ctxSlack, ctxDiscord, ctxWhatsApp}

// channelRoutes are each channel's webhook routes, under /channels/<name>/,
// and their methods.
var channelRoutes = map[string][]struct {
	path    string
	methods []string
}{
	ctxSlack:    {{"events", []string{"POST"}}, {"interactive", []string{"POST"}}},
	ctxDiscord:  {{"interactions", []string{"POST"}}},
	ctxWhatsApp: {{"webhook", []string{"GET", "POST"}}},
}

// channelTitle is how the outputs name a channel.
var channelTitle = map[string]string{ctxSlack: "Slack", ctxDiscord: "Discord", ctxWhatsApp: "WhatsApp"}

// channelSecretName is the name of a channel's secret.
func channelSecretName(stack, channel string) string { return stack + "/channels/" + channel }

// channelSecretVar is the variable that names a channel's secret to the
// functions (SLACK_SECRET_ARN, …).
func channelSecretVar(channel string) string { return strings.ToUpper(channel) + "_SECRET_ARN" }

// channelKeys are a channel's items in the table (the store.Channel of
// shared/adapters/dynamo): state, handled deliveries, users let in by a
// code, used codes, tries of codes, the outbox.
func channelKeys(channel string) []string {
	p := strings.ToUpper(channel)
	return []string{p + "STATE#*", p + "SEEN#*", p + "USER#*", p + "CODE#*", p + "TRY#*", p + "OUT#*"}
}

// channelSecrets creates each channel's secret, without a value.
func (s *builder) channelSecrets() {
	s.channelSecret = map[string]awssecretsmanager.Secret{}
	for _, name := range s.cfg.Channels {
		secret := awssecretsmanager.NewSecret(s.stack, jsii.String(channelTitle[name]+"Secret"), &awssecretsmanager.SecretProps{
			SecretName:  jsii.String(channelSecretName(*s.stack.StackName(), name)),
			Description: jsii.String("lambdaclaw: the " + channelTitle[name] + " channel's credentials, as JSON (lambdaclaw channel set-secret " + name + " --stack <stack>)"),
		})
		// Without a value, not with a generated placeholder: the channel
		// answers 503 until the operator puts its credentials.
		secret.Node().DefaultChild().(awssecretsmanager.CfnSecret).AddPropertyDeletionOverride(jsii.String("GenerateSecretString"))
		s.channelSecret[name] = secret
	}
}

// channelEnv is the environment naming the channels' secrets, for the
// functions that receive (channels) and send (step) their messages.
func (s *builder) channelEnv() map[string]*string {
	env := map[string]*string{}
	for _, name := range s.cfg.Channels {
		env[channelSecretVar(name)] = jsii.String(channelSecretName(*s.stack.StackName(), name))
	}
	return env
}

// grantChannels lets fn read the channels' secrets and keep their items:
// a receiver (channels) takes their deliveries and keeps their state, a
// sender (step) sends their outboxes' messages. One statement per kind
// for all the channels keeps the step function's policy within IAM's
// size for a role's inline policy.
func (s *builder) grantChannels(fn awslambda.Function, receiver bool) {
	if len(s.cfg.Channels) == 0 {
		return
	}
	var secrets []*string
	var items, index []string
	for _, name := range s.cfg.Channels {
		secrets = append(secrets, s.channelSecret[name].SecretArn())
		p := strings.ToUpper(name)
		if receiver {
			items = append(items, channelKeys(name)...)
			index = append(index, p+"OUT#*", p+"SEEN")
		} else {
			items = append(items, p+"OUT#*", p+"STATE#*")
			index = append(index, p+"OUT#*")
		}
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"),
		Resources: &secrets,
	}))
	actions := []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}
	if receiver {
		actions = append(actions, "dynamodb:BatchWriteItem")
	}
	s.grantItems(fn, actions, items)
	s.grantIndex(fn, index...)
}

// addChannelRoutes adds the channels' webhook routes under root.
func (s *builder) addChannelRoutes(root awsapigateway.IResource) {
	if len(s.cfg.Channels) == 0 {
		return
	}
	integration := awsapigateway.NewLambdaIntegration(s.fns["channels"], &awsapigateway.LambdaIntegrationOptions{
		AllowTestInvoke: jsii.Bool(false),
	})
	channels := root.AddResource(jsii.String("channels"), nil)
	for _, name := range s.cfg.Channels {
		r := channels.AddResource(jsii.String(name), nil)
		for _, route := range channelRoutes[name] {
			res := r.AddResource(jsii.String(route.path), nil)
			for _, m := range route.methods {
				res.AddMethod(jsii.String(m), integration, nil)
			}
		}
	}
}

// channelOutputs are the URLs to give each platform and the secrets to
// fill.
func (s *builder) channelOutputs(out func(id string, value *string, description string)) {
	for _, name := range s.cfg.Channels {
		title := channelTitle[name]
		for _, route := range channelRoutes[name] {
			id := title + strings.ToUpper(route.path[:1]) + route.path[1:] + "Url"
			out(id, s.urlFor("/channels/"+name+"/"+route.path), "the "+title+" "+route.path+" URL to give the platform (shared/channels/"+name+"/README.md)")
		}
		out(title+"SecretName", jsii.String(channelSecretName(*s.stack.StackName(), name)),
			"the "+title+" channel's credentials: lambdaclaw channel set-secret "+name+" --stack <stack>")
	}
}
