package opensearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// This file builds the JSON the adapter sends. Each body follows a request
// shape from OpenSearch's documentation; testdata/ holds the golden copies.

// obj is a JSON object. encoding/json writes its keys sorted, so bodies
// are deterministic.
type obj = map[string]any

// dateFormat is the format of created_at and updated_at: ISO 8601 as
// time.RFC3339Nano writes it, or epoch milliseconds.
const dateFormat = "strict_date_optional_time||epoch_millis"

// indexBody is the create-index request: a k-NN index (index.knn) with one
// document per chunk. The vector field names its method, engine and space
// explicitly, so that the index does not depend on a version's defaults.
func indexBody(dims int, engine string) obj {
	date := obj{"type": "date", "format": dateFormat}
	return obj{
		"settings": obj{"index": obj{"knn": true}},
		"mappings": obj{
			// strict: a document with a field the mapping does not name is
			// rejected rather than mapped by guesswork.
			"dynamic": "strict",
			"properties": obj{
				"agent":    obj{"type": "keyword"},
				"owner":    ownerField,
				"key":      obj{"type": "keyword"},
				"seq":      obj{"type": "integer"},
				"head":     obj{"type": "boolean"},
				"category": obj{"type": "keyword"},
				"source":   obj{"type": "keyword"},
				// The chunk's text, searched with BM25. The standard
				// analyzer splits on Unicode word boundaries and needs no
				// plugin.
				"text": obj{"type": "text", "analyzer": "standard"},
				// The whole entry's text, kept once per entry on its head
				// chunk, returned but never searched.
				"entry_text": obj{"type": "text", "index": false},
				"created_at": date,
				"updated_at": date,
				"vector": obj{
					"type":      "knn_vector",
					"dimension": dims,
					"method": obj{
						"name":       "hnsw",
						"engine":     engine,
						"space_type": "cosinesimil",
					},
				},
			},
		},
	}
}

// ownerField maps the owner of an owner's memory. Agent-wide memories
// have no owner field, so documents indexed before memories had owners
// are agent-wide as they are.
var ownerField = obj{"type": "keyword"}

// mappingBody is the put-mapping request EnsureIndex sends to an index
// that exists: it adds the fields later versions introduced (owner), and
// changes nothing for an index that has them.
func mappingBody() obj {
	return obj{"properties": obj{"owner": ownerField}}
}

// doc is the source of one chunk document.
type doc struct {
	Agent string `json:"agent"`
	// Owner is empty, and absent from the source, for agent-wide memories.
	Owner    string `json:"owner,omitempty"`
	Key      string `json:"key"`
	Seq      int    `json:"seq"`
	Head     bool   `json:"head"`
	Category string `json:"category"`
	Source   string `json:"source,omitempty"`
	Text     string `json:"text"`
	// EntryText is set on the head chunk only.
	EntryText string    `json:"entry_text,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Vector    []float32 `json:"vector,omitempty"`
}

// docs returns the documents for an entry: one per chunk, the first chunk
// (the head) carrying the entry's text. An entry without chunks still gets
// a head document, so that Get finds it.
func docs(e memory.Entry, chunks []memory.Chunk) []doc {
	if len(chunks) == 0 {
		chunks = []memory.Chunk{{Seq: 0}}
	}
	out := make([]doc, len(chunks))
	for i, c := range chunks {
		d := doc{
			Agent:     e.Agent,
			Owner:     e.Owner,
			Key:       e.Key,
			Seq:       c.Seq,
			Head:      i == 0,
			Category:  string(e.Category),
			Source:    e.Source,
			Text:      c.Text,
			CreatedAt: e.CreatedAt.UTC(),
			UpdatedAt: e.UpdatedAt.UTC(),
		}
		if i == 0 {
			d.EntryText = e.Text
		}
		// cosinesimil rejects a zero vector; such a chunk is stored
		// without one and found by keyword only.
		if norm(c.Vector) > 0 {
			d.Vector = c.Vector
		}
		out[i] = d
	}
	return out
}

// entry returns the entry a document belongs to. Text is the entry's text
// only on a head document.
func (d doc) entry() memory.Entry {
	return memory.Entry{
		Agent:     d.Agent,
		Owner:     d.Owner,
		Key:       d.Key,
		Text:      d.EntryText,
		Category:  memory.Category(d.Category),
		Source:    d.Source,
		CreatedAt: d.CreatedAt,
		UpdatedAt: d.UpdatedAt,
	}
}

// bulkAction is one action line of a _bulk body.
type bulkAction struct {
	op  string // "index" or "delete"
	id  string // empty lets OpenSearch choose (Serverless vector collections)
	doc *doc   // the source line of an index action
}

// bulkBody writes actions as newline-delimited JSON: an action line, then
// for index actions the document, and a final newline.
func bulkBody(actions []bulkAction) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, a := range actions {
		meta := obj{}
		if a.id != "" {
			meta["_id"] = a.id
		}
		if err := enc.Encode(obj{a.op: meta}); err != nil {
			return nil, err
		}
		if a.doc != nil {
			if err := enc.Encode(a.doc); err != nil {
				return nil, fmt.Errorf("document %s/%s #%d: %w", a.doc.Agent, a.doc.Key, a.doc.Seq, err)
			}
		}
	}
	return b.Bytes(), nil
}

// noOwner matches the documents of agent-wide memories: those with no
// owner field (bool must_not exists, OpenSearch's documented way to find
// documents missing a field).
var noOwner = obj{"bool": obj{"must_not": []any{obj{"exists": obj{"field": "owner"}}}}}

// ownerIs matches the documents of exactly one owner's memories, or of the
// agent-wide ones for owner "".
func ownerIs(owner string) obj {
	if owner == "" {
		return noOwner
	}
	return obj{"term": obj{"owner": owner}}
}

// visibleTo matches the documents an owner may see: a term filter on the
// owner that also admits documents with no owner (agent-wide memories);
// only those for owner "".
func visibleTo(owner string) obj {
	if owner == "" {
		return noOwner
	}
	return obj{"bool": obj{
		"should":               []any{ownerIs(owner), noOwner},
		"minimum_should_match": 1,
	}}
}

// scope is the filter every search carries: the agent, the owners visible
// to owner, and the categories when the filter names some.
func scope(agent, owner string, f memory.Filter) []any {
	fs := []any{obj{"term": obj{"agent": agent}}, visibleTo(owner)}
	if len(f.Categories) > 0 {
		cats := make([]string, len(f.Categories))
		for i, c := range f.Categories {
			cats[i] = string(c)
		}
		fs = append(fs, obj{"terms": obj{"category": cats}})
	}
	return fs
}

// keywordBody is a BM25 search: a match query on the chunk text, scored,
// inside a bool query whose filter clauses (not scored) keep the agent,
// the owners and categories.
func keywordBody(agent, owner, query string, f memory.Filter, k int) obj {
	return obj{
		"size": k,
		"query": obj{"bool": obj{
			"must":   []any{obj{"match": obj{"text": obj{"query": query}}}},
			"filter": scope(agent, owner, f),
		}},
	}
}

// vectorBody is an approximate k-NN search with efficient filtering: the
// filter sits inside the knn clause, so the engine searches only the
// agent's vectors the owner may see and still returns k of them (a
// post-filter would return fewer, or none, when other agents' or owners'
// vectors are nearer).
func vectorBody(agent, owner string, v []float32, f memory.Filter, k int) obj {
	return obj{
		"size": k,
		"query": obj{"knn": obj{"vector": obj{
			"vector": v,
			"k":      k,
			"filter": obj{"bool": obj{"filter": scope(agent, owner, f)}},
		}}},
	}
}

// headsBody finds the head documents of some of an agent's entries, of
// the owners owners matches (ownerIs or visibleTo): at most size of them.
func headsBody(agent string, owners obj, keys []string, size int) obj {
	return obj{
		"size":    size,
		"_source": obj{"excludes": []string{"vector"}},
		"query": obj{"bool": obj{"filter": []any{
			obj{"term": obj{"agent": agent}},
			owners,
			obj{"terms": obj{"key": keys}},
			obj{"term": obj{"head": true}},
		}}},
	}
}

// keyQuery selects every chunk of one entry.
func keyQuery(agent, owner, key string) obj {
	return obj{"bool": obj{"filter": []any{
		obj{"term": obj{"agent": agent}},
		ownerIs(owner),
		obj{"term": obj{"key": key}},
	}}}
}

// idsBody lists the ids of an entry's chunks, without their sources.
func idsBody(agent, owner, key string) obj {
	return obj{"size": maxChunks, "_source": false, "query": keyQuery(agent, owner, key)}
}

// deleteByQueryBody removes every chunk of an entry.
func deleteByQueryBody(agent, owner, key string) obj {
	return obj{"query": keyQuery(agent, owner, key)}
}
