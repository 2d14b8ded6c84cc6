package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsopensearchservice"
	"github.com/aws/jsii-runtime-go"
	"strconv"
)

// search adds hybrid memory search (-c search=opensearch): an Amazon
// OpenSearch Service domain, fed from the table's stream by the indexer
// function, queried by the api and step functions.
//
// # A managed domain, not a Serverless collection
//
// Both run the k-NN plugin and the shared/adapters/opensearch adapter speaks to
// both. The domain is chosen for what it costs while nobody is talking to
// the agent, which is most of the time for a personal gateway:
//
//   - a Serverless vector collection bills at least 1 OCU around the clock
//     (0.5 indexing + 0.5 search with standby replicas off; 2 OCUs with
//     them) at $0.24 per OCU-hour: about $175 a month, $350 redundant;
//   - one t3.small.search data node with a 10 GB gp3 volume is about
//     $27 a month ($0.036 an hour plus $0.122 per GB-month; us-east-1).
//
// The domain also reads its own writes (refresh=wait_for), takes the ids
// the adapter chooses and has _delete_by_query, where a Serverless
// collection is eventually consistent and lacks both (see
// shared/adapters/opensearch's package doc). Its costs: a single node in one
// Availability Zone (replica shards stay unassigned: the cluster reports
// yellow), burstable CPU, and 15-30 minutes to create. For more, pass
// -c search_instance=m7g.large.search (and edit the data node count).
//
// It has no VPC: a VPC would put the functions behind a NAT gateway (about
// $33 a month idle). Access is by IAM alone: the domain has no resource
// policy, so only the identity policies granted below admit a request, and
// every request must be SigV4-signed (service "es"); HTTPS and TLS 1.2 are
// enforced, data is encrypted at rest and between nodes.
//
// OpenSearch 2.19 because the adapter's default k-NN engine, faiss, has
// cosinesimil from 2.19 on.
func (s *builder) search() {
	domain := awsopensearchservice.NewDomain(s.stack, jsii.String("Search"), &awsopensearchservice.DomainProps{
		Version: awsopensearchservice.EngineVersion_OPENSEARCH_2_19(),
		Capacity: &awsopensearchservice.CapacityConfig{
			DataNodes:                 jsii.Number(1),
			DataNodeInstanceType:      jsii.String(s.cfg.SearchInstance),
			MultiAzWithStandbyEnabled: jsii.Bool(false),
		},
		Ebs: &awsopensearchservice.EbsOptions{
			VolumeSize: jsii.Number(10),
			VolumeType: awsec2.EbsDeviceVolumeType_GP3,
		},
		ZoneAwareness:        &awsopensearchservice.ZoneAwarenessConfig{Enabled: jsii.Bool(false)},
		EnforceHttps:         jsii.Bool(true),
		TlsSecurityPolicy:    awsopensearchservice.TLSSecurityPolicy_TLS_1_2,
		NodeToNodeEncryption: jsii.Bool(true),
		EncryptionAtRest:     &awsopensearchservice.EncryptionAtRestOptions{Enabled: jsii.Bool(true)},
		// The index is derived data: the indexer rebuilds it from the table.
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	s.searchEndpoint = awscdk.Fn_Join(jsii.String(""), &[]*string{jsii.String("https://"), domain.DomainEndpoint()})
	s.searchGrant = func(g awsiam.IGrantable) { domain.GrantReadWrite(g) }

	env := map[string]*string{
		"OPENSEARCH_ENDPOINT": s.searchEndpoint,
		"OPENSEARCH_ENGINE":   jsii.String("faiss"),
	}
	for _, name := range []string{"api", "step"} {
		fn := s.fns[name]
		addEnvironment(fn, env)
		s.searchGrant(fn)
	}

	// indexer: DynamoDB Streams → OpenSearch. The memory items carry
	// their chunks' vectors (embedded by the api and step functions when
	// they store), so the indexer copies them and calls no model. Batches
	// that keep failing after the retries land in a queue (SQS costs
	// nothing idle) instead of blocking the shard.
	indexer := s.function("indexer", "DynamoDB Streams to OpenSearch", 256, 120, map[string]*string{
		"TABLE_NAME":          s.table_.TableName(),
		"OPENSEARCH_ENDPOINT": s.searchEndpoint,
		"OPENSEARCH_ENGINE":   jsii.String("faiss"),
		"EMBED_DIMENSIONS":    jsii.String(strconv.Itoa(s.cfg.EmbedDimensions)),
	})
	s.searchGrant(indexer)
	dlq := s.deadLetterQueue("IndexerFailures")
	indexer.AddEventSource(awslambdaeventsources.NewDynamoEventSource(s.table_, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(100),
		MaxBatchingWindow:       awscdk.Duration_Seconds(jsii.Number(1)),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(5),
		ReportBatchItemFailures: jsii.Bool(true),
		OnFailure:               awslambdaeventsources.NewSqsDlq(dlq),
		// Only memory items (pk MEM#<agent>, shared/adapters/dynamo) concern the
		// index: the filter keeps the sessions' and runs' writes from
		// invoking the function at all.
		Filters: &[]*map[string]any{
			awslambda.FilterCriteria_Filter(&map[string]any{
				"dynamodb": map[string]any{"Keys": map[string]any{"pk": map[string]any{"S": awslambda.FilterRule_BeginsWith(jsii.String("MEM#"))}}},
			}),
		},
	}))
}
