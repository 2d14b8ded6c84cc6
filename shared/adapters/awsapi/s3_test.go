package awsapi

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"
)

// s3Seen is a request as an S3 server saw it.
type s3Seen struct {
	Host, Method, Target, Body string
	Header                     map[string]string
	Problem                    string
}

// s3Server records the requests it gets, checks their signature as S3
// does, and answers each with answer.
func s3Server(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *[]s3Seen) {
	t.Helper()
	var seen []s3Seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := map[string]string{}
		for _, k := range []string{"Range", "If-Match", "If-None-Match", "Content-Md5"} {
			if v := r.Header.Get(k); v != "" {
				h[k] = v
			}
		}
		seen = append(seen, s3Seen{r.Host, r.Method, r.URL.RequestURI(), string(body), h, verify(r, body, "s3", "eu-west-1")})
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// Each operation's request: the key escaped but for "/" (and signed as
// sent, not escaped again), the operation named by x-id where PutObject
// and CopyObject, say, would share a path, the conditions and range as
// headers, DeleteObjects' body with its Content-MD5; path-style at an
// endpoint of one's own.
func TestS3Requests(t *testing.T) {
	srv, seen := s3Server(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Query().Has("list-type"):
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>`+
				`<Contents><Key>a b/x.md</Key><LastModified>2026-12-07T10:00:00.000Z</LastModified><ETag>"e1"</ETag><Size>3</Size></Contents>`+
				`<CommonPrefixes><Prefix>a b/sub/</Prefix></CommonPrefixes><IsTruncated>true</IsTruncated><NextContinuationToken>tok 2</NextContinuationToken></ListBucketResult>`)
		case r.URL.Query().Has("delete"):
			fmt.Fprint(w, `<DeleteResult><Error><Key>k2</Key><Code>AccessDenied</Code><Message>Access Denied</Message></Error></DeleteResult>`)
		case r.Method == http.MethodPut:
			w.Header().Set("ETag", `"e2"`)
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			w.Header().Set("ETag", `"e1"`)
			w.Header().Set("Last-Modified", "Mon, 07 Dec 2026 10:00:00 GMT")
			w.Header().Set("Content-Range", "bytes 0-1/3")
			w.Header().Set("Content-Length", "2")
			if r.Method == http.MethodGet {
				fmt.Fprint(w, "ab")
			}
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	s3, err := NewS3(testConfig("eu-west-1"), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	key := "a b/ü+x.md"
	mod := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

	got, err := s3.GetObject(ctx, "b", key, "bytes=0-1")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if string(data) != "ab" || got.ContentRange != "bytes 0-1/3" || got.Object != (Object{Key: key, Size: 2, ETag: `"e1"`, LastModified: mod}) {
		t.Errorf("GetObject = %q, %+v", data, got)
	}
	if o, err := s3.HeadObject(ctx, "b", key); err != nil || o != (Object{Key: key, Size: 2, ETag: `"e1"`, LastModified: mod}) {
		t.Errorf("HeadObject = %+v, %v", o, err)
	}
	if etag, err := s3.PutObject(ctx, PutObjectInput{Bucket: "b", Key: key, Body: []byte("abc"), IfMatch: `"e1"`}); err != nil || etag != `"e2"` {
		t.Errorf("PutObject = %q, %v", etag, err)
	}
	if _, err := s3.PutObject(ctx, PutObjectInput{Bucket: "b", Key: "new.md", IfNoneMatch: "*"}); err != nil {
		t.Errorf("PutObject of nothing: %v", err)
	}
	if err := s3.DeleteObject(ctx, "b", key); err != nil {
		t.Error(err)
	}
	failed, err := s3.DeleteObjects(ctx, "b", []string{"k1", "k2"})
	if diff := cmp.Diff([]DeleteError{{Key: "k2", Code: "AccessDenied", Message: "Access Denied"}}, failed); err != nil || diff != "" {
		t.Errorf("DeleteObjects: %v (-want +got):\n%s", err, diff)
	}
	page, err := s3.ListObjectsV2(ctx, ListObjectsV2Input{Bucket: "b", Prefix: "a b/", Delimiter: "/", MaxKeys: 2, ContinuationToken: "tok 1"})
	want := &ListObjectsV2Output{Contents: []Object{{Key: "a b/x.md", Size: 3, ETag: `"e1"`, LastModified: mod}},
		CommonPrefixes: []string{"a b/sub/"}, IsTruncated: true, NextContinuationToken: "tok 2"}
	if diff := cmp.Diff(want, page); err != nil || diff != "" {
		t.Errorf("ListObjectsV2: %v (-want +got):\n%s", err, diff)
	}

	host := strings.TrimPrefix(srv.URL, "http://")
	const escaped = "/b/a%20b/%C3%BC%2Bx.md"
	md5Of := func(s string) string { sum := md5.Sum([]byte(s)); return base64.StdEncoding.EncodeToString(sum[:]) }
	deleteBody := `<Delete xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Object><Key>k1</Key></Object><Object><Key>k2</Key></Object><Quiet>true</Quiet></Delete>`
	wantSeen := []s3Seen{
		{host, "GET", escaped + "?x-id=GetObject", "", map[string]string{"Range": "bytes=0-1"}, ""},
		{host, "HEAD", escaped, "", map[string]string{}, ""},
		{host, "PUT", escaped + "?x-id=PutObject", "abc", map[string]string{"If-Match": `"e1"`, "Content-Md5": md5Of("abc")}, ""},
		{host, "PUT", "/b/new.md?x-id=PutObject", "", map[string]string{"If-None-Match": "*", "Content-Md5": md5Of("")}, ""},
		{host, "DELETE", escaped + "?x-id=DeleteObject", "", map[string]string{}, ""},
		{host, "POST", "/b?delete=", deleteBody, map[string]string{"Content-Md5": md5Of(deleteBody)}, ""},
		{host, "GET", "/b?continuation-token=tok%201&delimiter=%2F&list-type=2&max-keys=2&prefix=a%20b%2F", "", map[string]string{}, ""},
	}
	if diff := cmp.Diff(wantSeen, *seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// Without an endpoint of one's own a bucket is its own virtual host,
// but for a name with a dot, which goes in the path.
func TestS3VirtualHosts(t *testing.T) {
	srv, seen := s3Server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			fmt.Fprint(w, `<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>`)
		}
	})
	cfg := testConfig("eu-west-1")
	// The requests meant for S3 reach srv, keeping their Host.
	cfg.HTTPClient = &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r.URL.Scheme, r.URL.Host = "http", strings.TrimPrefix(srv.URL, "http://")
		return http.DefaultTransport.RoundTrip(r)
	})}
	s3, err := NewS3(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s3.DeleteObject(ctx, "workspaces-1", "agents/a.md"); err != nil {
		t.Error(err)
	}
	if _, err := s3.ListObjectsV2(ctx, ListObjectsV2Input{Bucket: "workspaces-1", MaxKeys: 1}); err != nil {
		t.Error(err)
	}
	if err := s3.DeleteObject(ctx, "my.bucket", "a.md"); err != nil {
		t.Error(err)
	}
	want := []s3Seen{
		{"workspaces-1.s3.eu-west-1.amazonaws.com", "DELETE", "/agents/a.md?x-id=DeleteObject", "", map[string]string{}, ""},
		{"workspaces-1.s3.eu-west-1.amazonaws.com", "GET", "/?list-type=2&max-keys=1", "", map[string]string{}, ""},
		{"s3.eu-west-1.amazonaws.com", "DELETE", "/my.bucket/a.md?x-id=DeleteObject", "", map[string]string{}, ""},
	}
	if diff := cmp.Diff(want, *seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	cfg.BaseEndpoint = aws.String(srv.URL)
	if s3, err := NewS3(cfg, ""); err != nil || !s3.pathStyle {
		t.Errorf("AWS_ENDPOINT_URL: path-style %v, %v; want path-style", s3 != nil && s3.pathStyle, err)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A truncated listing must say where to go on.
func TestS3TruncatedWithoutToken(t *testing.T) {
	srv, _ := s3Server(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>`)
	})
	s3, err := NewS3(testConfig("eu-west-1"), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.ListObjectsV2(context.Background(), ListObjectsV2Input{Bucket: "b", MaxKeys: 1}); err == nil || !strings.Contains(err.Error(), "NextContinuationToken") {
		t.Errorf("ListObjectsV2 of a truncated page without a token: %v", err)
	}
}
