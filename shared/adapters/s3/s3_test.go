package s3_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore/filestoretest"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// The adapter against a real S3-compatible server (gofakes3 over HTTP),
// at the bucket's root and under a prefix whose neighbour ("agents/mainly"
// beside "agents/main") it must not see.
func TestConformance(t *testing.T) {
	t.Run("Root", func(t *testing.T) {
		filestoretest.Run(t, func(t *testing.T) filestore.FS { return cloudtest.S3FS(t, "") })
	})
	t.Run("Prefix", func(t *testing.T) {
		filestoretest.Run(t, func(t *testing.T) filestore.FS {
			root := cloudtest.S3FS(t, "")
			write(t, root, "agents/mainly/other.md", "not mine")
			write(t, root, "agents/main.md", "not mine either")
			sub, err := root.Sub("agents/main")
			if err != nil {
				t.Fatal(err)
			}
			return sub
		})
	})
	t.Run("SmallPages", func(t *testing.T) {
		s3fs.SetPageSize(t, 2)
		filestoretest.Run(t, func(t *testing.T) filestore.FS { return cloudtest.S3FS(t, "") })
	})
}

func write(t *testing.T, f filestore.FS, name, data string) {
	t.Helper()
	if _, err := f.WriteFile(context.Background(), name, []byte(data), filestore.Any); err != nil {
		t.Fatalf("WriteFile(%s): %v", name, err)
	}
}

// Listings span several pages: Walk, RemoveAll, and ReadDir, which sorts
// by name what S3 lists by key ("a.txt" before "a/").
func TestPages(t *testing.T) {
	ctx := context.Background()
	s3fs.SetPageSize(t, 2)
	f := cloudtest.S3FS(t, "ws")
	for _, n := range []string{"a-b", "a.txt", "a/x.md", "a.b-c/y.md", "b", "c/1", "c/2", "c/3", "c/4", "c/5", "d"} {
		write(t, f, n, n)
	}
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{1, []string{"a/"}},
		{2, []string{"a/", "a-b"}},
		{3, []string{"a/", "a-b", "a.b-c/"}},
		{4, []string{"a/", "a-b", "a.b-c/", "a.txt"}},
		{100, []string{"a/", "a-b", "a.b-c/", "a.txt", "b", "c/", "d"}},
	} {
		es, err := f.ReadDir(ctx, ".", tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Name+map[bool]string{true: "/"}[e.IsDir()])
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ReadDir(., %d) (-want +got):\n%s", tc.limit, diff)
		}
	}
	var walked []string
	if err := f.Walk(ctx, "c", func(name string, _ filestore.Entry) error {
		walked = append(walked, name)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c/1", "c/2", "c/3", "c/4", "c/5"}, walked); diff != "" {
		t.Errorf("Walk(c) (-want +got):\n%s", diff)
	}
	if err := f.RemoveAll(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadDir(ctx, "c", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadDir(c) after RemoveAll: %v, want fs.ErrNotExist", err)
	}
	if es, err := f.ReadDir(ctx, ".", 100); err != nil || len(es) != 6 {
		t.Errorf("after RemoveAll(c) the root holds %d entries (%v), want 6", len(es), err)
	}
}

// Invalid names and keys S3 would refuse fail before any request.
func TestInvalidNamesSendNothing(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.Error(w, "", http.StatusInternalServerError)
	}))
	defer srv.Close()
	f, err := s3fs.New(cloudtest.S3Client(t, srv.URL), "b", "agents/main")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"../x", "a//b", "/abs", "bad\xffutf8", strings.Repeat("k", 1020)} {
		for op, err := range map[string]error{
			"Stat":      second(f.Stat(ctx, name)),
			"WriteFile": second(f.WriteFile(ctx, name, nil, filestore.Any)),
			"Walk":      f.Walk(ctx, name, func(string, filestore.Entry) error { return nil }),
			"RemoveAll": f.RemoveAll(ctx, name),
		} {
			if !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("%s(%.20q): %v, want fs.ErrInvalid", op, name, err)
			}
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached S3", n)
	}
	if _, err := s3fs.New(cloudtest.S3Client(t, srv.URL), "b", "../up"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("a prefix reaching up: %v, want fs.ErrInvalid", err)
	}
}

// S3's failures become the port's errors, and their text holds S3's code
// and status, not the service's whole message (request ids, the endpoint).
func TestErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name         string
		status       int
		code         string
		call         func(f filestore.FS) error
		is           error
		wantText     string
		notInMessage string
	}{
		{"refused", http.StatusForbidden, "AccessDenied", func(f filestore.FS) error { return third(f.ReadFile(ctx, "MEMORY.md", 10)) },
			fs.ErrPermission, "read MEMORY.md: S3 GetObject: AccessDenied (HTTP 403)", "req-secret-id"},
		{"conditional conflict", http.StatusConflict, "ConditionalRequestConflict", func(f filestore.FS) error {
			return second(f.WriteFile(ctx, "MEMORY.md", []byte("x"), filestore.Absent))
		}, filestore.ErrConflict, "write MEMORY.md: the file changed since it was read", "req-secret-id"},
		{"precondition", http.StatusPreconditionFailed, "PreconditionFailed", func(f filestore.FS) error {
			return second(f.WriteFile(ctx, "MEMORY.md", []byte("x"), `"etag"`))
		}, filestore.ErrConflict, "write MEMORY.md: the file changed since it was read", "req-secret-id"},
		{"no bucket", http.StatusNotFound, "NoSuchBucket", func(f filestore.FS) error {
			return f.Walk(ctx, ".", func(string, filestore.Entry) error { return nil })
		}, nil, "walk .: S3 ListObjectsV2: NoSuchBucket (HTTP 404)", "req-secret-id"},
		{"no bucket is not a missing file", http.StatusNotFound, "NoSuchBucket", func(f filestore.FS) error {
			return third(f.ReadFile(ctx, "MEMORY.md", 10))
		}, nil, "read MEMORY.md: S3 GetObject: NoSuchBucket (HTTP 404)", "req-secret-id"},
		{"server error", http.StatusInternalServerError, "InternalError", func(f filestore.FS) error {
			return f.Walk(ctx, "notes", func(string, filestore.Entry) error { return nil })
		}, nil, "walk notes: S3 ListObjectsV2: InternalError (HTTP 500)", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/xml")
				w.Header().Set("x-amz-request-id", "req-secret-id")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>detail req-secret-id</Message><RequestId>req-secret-id</RequestId></Error>`, tc.code)
			}))
			defer srv.Close()
			api := cloudtest.S3Client(t, srv.URL)
			f, err := s3fs.New(api, "b", "")
			if err != nil {
				t.Fatal(err)
			}
			err = tc.call(f)
			if err == nil {
				t.Fatal("no error")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("%v does not match %v", err, tc.is)
			}
			if errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%v matches fs.ErrNotExist", err)
			}
			if err.Error() != tc.wantText || strings.Contains(err.Error(), tc.notInMessage) {
				t.Errorf("error text %q, want %q", err, tc.wantText)
			}
		})
	}
	t.Run("cancelled", func(t *testing.T) {
		f := cloudtest.S3FS(t, "")
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := f.Stat(cctx, "x"); !errors.Is(err, context.Canceled) {
			t.Errorf("Stat with a cancelled context: %v", err)
		}
	})
}

// ReadFile asks for the limit's bytes only, and reads the size from
// Content-Range.
func TestReadFileRange(t *testing.T) {
	endpoint, bucket := cloudtest.S3(t)
	var ranges []string
	f, err := s3fs.New(cloudtest.S3Client(t, proxy(t, endpoint, func(r *http.Request, _ *http.Response) {
		if r.Method == http.MethodGet {
			ranges = append(ranges, r.Header.Get("Range"))
		}
	})), bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "big.md", strings.Repeat("x", 5000))
	got, e, err := f.ReadFile(context.Background(), "big.md", 100)
	if err != nil || len(got) != 100 || e.Size != 5000 {
		t.Errorf("ReadFile = %d bytes, size %d, %v; want 100 of 5000", len(got), e.Size, err)
	}
	if diff := cmp.Diff([]string{"bytes=0-99"}, ranges); diff != "" {
		t.Errorf("GET ranges (-want +got):\n%s", diff)
	}
}

// StatFile describes a file with one HEAD and calls anything else missing,
// a directory too, without listing.
func TestStatFile(t *testing.T) {
	endpoint, bucket := cloudtest.S3(t)
	var calls []string
	f, err := s3fs.New(cloudtest.S3Client(t, proxy(t, endpoint, func(r *http.Request, _ *http.Response) {
		if r.Method != http.MethodPut {
			calls = append(calls, r.Method+" "+r.URL.Query().Get("list-type"))
		}
	})), bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, err := f.WriteFile(ctx, "dir/MEMORY.md", []byte("tea"), filestore.Any)
	if err != nil {
		t.Fatal(err)
	}
	e, err := f.StatFile(ctx, "dir/MEMORY.md")
	if err != nil || e.Version != w.Version || e.Size != 3 || e.Name != "MEMORY.md" {
		t.Errorf("StatFile of a file = %+v, %v; want the written %+v", e, err, w)
	}
	for _, name := range []string{"dir", "dir/missing.md"} {
		if _, err := f.StatFile(ctx, name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("StatFile(%s): %v, want fs.ErrNotExist", name, err)
		}
	}
	if diff := cmp.Diff([]string{"HEAD ", "HEAD ", "HEAD "}, calls); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// S3 answers 403, not 404, for a missing key to a caller whose
// s3:ListBucket is limited to prefixes, as the stack's functions are:
// the adapter still tells a missing file. A refusal of a key that exists
// stays a refusal.
func TestForbiddenMeansMissing(t *testing.T) {
	forbid := func(r *http.Request, resp *http.Response) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && resp.StatusCode == http.StatusNotFound && r.URL.Query().Get("list-type") == "" {
			resp.StatusCode = http.StatusForbidden
			resp.Body = io.NopCloser(strings.NewReader(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
		}
	}
	filestoretest.Run(t, func(t *testing.T) filestore.FS {
		endpoint, bucket := cloudtest.S3(t)
		f, err := s3fs.New(cloudtest.S3Client(t, proxy(t, endpoint, forbid)), bucket, "agents/main")
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
	endpoint, bucket := cloudtest.S3(t)
	f, err := s3fs.New(cloudtest.S3Client(t, proxy(t, endpoint, func(r *http.Request, resp *http.Response) {
		if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "" {
			resp.StatusCode = http.StatusForbidden
			resp.Body = io.NopCloser(strings.NewReader(`<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
		}
	})), bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	write(t, f, "secret.md", "x")
	if _, _, err := f.ReadFile(context.Background(), "secret.md", 10); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("ReadFile of a refused key: %v, want fs.ErrPermission", err)
	}
}

// proxy forwards requests to endpoint, letting edit see each request and
// change its answer.
func proxy(t *testing.T, endpoint string, edit func(*http.Request, *http.Response)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := r.Clone(r.Context())
		out.URL.Scheme, out.URL.Host, out.RequestURI = "http", strings.TrimPrefix(endpoint, "http://"), ""
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			t.Errorf("proxy: %v", err)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		status := resp.StatusCode
		edit(r, resp)
		if resp.StatusCode != status {
			resp.Header.Del("Content-Length")
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }
