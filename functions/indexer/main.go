// Command indexer keeps OpenSearch in step with the table, for a stack
// deployed with search=opensearch (without, memories are searched in the
// functions' processes and there is no indexer): it consumes the table's
// DynamoDB Streams batches and, for each memory item (pk MEM#…, sk ENTRY#…
// or OWNED#…, see shared/adapters/dynamo), puts the entry and its chunks
// into the OpenSearch index on INSERT and MODIFY (from the new image; Put
// replaces, so a replayed record does no harm) and deletes it on REMOVE
// (the entry of the agent, owner and key its item's key names). Records
// of other items, the heads and change items of memory spaces (sk LOG#…)
// among them, are ignored.
//
// Failed records are returned as batch item failures (the event source
// sets ReportBatchItemFailures): Lambda resumes the shard from the lowest
// failed sequence number, replaying it and the records after it in order,
// so the index ends as the table is. Records that keep failing go to the
// failure queue after the event source's retries.
//
// Environment: OPENSEARCH_ENDPOINT (required), OPENSEARCH_ENGINE,
// OPENSEARCH_INDEX, EMBED_DIMENSIONS, AWS_REGION (see
// search.NewIndex), LOG_LEVEL.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/search"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "indexer:", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (*Indexer, error) {
	x, err := search.NewIndex(ctx, os.Getenv)
	if err != nil {
		return nil, err
	}
	if x == nil {
		return nil, errors.New("OPENSEARCH_ENDPOINT is not set")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(os.Getenv("LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	log := slog.New(scrub.NewHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	return &Indexer{Search: x, Ensure: x.EnsureIndex, Log: log}, nil
}

// Indexer applies memory changes of stream records to a search index.
type Indexer struct {
	// Search is the index kept in step (the opensearch adapter).
	Search memory.Index
	// Ensure, when set, creates the index if it is missing; it runs before
	// the first batch, and again after a failure.
	Ensure func(context.Context) error
	// Log receives a line per failed record; nil discards.
	Log *slog.Logger

	mu      sync.Mutex
	ensured bool
}

// Handle applies a batch and reports the records that failed.
func (h *Indexer) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	log := h.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var resp events.DynamoDBEventResponse
	fail := func(r events.DynamoDBEventRecord, err error) {
		log.Error("stream record not indexed", "event_id", r.EventID, "event", r.EventName, "sequence_number", r.Change.SequenceNumber, "error", err)
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
	}
	if err := h.ensure(ctx); err != nil {
		// Without the index no record can be applied: fail them all (a
		// _bulk request would create it with guessed mappings).
		for _, r := range ev.Records {
			if _, ok, _ := dynamo.MemoryStreamChange(r); ok {
				fail(r, err)
			}
		}
		return resp, nil
	}
	for _, r := range ev.Records {
		c, ok, err := dynamo.MemoryStreamChange(r)
		switch {
		case !ok:
			continue
		case err != nil:
			fail(r, err)
		case c.Remove:
			if err := h.Search.Delete(ctx, c.Agent, c.Owner, c.Key); err != nil {
				fail(r, err)
			}
		default:
			if err := h.Search.Put(ctx, c.Entry, c.Chunks); err != nil {
				fail(r, err)
			}
		}
	}
	return resp, nil
}

func (h *Indexer) ensure(ctx context.Context) error {
	if h.Ensure == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ensured {
		return nil
	}
	if err := h.Ensure(ctx); err != nil {
		return fmt.Errorf("ensure the search index: %w", err)
	}
	h.ensured = true
	return nil
}
