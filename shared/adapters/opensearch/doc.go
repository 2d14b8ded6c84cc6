// Package opensearch is the memory.Index on OpenSearch, the search engine
// of the AWS deployment: an Amazon OpenSearch Service domain or an
// OpenSearch Serverless vector collection, reached through
// github.com/opensearch-project/opensearch-go/v4 with requests signed by
// SigV4 (service "es" for a domain, "aoss" for a collection).
//
// # Index
//
// One document per chunk: agent, owner (only on an owner's memories), key,
// category and source as keywords,
// seq, a head flag on the entry's first chunk, the chunk's text (a text
// field, standard analyzer, searched with BM25), the entry's whole text
// once per entry on the head chunk (stored, not indexed), the timestamps,
// and the chunk's vector in a knn_vector field whose method is set in full:
// hnsw, engine faiss (or lucene), space cosinesimil. Faiss because
// Serverless vector collections take it (LangChain's AOSS support found
// nmslib and faiss only; AWS's Migration Assistant rewrites vector
// mappings to Faiss HNSW for Serverless) and NMSLIB is deprecated and has
// no efficient filtering. Faiss has cosinesimil from OpenSearch 2.19, so
// older domains use Engine "lucene".
// Both engines score cosinesimil as (1 + cos) / 2, which Vector turns back
// into the cosine.
//
// Every query carries the agent as a filter, and the owner: a search as
// an owner has a bool filter that admits the owner's documents (a term on
// owner) and the agent-wide ones (must_not exists owner, documents without
// the field), a search without an owner admits only the agent-wide ones,
// and Get, Put and Delete address exactly one owner's entry. The k-NN
// query carries these filters inside the knn clause (efficient filtering,
// faiss and lucene), so that an owner gets its own k nearest chunks, never
// another agent's or owner's and never fewer because others' were nearer.
// Agent-wide documents have no owner field, so an index written before
// memories had owners needs no reindexing: EnsureIndex adds the owner to
// its mapping and its documents are agent-wide.
//
// # Domains and Serverless collections
//
// Serverless vector collections differ in three ways that shape the
// adapter (AWS's "Supported operations and plugins in Amazon OpenSearch
// Serverless"; the "Document ID is not supported in create/index operation
// request" bulk error reported against LangChain, LlamaIndex, Spring AI and
// opensearch-py; opensearch-java issue 1112 for _delete_by_query):
//
//   - documents cannot be indexed with ids chosen by the client, so on
//     Serverless OpenSearch names them and the adapter finds an entry's
//     chunks by query;
//   - there is no _delete_by_query, so Delete lists the entry's chunk ids
//     and deletes them in a _bulk request (on a domain it is one
//     _delete_by_query);
//   - there is no refresh: writes become searchable within seconds, not
//     when the write returns. Run the conformance suite against a domain
//     or a cluster of your own.
//
// Put is the same on both: list the entry's current chunk ids, then one
// _bulk request deleting those the new chunks do not overwrite and
// indexing the new chunks (on a domain the ids are agent/key/seq, or
// agent/owner/key/seq for an owner's memory, so an entry written again
// overwrites its chunks in place and is never absent in between). A 200
// response with "errors": true is a *BulkError naming each failed action.
//
// # Hybrid search: client-side fusion
//
// OpenSearch can fuse keyword and vector results itself: a hybrid query
// with a bm25 and a knn sub-query, run through a search pipeline whose
// normalization-processor min-max normalises and combines the scores. The
// adapter does not use it; the memory core runs the Index's Keyword and
// Vector queries and fuses them itself, as it does for the embedded
// engine. The reasons:
//
//   - One ranking everywhere: the same min-max normalisation, weights,
//     temporal decay (which needs each entry's age and category, and
//     exempts core memories and MEMORY.md), MMR and minimum score, so
//     local and AWS deployments rank alike and one conformance suite and
//     one retrieval-quality test hold both to it.
//   - Graceful degradation is per leg: with no embedder, or when the
//     embedding call fails, the core runs the keyword leg alone and
//     reports "bm25_fallback"; when the keyword leg fails it reports
//     "semantic_fallback". A single hybrid query either works whole or
//     fails whole, and needs a query vector to be built at all.
//   - No server-side state to manage: a search pipeline is a named object
//     created out of band and versioned apart from the code.
//   - The cost is a second round trip per search (the core runs the legs
//     side by side) and normalisation over each leg's top k rather than
//     inside the engine; for an agent's memories (thousands of chunks, k
//     in the tens) the difference is small.
//
// The design notes assumed search pipelines were unavailable on
// Serverless. That is no longer so: AWS's "Configure Neural Search and
// Hybrid Search on OpenSearch Serverless" documents the hybrid query and
// the normalization processor there (min_max and l2 normalisation;
// arithmetic, geometric and harmonic mean combination). Availability does
// not decide the choice; the reasons above do.
package opensearch
