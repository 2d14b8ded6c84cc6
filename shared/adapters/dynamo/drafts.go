package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// A run's draft pieces are items RUN#<id> / DRAFT#<n:06>, with text and
// expires_at a day on: streams are followed while they run, and DynamoDB's
// TTL deletes them after.
const (
	skDraft  = "DRAFT#"
	draftTTL = 24 * time.Hour
)

var _ store.Drafts = (*Store)(nil)

func draftSK(n int) string { return fmt.Sprintf("%s%06d", skDraft, n) }

// AppendDraft implements store.Drafts.
func (s *Store) AppendDraft(ctx context.Context, runID string, n int, text string) error {
	it := key(pfxRun+runID, draftSK(n))
	it["text"] = attrS(text)
	it["expires_at"] = attrN(time.Now().Add(draftTTL).Unix())
	if err := checkSize(fmt.Sprintf("draft %d of run %q", n, runID), it); err != nil {
		return err
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: it, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if _, exists := condFailed(err); err != nil && !exists {
		return fmt.Errorf("dynamo: draft %d of run %q: %w", n, runID, err)
	}
	return nil
}

// Drafts implements store.Drafts, with one strongly consistent query.
func (s *Store) Drafts(ctx context.Context, runID string, from int) ([]string, error) {
	from = max(from, 0)
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:              s.table,
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :to"),
		ExpressionAttributeValues: item{
			":pk": attrS(pfxRun + runID), ":from": attrS(draftSK(from)), ":to": attrS(skDraft + "999999"),
		},
	})
	var out []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: drafts of run %q: %w", runID, err)
		}
		for _, it := range page.Items {
			n, err := strconv.Atoi(strings.TrimPrefix(getS(it, attrSK), skDraft))
			if err != nil || n != from+len(out) {
				return out, nil // up to the first missing piece
			}
			out = append(out, getS(it, "text"))
		}
	}
	return out, nil
}
