package awsapi

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// S3 is the S3 API (restXml): the object operations the file port calls
// (adapters/s3). Buckets are addressed virtual-hosted
// (https://<bucket>.s3.<region>.amazonaws.com/<key>), as the SDK
// addresses them, but path-style (<endpoint>/<bucket>/<key>) at an
// endpoint of one's own (an S3-compatible server, as in tests) and for a
// bucket whose name holds a dot, which no certificate of S3's covers.
type S3 struct {
	c *Client
	// pathStyle addresses every bucket in the path.
	pathStyle bool
}

var s3Service = Service{Name: "S3", Prefix: "s3", Signing: "s3", protocol: restXML, s3: true}

// NewS3 returns an S3 client of cfg; endpoint, when not empty, overrides
// cfg.BaseEndpoint and the Region's, and either means path-style
// addressing.
func NewS3(cfg aws.Config, endpoint string) (*S3, error) {
	c, err := newClient(cfg, s3Service, endpoint)
	if err != nil {
		return nil, err
	}
	return &S3{c: c, pathStyle: endpoint != "" || aws.ToString(cfg.BaseEndpoint) != ""}, nil
}

// Object describes an object: what HeadObject, GetObject and a listing
// tell of it.
type Object struct {
	Key          string
	Size         int64
	ETag         string
	LastModified time.Time
}

// GetObjectOutput is an object's content: Body, which the caller
// closes, is the part Range asked for, and ContentRange says which
// ("bytes 0-99/5000").
type GetObjectOutput struct {
	Object
	ContentRange string
	Body         io.ReadCloser
}

// GetObject reads the object bucket/key, the bytes rng names ("" for
// all, "bytes=0-99"). A missing key is NoSuchKey (404), or AccessDenied
// (403) to a caller that may not list it.
func (s *S3) GetObject(ctx context.Context, bucket, key, rng string) (*GetObjectOutput, error) {
	r := s.request("GetObject", http.MethodGet, bucket, key, nil)
	if rng != "" {
		r.header.Set("Range", rng)
	}
	r.stream = true
	res, err := s.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	o, err := s.described("GetObject", key, res.header)
	if err != nil {
		res.stream.Close()
		return nil, err
	}
	return &GetObjectOutput{Object: o, ContentRange: res.header.Get("Content-Range"), Body: res.stream}, nil
}

// HeadObject describes the object bucket/key. A missing key is NotFound
// (404, S3 answers a HEAD with no body), or Forbidden (403) to a caller
// that may not list it.
func (s *S3) HeadObject(ctx context.Context, bucket, key string) (Object, error) {
	res, err := s.c.do(ctx, s.request("HeadObject", http.MethodHead, bucket, key, nil))
	if err != nil {
		return Object{}, err
	}
	return s.described("HeadObject", key, res.header)
}

// described reads an object's description from the headers of op's
// answer.
func (s *S3) described(op, key string, h http.Header) (Object, error) {
	o := Object{Key: key, ETag: h.Get("ETag")}
	if v := h.Get("Content-Length"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return Object{}, fmt.Errorf("%s %s: Content-Length %q", s.c.svc.Name, op, v)
		}
		o.Size = n
	}
	if v := h.Get("Last-Modified"); v != "" {
		t, err := http.ParseTime(v)
		if err != nil {
			return Object{}, fmt.Errorf("%s %s: Last-Modified %q: %w", s.c.svc.Name, op, v, err)
		}
		o.LastModified = t
	}
	return o, nil
}

// PutObjectInput is an object to write, conditionally: IfMatch an ETag
// the object must have, IfNoneMatch "*" for no object.
type PutObjectInput struct {
	Bucket, Key          string
	Body                 []byte
	IfMatch, IfNoneMatch string
}

// PutObject writes in's object whole and returns its ETag. A condition
// that does not hold is PreconditionFailed (412); another conditional
// write of the key under way, ConditionalRequestConflict (409). The
// body's MD5 goes with it (Content-MD5), for S3 to refuse a damaged one.
func (s *S3) PutObject(ctx context.Context, in PutObjectInput) (string, error) {
	r := s.request("PutObject", http.MethodPut, in.Bucket, in.Key, in.Body)
	contentMD5(r.header, in.Body)
	if in.IfMatch != "" {
		r.header.Set("If-Match", in.IfMatch)
	}
	if in.IfNoneMatch != "" {
		r.header.Set("If-None-Match", in.IfNoneMatch)
	}
	res, err := s.c.do(ctx, r)
	if err != nil {
		return "", err
	}
	return res.header.Get("ETag"), nil
}

// DeleteObject deletes the object bucket/key (a missing one too).
func (s *S3) DeleteObject(ctx context.Context, bucket, key string) error {
	_, err := s.c.do(ctx, s.request("DeleteObject", http.MethodDelete, bucket, key, nil))
	return err
}

// DeleteError is a key DeleteObjects did not delete.
type DeleteError struct {
	Key, Code, Message string
}

// DeleteObjects deletes keys of bucket (at most 1,000) in one request,
// quietly, and returns those it did not delete.
func (s *S3) DeleteObjects(ctx context.Context, bucket string, keys []string) ([]DeleteError, error) {
	const op = "DeleteObjects"
	type object struct{ Key string }
	del := struct {
		XMLName xml.Name `xml:"http://s3.amazonaws.com/doc/2006-03-01/ Delete"`
		Objects []object `xml:"Object"`
		Quiet   bool
	}{Quiet: true}
	for _, k := range keys {
		del.Objects = append(del.Objects, object{k})
	}
	body, err := xml.Marshal(del)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", s.c.svc.Name, op, err)
	}
	r := s.request(op, http.MethodPost, bucket, "", body)
	r.path += "?delete"
	r.header.Set("Content-Type", "application/xml")
	contentMD5(r.header, body) // S3 refuses a DeleteObjects without it
	res, err := s.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	var out struct {
		Errors []DeleteError `xml:"Error"`
	}
	if err := s.c.decodeXML(op, res.body, &out); err != nil {
		return nil, err
	}
	return out.Errors, nil
}

// ListObjectsV2Input is a page of a bucket's listing: the keys under
// Prefix, after ContinuationToken (a previous page's
// NextContinuationToken), MaxKeys (1–1,000) at most; with a Delimiter,
// the keys holding it after the prefix are rolled up into
// CommonPrefixes.
type ListObjectsV2Input struct {
	Bucket, Prefix, Delimiter, ContinuationToken string
	MaxKeys                                      int
}

// ListObjectsV2Output is a page of a listing, in the keys' byte order.
type ListObjectsV2Output struct {
	Contents              []Object
	CommonPrefixes        []string
	IsTruncated           bool
	NextContinuationToken string
}

// ListObjectsV2 lists a page of in's keys.
func (s *S3) ListObjectsV2(ctx context.Context, in ListObjectsV2Input) (*ListObjectsV2Output, error) {
	const op = "ListObjectsV2"
	q := url.Values{"list-type": {"2"}, "max-keys": {strconv.Itoa(in.MaxKeys)}}
	for k, v := range map[string]string{"prefix": in.Prefix, "delimiter": in.Delimiter, "continuation-token": in.ContinuationToken} {
		if v != "" {
			q.Set(k, v)
		}
	}
	r := s.request(op, http.MethodGet, in.Bucket, "", nil)
	r.path += "?" + strings.ReplaceAll(q.Encode(), "+", "%20")
	res, err := s.c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	var page struct {
		Contents []struct {
			Key, ETag    string
			Size         int64
			LastModified time.Time
		}
		CommonPrefixes []struct{ Prefix string }
		IsTruncated    bool
		NextToken      string `xml:"NextContinuationToken"`
	}
	if err := s.c.decodeXML(op, res.body, &page); err != nil {
		return nil, err
	}
	out := &ListObjectsV2Output{IsTruncated: page.IsTruncated, NextContinuationToken: page.NextToken}
	for _, c := range page.Contents {
		out.Contents = append(out.Contents, Object{Key: c.Key, Size: c.Size, ETag: c.ETag, LastModified: c.LastModified})
	}
	for _, p := range page.CommonPrefixes {
		out.CommonPrefixes = append(out.CommonPrefixes, p.Prefix)
	}
	if out.IsTruncated && out.NextContinuationToken == "" {
		return nil, fmt.Errorf("%s %s: a truncated page without a NextContinuationToken", s.c.svc.Name, op)
	}
	return out, nil
}

// request is op on bucket's key ("" for the bucket), its key's bytes
// escaped but for "/", as S3 signs and reads them.
func (s *S3) request(op, method, bucket, key string, body []byte) request {
	r := request{op: op, method: method, path: "/" + percentEncode(key, "-_.~/"), header: http.Header{}, body: body}
	switch {
	case !s.pathStyle && !strings.Contains(bucket, "."):
		r.host = bucket + "." + s.c.endpoint.Host
	case key == "":
		r.path = "/" + bucket
	default:
		r.path = "/" + bucket + r.path
	}
	if key != "" && method != http.MethodHead {
		// The operation's name, as the SDK sends it: PutObject and
		// CopyObject, say, share a method and path.
		r.path += "?x-id=" + op
	}
	return r
}

// contentMD5 sets Content-MD5, the base64 MD5 of body.
func contentMD5(h http.Header, body []byte) {
	sum := md5.Sum(body)
	h.Set("Content-MD5", base64.StdEncoding.EncodeToString(sum[:]))
}

// decodeXML reads an XML answer into out.
func (c *Client) decodeXML(op string, body []byte, out any) error {
	if err := xml.NewDecoder(bytes.NewReader(body)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: the answer: %w", c.svc.Name, op, err)
	}
	return nil
}
