package tests

// Retrieval quality of memory search (issue 4): on a labelled set of
// memories and queries, hybrid search must find at least as many of the
// relevant memories in its top 5 as keyword search (BM25) alone and as
// vector search alone. The set runs through memory.Memory.Search over the
// real embedded index (SQLite FTS5 and in-process vectors).
//
// The set is a personal assistant's memories about one user: family,
// food, health, work, incidents, invoices, travel, hobbies, home. The
// queries come in three kinds:
//
//   - paraphrases, which share NO word with the memories they look for
//     ("which town does my sis call home" for "The user's sister Ada lives
//     in Lisbon…"); the test checks that they share none, so BM25 cannot
//     find them and only meaning can;
//   - exact look-ups of names and codes (INV-20388, OPS-7790, db-7)
//     among memories that mean nearly the same thing, where meaning alone
//     ranks the near-duplicates alike and the exact token decides;
//   - ordinary queries that share words and meaning with their targets.
//
// # The embedding fake
//
// A real embedding model cannot run here, and a hash of the words (like
// memorytest.Embedder) knows no synonyms, so it would find no paraphrase.
// conceptEmbedder captures meaning through a shared vocabulary of
// concepts instead: the table concepts maps words and their synonyms to a
// concept id ("sister", "brother", "sis" and "sibling" are all the concept
// sibling; "dozing", "asleep" and "insomnia" are sleep). Every concept has
// a fixed pseudo-random unit vector of 384 dimensions, drawn from a
// generator seeded by the concept's name, so vectors of different concepts
// are nearly orthogonal (cosine about ±0.05). A text's vector is the
// normalised sum of the vectors of the concepts of its words: two texts
// that speak of the same things point the same way whatever words they
// use. Like a real model:
//
//   - function words ("the", "is", "of") carry no meaning and are skipped;
//   - a word outside the vocabulary (a name, a code, a number) gets a
//     vector of its own, seeded by the word, but weighs only
//     outOfVocabulary (0.3) of a concept: embedding models capture what a
//     text is about far better than exact identifiers, which is what
//     keyword search is for.
//
// It is deterministic, so the recalls are the same on every run.

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// retrievalDims is the length of the fake's vectors, that of small
// embedding models (all-MiniLM-L6-v2, bge-small).
const retrievalDims = 384

// outOfVocabulary is the weight of a word the vocabulary does not know,
// relative to a concept's.
const outOfVocabulary = 0.3

// concepts is the shared vocabulary: each line is a concept id followed
// by the words that express it.
var concepts = [][]string{
	{"sibling", "sister", "brother", "sis", "sibling", "siblings"},
	{"parent", "mother", "mom", "mum", "father", "dad", "parent"},
	{"partner", "partner", "spouse", "wife", "husband", "girlfriend", "boyfriend"},
	{"child", "kids", "kid", "children", "child", "son", "daughter"},
	{"friend", "friend", "pal", "mate", "buddy", "closest", "best"},
	{"residence", "lives", "live", "living", "home", "house", "based", "reside", "household"},
	{"city", "city", "town", "lisbon", "kyoto", "porto"},
	{"birthday", "birthday", "born", "older", "celebrates", "celebrate", "anniversary"},
	{"date", "date", "day", "when", "calendar"},
	{"allergy", "allergic", "allergy", "intolerance", "intolerant"},
	{"nut", "peanuts", "peanut", "nut", "nuts"},
	{"dog", "dog", "puppy", "beagle", "canine", "hound"},
	{"vet", "vet", "veterinarian", "animal", "clinic"},
	{"vaccine", "vaccinations", "vaccination", "vaccine", "jabs", "shots"},
	{"appointment", "appointment", "appointments", "book", "booked", "booking", "schedule", "scheduled"},
	{"coffee", "coffee", "caffeine", "espresso", "latte", "cappuccino", "flat"},
	{"morning", "morning", "mornings", "breakfast", "dawn", "early", "7am"},
	{"drink", "drinks", "drink", "take", "sip"},
	{"sugar", "sugar", "sweet", "sweetener"},
	{"meat", "meat", "pork", "beef", "chicken", "steak"},
	{"vegetarian", "vegetarian", "vegan", "plant"},
	{"food", "eating", "eat", "food", "menu", "diet", "meal", "groceries"},
	{"restaurant", "restaurant", "bar", "tasca", "dinner"},
	{"baking", "bakes", "bake", "baking", "bread", "sourdough", "oven"},
	{"exercise", "gym", "exercise", "workout", "fitness", "training", "train", "preparing"},
	{"weekday", "monday", "tuesday", "wednesday", "thursday", "friday", "weekday", "weekdays"},
	{"weekend", "sunday", "sundays", "saturday", "weekend"},
	{"pain", "pain", "ache", "aches", "hurts", "sore"},
	{"back", "back", "spine", "lower"},
	{"therapy", "physiotherapist", "physio", "therapist", "physiotherapy"},
	{"sleep", "sleep", "insomnia", "asleep", "dozing", "sleepless", "nightstand"},
	{"evening", "night", "evening", "evenings", "10pm", "bedtime"},
	{"difficulty", "struggles", "struggle", "trouble", "difficulty", "problem"},
	{"screen", "screens", "screen", "phone", "display"},
	{"doctor", "doctor", "dr", "physician", "practitioner", "gp"},
	{"work", "works", "work", "job", "employer", "startup", "company", "team", "engineer", "staff"},
	{"backend", "backend", "server", "servers"},
	{"finance", "fintech", "finance", "bank", "banking", "savings", "account"},
	{"manager", "manager", "boss", "supervisor", "lead"},
	{"meeting", "meeting", "meetings", "calls", "call", "standup", "one", "video"},
	{"deadline", "deadline", "due", "ship", "before", "end", "by"},
	{"payment", "payments", "payment", "paid", "pay", "billing"},
	{"api", "api", "apis", "endpoints", "endpoint", "interface"},
	{"migration", "migration", "migrate", "moving", "move", "rewrite", "upgrading", "upgrade"},
	{"oncall", "pager", "paged", "duty", "oncall", "emergencies", "emergency"},
	{"month", "month", "monthly", "week", "weeks"},
	{"programming", "go", "golang", "programming", "code", "written", "coding"},
	{"services", "services", "service", "microservices"},
	{"kubernetes", "kubernetes", "deployed", "deploy", "cluster"},
	{"promotion", "promoted", "promotion", "career", "ladder", "advancement", "climbing"},
	{"hope", "hopes", "hope", "wish", "want", "wants", "would"},
	{"outage", "outage", "outages", "down", "downtime", "failed", "errors", "incident"},
	{"disk", "disk", "storage", "filled", "full"},
	{"logs", "logs", "logging"},
	{"cache", "cache", "redis", "memory"},
	{"queue", "queue", "backed", "delayed", "orders"},
	{"invoice", "invoice", "invoices", "bill", "inv"},
	{"overdue", "overdue", "late", "unpaid"},
	{"hosting", "cloud", "hosting"},
	{"rent", "rent", "landlord", "lease"},
	{"money", "euros", "euro", "money", "budget", "cost"},
	{"tax", "tax", "taxes", "return", "filed", "irs"},
	{"travel", "trip", "travel", "journey", "flights", "flight", "flying", "miles", "airline", "planning"},
	{"japan", "japan", "japanese", "tokyo", "temples"},
	{"passport", "passport", "document", "visa"},
	{"expiry", "expires", "expire", "expiry", "lapse", "expired", "validity"},
	{"seat", "seats", "seat", "sit", "aisle", "window"},
	{"preference", "prefers", "prefer", "like", "favourite", "favorite", "love"},
	{"hotel", "hotel", "nights", "stay"},
	{"music", "guitar", "classical", "instrument", "piano", "music"},
	{"learning", "learning", "studying", "study", "practising", "practice", "lessons", "vocabulary"},
	{"book", "reading", "novel", "read", "author", "books"},
	{"running", "marathon", "half", "race", "footrace", "running", "run"},
	{"chess", "chess", "kings", "pawns", "checkmate"},
	{"play", "plays", "play", "playing", "game", "online"},
	{"rating", "rated", "rating", "elo"},
	{"garden", "tomatoes", "basil", "grow", "balcony", "garden", "plants"},
	{"network", "wifi", "network", "internet", "router"},
	{"password", "password", "manager_pw", "credentials"},
	{"computer", "laptop", "thinkpad", "computer", "fedora", "linux"},
	{"printer", "printer", "paper", "jams", "print"},
	{"car", "car", "inspection", "vehicle"},
	{"plumbing", "plumber", "sink", "leak", "tap", "dripping", "pipe"},
	{"fix", "fixed", "repaired", "repair", "fix"},
	{"answer", "answers", "responses", "replies", "reply"},
	{"short", "short", "brief", "brevity", "concise"},
	{"emoji", "emojis", "emoji", "smileys"},
	{"style", "style", "tone", "guidance", "phrased"},
	{"language", "language", "languages"},
	{"timezone", "timezone", "time", "zone", "western", "european"},
	{"data", "data", "reporting", "pipeline", "analytics"},
	{"design", "designer", "design", "mobile", "app"},
	{"onboarding", "onboarding", "flow", "signup"},
	{"ticket", "ticket", "tickets", "tracks", "ops"},
	{"tests", "tests", "integration", "flaky", "build"},
	{"database", "postgres", "database", "db"},
	{"gift", "gift", "present", "give", "ceramics", "workshop"},
	{"number", "contacts", "number", "phone_number"},
	{"kitchen", "kitchen", "study"},
}

// stopWords carry no meaning for the fake.
var stopWords = strings.Fields(`a an the and or but of to in on at for with from by as is are was were be been
	do does did am i my me you your we our their his her its it this that these those what which who how
	where can should will every each after about up off no not never now last next`)

// conceptEmbedder is the deterministic embedding fake described in the
// file comment.
type conceptEmbedder struct {
	concept map[string]string // word → concept id
	stop    map[string]bool
}

func newConceptEmbedder() *conceptEmbedder {
	e := &conceptEmbedder{concept: map[string]string{}, stop: map[string]bool{}}
	for _, c := range concepts {
		for _, w := range c[1:] {
			e.concept[w] = c[0]
		}
	}
	for _, w := range stopWords {
		e.stop[w] = true
	}
	return e
}

func (*conceptEmbedder) Model() string { return "concept-fake-384" }

func (e *conceptEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.vector(t)
	}
	return out, ctx.Err()
}

// vector sums the concept vectors of text's words and the weakened
// vectors of its unknown words, and normalises the sum.
func (e *conceptEmbedder) vector(text string) []float32 {
	sum := make([]float64, retrievalDims)
	n := 0
	for _, w := range words(text) {
		if e.stop[w] {
			continue
		}
		seed, weight := "word:"+w, outOfVocabulary
		if c, ok := e.concept[w]; ok {
			seed, weight = "concept:"+c, 1
		}
		for j, x := range unitVector(seed) {
			sum[j] += weight * x
		}
		n++
	}
	if n == 0 {
		sum[0] = 1
	}
	var norm float64
	for _, x := range sum {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	v := make([]float32, retrievalDims)
	for j, x := range sum {
		v[j] = float32(x / norm)
	}
	return v
}

// unitVector is the fixed pseudo-random unit vector of a seed string.
func unitVector(seed string) []float64 {
	h := fnv.New64a()
	h.Write([]byte(seed))
	s := h.Sum64()
	rng := rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	v := make([]float64, retrievalDims)
	var norm float64
	for j := range v {
		v[j] = rng.NormFloat64()
		norm += v[j] * v[j]
	}
	norm = math.Sqrt(norm)
	for j := range v {
		v[j] /= norm
	}
	return v
}

// words splits text as SQLite's unicode61 tokenizer does: runs of letters
// and digits, lower-cased. (The set is plain ASCII, so the tokenizer's
// removal of diacritics does not matter here.)
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// retrievalMemories is the labelled set's memories, by key.
var retrievalMemories = map[string]string{
	"sister":              "The user's sister Ada lives in Lisbon with her two kids.",
	"mother-birthday":     "The user's mother celebrates her birthday on March 14.",
	"partner-allergy":     "Sam, the user's partner, is allergic to peanuts.",
	"dog-name":            "The family dog is a beagle called Biscuit.",
	"vet":                 "Biscuit has a vet appointment every April for vaccinations.",
	"coffee-pref":         "The user drinks a flat white every morning, never with sugar.",
	"diet":                "The user stopped eating meat last year and now follows a vegetarian diet.",
	"favorite-restaurant": "Their favourite restaurant is Tasca do Chico, a fado bar in Bairro Alto.",
	"cooking":             "On Sundays the user bakes sourdough bread.",
	"gym":                 "The user goes to the gym on Monday, Wednesday and Friday at 7am.",
	"back-pain":           "The user has lower back pain and sees a physiotherapist.",
	"sleep":               "The user struggles with insomnia and avoids screens after 10pm.",
	"doctor":              "Dr. Okafor is the user's general practitioner.",
	"job":                 "The user works as a backend engineer at Nordlys, a fintech startup.",
	"manager":             "The user's manager is Priya; their one-on-one is every Thursday.",
	"standup":             "Daily standup starts at 9:30 on the team's video call.",
	"deadline-q3":         "The payments API migration must ship before the end of September.",
	"oncall":              "The user is on pager duty the first week of every month.",
	"stack":               "The team's services are written in Go and deployed on Kubernetes.",
	"promotion":           "The user hopes to be promoted to staff engineer next year.",
	"inc-db7":             "Outage on db-7: the disk filled up with logs and writes failed for 40 minutes.",
	"inc-web3":            "Outage on web-3: a bad deploy returned errors to customers.",
	"inc-cache":           "Outage: the Redis cache ran out of memory during the sale.",
	"inc-dns":             "Outage caused by an expired DNS certificate on the login service.",
	"inc-queue":           "Outage: the message queue backed up and orders were delayed.",
	"inc-lb":              "Outage on the load balancer after a config change.",
	"inv-20417":           "Invoice INV-20417 from Acme for cloud hosting was paid on May 2.",
	"inv-20388":           "Invoice INV-20388 from Acme for the March cloud hosting is overdue; a reminder fee applies after June 1.",
	"inv-20391":           "Invoice INV-20391 from Acme.",
	"inv-20466":           "Invoice INV-20466 from Acme, paid.",
	"inv-20478":           "Invoice INV-20478 from Initech.",
	"inv-20489":           "Invoice INV-20489 from Acme, paid.",
	"inv-20493":           "Invoice INV-20493 from Umbrella.",
	"inv-20502":           "Invoice INV-20502 from Globex for licences is due in June.",
	"inv-20455":           "Invoice INV-20455 from Acme for support was paid in April.",
	"rent":                "Rent of 1450 euros is paid on the first of each month.",
	"budget":              "The household budget allows 400 euros a month for groceries.",
	"tax":                 "The tax return must be filed by June 30.",
	"bank":                "The user's savings account is at Millennium bank.",
	"trip-japan":          "The user is planning a trip to Japan in October to see Kyoto temples.",
	"passport":            "The user's passport expires in February 2027.",
	"flight-pref":         "The user prefers aisle seats on long flights.",
	"hotel":               "Booked the Hotel Granvia in Kyoto for five nights.",
	"airline-miles":       "The user collects miles with TAP Air Portugal.",
	"guitar":              "The user is learning to play classical guitar, practising 20 minutes a day.",
	"books":               "The user is reading The Left Hand of Darkness by Ursula K. Le Guin.",
	"running":             "The user is training for the Lisbon half marathon in March.",
	"chess":               "The user plays chess online in the evenings, rated about 1600.",
	"garden":              "Tomatoes and basil grow on the balcony.",
	"wifi":                "The home wifi password is kept in the password manager.",
	"laptop":              "The user's laptop is a ThinkPad X1 Carbon running Fedora.",
	"printer":             "The printer in the study jams when using thick paper.",
	"car":                 "The car needs its annual inspection in August.",
	"plumber":             "The plumber, Rui, fixed the kitchen sink leak; his number is in contacts.",
	"tone":                "The user wants short answers without emojis.",
	"language":            "The user is learning Japanese and wants occasional vocabulary practice.",
	"timezone":            "The user lives in Lisbon, in the Western European time zone.",
	"meeting-pref":        "The user prefers no meetings before 10 in the morning.",
	"colleague-luis":      "Luis from the data team owns the reporting pipeline.",
	"colleague-mei":       "Mei is the designer for the mobile app.",
	"project-atlas":       "Project Atlas is the rewrite of the onboarding flow, due in November.",
	"ticket-7731":         "Ticket OPS-7731 tracks the flaky integration tests.",
	"ticket-7790":         "Ticket OPS-7790 tracks the slow build pipeline; CI takes forty minutes since the monorepo merge.",
	"ticket-7745":         "Ticket OPS-7745 tracks flaky tests.",
	"ticket-7768":         "Ticket OPS-7768 tracks the build cache.",
	"ticket-7811":         "Ticket OPS-7811 tracks test timeouts.",
	"ticket-7823":         "Ticket OPS-7823 tracks build failures.",
	"ticket-7802":         "Ticket OPS-7802 tracks upgrading the Postgres version.",
	"friend-birthday":     "Best friend Marta's birthday is on July 9.",
	"gift-idea":           "Marta would love a ceramics workshop as a gift.",
}

// Kinds of query.
const (
	paraphrase = "paraphrase"
	exact      = "exact"
	ordinary   = "ordinary"
)

// retrievalQueries are the labelled queries and the keys of the memories
// relevant to each.
var retrievalQueries = []struct {
	kind, query string
	relevant    []string
}{
	{paraphrase, "which town does my sis call home", []string{"sister"}},
	{paraphrase, "what date does mum get older", []string{"mother-birthday"}},
	{paraphrase, "nut intolerance of my spouse", []string{"partner-allergy"}},
	{paraphrase, "when are the puppy jabs at the animal clinic", []string{"vet"}},
	{paraphrase, "how do i take my caffeine at breakfast", []string{"coffee-pref"}},
	{paraphrase, "is pork or beef off my menu", []string{"diet"}},
	{paraphrase, "which weekdays do i exercise", []string{"gym"}},
	{paraphrase, "trouble dozing off at night", []string{"sleep"}},
	{paraphrase, "name of my boss", []string{"manager"}},
	{paraphrase, "deadline for moving billing endpoints over", []string{"deadline-q3"}},
	{paraphrase, "when am i paged for emergencies", []string{"oncall"}},
	{paraphrase, "which programming language do our microservices use", []string{"stack"}},
	{paraphrase, "climbing a career ladder at my job", []string{"promotion"}},
	{paraphrase, "when does my travel document lapse", []string{"passport"}},
	{paraphrase, "where do i like to sit when flying", []string{"flight-pref"}},
	{paraphrase, "what instrument am i studying", []string{"guitar"}},
	{paraphrase, "which footrace am i preparing toward", []string{"running"}},
	{paraphrase, "my elo playing kings versus pawns", []string{"chess"}},
	{paraphrase, "who repaired my dripping tap", []string{"plumber"}},
	{paraphrase, "style guidance for my responses: brevity, no smileys", []string{"tone"}},
	{exact, "db-7 outage", []string{"inc-db7"}},
	{exact, "INV-20388", []string{"inv-20388"}},
	{exact, "OPS-7790", []string{"ticket-7790"}},
	{exact, "Globex invoice", []string{"inv-20502"}},
	{exact, "Tasca do Chico", []string{"favorite-restaurant"}},
	{exact, "Priya", []string{"manager"}},
	{exact, "Okafor", []string{"doctor"}},
	{exact, "Biscuit", []string{"dog-name", "vet"}},
	{ordinary, "sourdough bread", []string{"cooking"}},
	{ordinary, "tax return deadline", []string{"tax"}},
	{ordinary, "Kyoto trip hotel", []string{"trip-japan", "hotel"}},
	{ordinary, "Marta birthday", []string{"friend-birthday"}},
	{ordinary, "back pain physiotherapist", []string{"back-pain"}},
}

// failingKeywords is an index whose keyword search is down, so that a
// Memory over it searches by vectors alone (method semantic_fallback).
type failingKeywords struct{ memory.Index }

func (failingKeywords) Keyword(context.Context, string, string, string, memory.Filter, int) ([]memory.Match, error) {
	return nil, errors.New("keyword search disabled for the measurement")
}

func TestRetrievalQuality(t *testing.T) {
	for _, q := range retrievalQueries {
		for _, k := range q.relevant {
			if _, ok := retrievalMemories[k]; !ok {
				t.Fatalf("query %q names unknown memory %q", q.query, k)
			}
		}
		if q.kind != paraphrase {
			continue
		}
		qw := map[string]bool{}
		for _, w := range words(q.query) {
			qw[w] = true
		}
		for _, k := range q.relevant {
			for _, w := range words(retrievalMemories[k]) {
				if qw[w] {
					t.Fatalf("paraphrase %q shares the word %q with its target %s", q.query, w, k)
				}
			}
		}
	}

	db, err := sqlite.Open(filepath.Join(t.TempDir(), "retrieval.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	newMemory := func(idx memory.Index, emb memory.Embedder) *memory.Memory {
		m, err := memory.New(idx, memory.Options{Embedder: emb, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	emb := newConceptEmbedder()
	hybrid := newMemory(db.MemoryIndex(), emb)
	ctx := context.Background()
	for _, k := range slices.Sorted(maps.Keys(retrievalMemories)) {
		if err := hybrid.Store(ctx, memory.Entry{Agent: "main", Key: k, Text: retrievalMemories[k], Category: memory.Custom}); err != nil {
			t.Fatal(err)
		}
	}

	searches := []struct {
		name   string
		mem    *memory.Memory
		method string
	}{
		{"bm25", newMemory(db.MemoryIndex(), nil), memory.MethodBM25Fallback},
		{"vector", newMemory(failingKeywords{db.MemoryIndex()}, emb), memory.MethodSemanticFallback},
		{"hybrid", hybrid, memory.MethodHybrid},
	}
	recall := map[string]float64{}
	byKind := map[string]map[string]float64{}
	for _, s := range searches {
		byKind[s.name] = map[string]float64{}
		kinds := map[string]int{}
		var total float64
		for _, q := range retrievalQueries {
			res, err := s.mem.Search(ctx, "main", "", q.query, memory.SearchOptions{Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			if res.Method != s.method {
				t.Fatalf("%s search of %q: method %q, want %q", s.name, q.query, res.Method, s.method)
			}
			var got []string
			for _, h := range res.Hits {
				got = append(got, h.Entry.Key)
			}
			found := 0
			for _, k := range q.relevant {
				if slices.Contains(got, k) {
					found++
				}
			}
			r := float64(found) / float64(len(q.relevant))
			total += r
			byKind[s.name][q.kind] += r
			kinds[q.kind]++
			if testing.Verbose() && r < 1 {
				t.Logf("%-6s missed %v for %q: top 5 %v", s.name, q.relevant, q.query, got)
			}
		}
		recall[s.name] = total / float64(len(retrievalQueries))
		for k, n := range kinds {
			byKind[s.name][k] /= float64(n)
		}
	}
	for _, s := range searches {
		b := byKind[s.name]
		t.Logf("recall@5 %-6s %.3f  (paraphrase %.2f, exact %.2f, ordinary %.2f)", s.name, recall[s.name], b[paraphrase], b[exact], b[ordinary])
	}
	t.Logf("%d memories, %d queries", len(retrievalMemories), len(retrievalQueries))
	if recall["hybrid"] < recall["bm25"] || recall["hybrid"] < recall["vector"] {
		t.Errorf("hybrid recall@5 %.3f is below BM25 alone (%.3f) or vectors alone (%.3f)", recall["hybrid"], recall["bm25"], recall["vector"])
	}
	// The set is meant to need both: paraphrases defeat BM25, exact
	// look-ups among near-duplicates trouble vectors.
	if byKind["bm25"][paraphrase] != 0 {
		t.Errorf("BM25 found paraphrases that share no word with their targets: %.2f", byKind["bm25"][paraphrase])
	}
}
