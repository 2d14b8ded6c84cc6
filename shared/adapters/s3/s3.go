// Package s3 is the AWS adapter of the file port (filestore.FS): a key
// prefix of one S3 bucket, where the deployed agents' workspaces live.
//
// A name is the key under the prefix; a directory is a key prefix ending
// in "/" (S3 has no directories: one exists while a file is under it). A
// Version is the object's ETag, and conditional writes are S3's
// conditional PutObject (If-None-Match "*" for filestore.Absent, If-Match
// for a Version), so they hold between processes, such as two Lambda
// instances updating one MEMORY.md. Objects are encrypted as the bucket's
// default encryption says; the adapter sends no encryption headers.
package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// API is the part of the S3 client the adapter calls; *s3.Client has it.
type API interface {
	GetObject(ctx context.Context, in *awss3.GetObjectInput, opts ...func(*awss3.Options)) (*awss3.GetObjectOutput, error)
	HeadObject(ctx context.Context, in *awss3.HeadObjectInput, opts ...func(*awss3.Options)) (*awss3.HeadObjectOutput, error)
	PutObject(ctx context.Context, in *awss3.PutObjectInput, opts ...func(*awss3.Options)) (*awss3.PutObjectOutput, error)
	DeleteObject(ctx context.Context, in *awss3.DeleteObjectInput, opts ...func(*awss3.Options)) (*awss3.DeleteObjectOutput, error)
	DeleteObjects(ctx context.Context, in *awss3.DeleteObjectsInput, opts ...func(*awss3.Options)) (*awss3.DeleteObjectsOutput, error)
	ListObjectsV2(ctx context.Context, in *awss3.ListObjectsV2Input, opts ...func(*awss3.Options)) (*awss3.ListObjectsV2Output, error)
}

// Limits of S3 the adapter keeps to.
const (
	// maxKey is the longest object key, in bytes.
	maxKey = 1024
)

// pageSize is the most keys one ListObjectsV2 or DeleteObjects request
// carries (S3's most; tests lower it).
var pageSize = 1000

// NewClient returns an S3 client of cfg. A non-empty endpoint replaces
// S3's (an S3-compatible server, as in tests) and is addressed path-style
// (http://host/bucket/key), which such servers need.
func NewClient(cfg aws.Config, endpoint string) *awss3.Client {
	return awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.UsePathStyle = true
		}
	})
}

// FS is the objects under a key prefix of a bucket as a filestore.FS.
//
// Unlike a disk, S3 lets one name be a file ("notes") and a directory
// ("notes/today.md") at once; the adapter does not look for that on
// every write (a listing each). Such a name reads as the file, and
// ReadDir lists both.
type FS struct {
	api    API
	bucket string
	// prefix is "" (the whole bucket) or ends in "/".
	prefix string
}

var (
	_ filestore.FS               = (*FS)(nil)
	_ filestore.ContentVersioner = (*FS)(nil)
)

// New returns the objects of bucket under prefix, a directory name as the
// port names them ("." or "" for the whole bucket, else "agents/main").
func New(api API, bucket, prefix string) (*FS, error) {
	if bucket == "" {
		return nil, errors.New("s3: no bucket")
	}
	root := &FS{api: api, bucket: bucket}
	if prefix == "" {
		return root, nil
	}
	sub, err := root.Sub(prefix)
	if err != nil {
		return nil, fmt.Errorf("s3: prefix: %w", err)
	}
	return sub.(*FS), nil
}

// Bucket returns the FS's bucket and the key prefix of its root ("" or
// ending in "/").
func (f *FS) Bucket() (bucket, prefix string) { return f.bucket, f.prefix }

// check refuses a name that is not valid in the port, or whose key S3
// would refuse.
func (f *FS) check(op, name string) error {
	if !fs.ValidPath(name) || !utf8.ValidString(name) || len(f.prefix)+len(name)+1 > maxKey {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}

// key is the object key of the file name.
func (f *FS) key(name string) string { return f.prefix + name }

// dirKey is the key prefix of the files under the directory dir.
func (f *FS) dirKey(dir string) string {
	if dir == "." {
		return f.prefix
	}
	return f.prefix + dir + "/"
}

// Stat implements filestore.FS.
func (f *FS) Stat(ctx context.Context, name string) (filestore.Entry, error) {
	if err := f.check("stat", name); err != nil {
		return filestore.Entry{}, err
	}
	if name == "." {
		return dirEntry(name), nil
	}
	e, err := f.StatFile(ctx, name)
	if !errors.Is(err, fs.ErrNotExist) {
		return e, err
	}
	isDir, err := f.isDir(ctx, "stat", name)
	if err != nil {
		return filestore.Entry{}, err
	}
	if !isDir {
		return filestore.Entry{}, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return dirEntry(name), nil
}

// StatFile describes the file name with one HeadObject: a name that is no
// file is fs.ErrNotExist, without the listing Stat makes to tell whether
// it is a directory.
func (f *FS) StatFile(ctx context.Context, name string) (filestore.Entry, error) {
	if err := f.check("stat", name); err != nil {
		return filestore.Entry{}, err
	}
	if name == "." {
		return filestore.Entry{}, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	out, missing, err := object(ctx, f, "stat", name, "HeadObject", func() (*awss3.HeadObjectOutput, error) {
		return f.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &f.bucket, Key: aws.String(f.key(name))})
	})
	switch {
	case err != nil:
		return filestore.Entry{}, err
	case missing:
		return filestore.Entry{}, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fileEntry(name, aws.ToInt64(out.ContentLength), out.LastModified, out.ETag), nil
}

// object calls get, a HeadObject or GetObject of the file name's key,
// and tells a missing key (missing, no error) from a failure (wrapped by
// fail). S3 answers 404 for a missing key only to a caller who may list
// the whole bucket; to one whose s3:ListBucket is limited by s3:prefix,
// as the stack grants it, it answers 403. After a 403 the key is looked
// for by listing: not listed, it is missing; listed, it was written
// meanwhile and get is called once more, whose refusal is then real.
func object[T any](ctx context.Context, f *FS, op, name, call string, get func() (T, error)) (out T, missing bool, err error) {
	for try := 0; ; try++ {
		out, err = get()
		switch {
		case err == nil:
			return out, false, nil
		case notFound(err):
			return out, true, nil
		case status(err) != http.StatusForbidden:
			return out, false, fail(op, name, call, err)
		}
		key := f.key(name)
		list, lerr := f.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &f.bucket, Prefix: &key, MaxKeys: aws.Int32(1)})
		switch {
		case lerr != nil || try == 1:
			return out, false, fail(op, name, call, err)
		case len(list.Contents) == 0 || aws.ToString(list.Contents[0].Key) != key:
			return out, true, nil
		}
	}
}

// isDir reports whether a file is under the directory name.
func (f *FS) isDir(ctx context.Context, op, name string) (bool, error) {
	out, err := f.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &f.bucket, Prefix: aws.String(f.dirKey(name)), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, fail(op, name, "ListObjectsV2", err)
	}
	return len(out.Contents) > 0, nil
}

// missing is the error of op on name, which is no file: ErrNotFile when
// it is a directory, else fs.ErrNotExist.
func (f *FS) missing(ctx context.Context, op, name string) error {
	isDir, err := f.isDir(ctx, op, name)
	switch {
	case err != nil:
		return err
	case isDir:
		return &fs.PathError{Op: op, Path: name, Err: filestore.ErrNotFile}
	}
	return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
}

// ReadFile implements filestore.FS. It asks S3 for the first limit bytes
// only (a Range request) and reads no more than that of the answer.
func (f *FS) ReadFile(ctx context.Context, name string, limit int64) ([]byte, filestore.Entry, error) {
	if err := f.check("read", name); err != nil {
		return nil, filestore.Entry{}, err
	}
	if name == "." {
		return nil, filestore.Entry{}, &fs.PathError{Op: "read", Path: name, Err: filestore.ErrNotFile}
	}
	limit = max(limit, 0)
	in := &awss3.GetObjectInput{Bucket: &f.bucket, Key: aws.String(f.key(name))}
	if limit > 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=0-%d", limit-1))
	}
	out, missing, err := object(ctx, f, "read", name, "GetObject", func() (*awss3.GetObjectOutput, error) {
		out, err := f.api.GetObject(ctx, in)
		if in.Range != nil && errorCode(err) == "InvalidRange" {
			// An empty object has no byte 0: S3 refuses any range of it.
			in.Range = nil
			out, err = f.api.GetObject(ctx, in)
		}
		return out, err
	})
	switch {
	case err != nil:
		return nil, filestore.Entry{}, err
	case missing:
		return nil, filestore.Entry{}, f.missing(ctx, "read", name)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(io.LimitReader(out.Body, limit))
	if err != nil {
		return nil, filestore.Entry{}, fail("read", name, "GetObject", err)
	}
	size := aws.ToInt64(out.ContentLength)
	if total, ok := rangeTotal(aws.ToString(out.ContentRange)); ok {
		size = total
	}
	return data, fileEntry(name, size, out.LastModified, out.ETag), nil
}

// rangeTotal is the complete length in a Content-Range header
// ("bytes 0-3/10").
func rangeTotal(h string) (int64, bool) {
	_, total, ok := strings.Cut(h, "/")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(total, 10, 64)
	return n, err == nil && n >= 0
}

// ReadDir implements filestore.FS: one delimited listing, page by page,
// until it holds limit entries.
func (f *FS) ReadDir(ctx context.Context, dir string, limit int) ([]filestore.Entry, error) {
	if err := f.check("readdir", dir); err != nil {
		return nil, err
	}
	base := f.dirKey(dir)
	var out []filestore.Entry
	dirs := map[string]bool{}
	found := false
	p := awss3.NewListObjectsV2Paginator(f.api, &awss3.ListObjectsV2Input{
		Bucket: &f.bucket, Prefix: aws.String(base), Delimiter: aws.String("/"),
		MaxKeys: aws.Int32(int32(min(max(limit, 1), pageSize))),
	})
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fail("readdir", dir, "ListObjectsV2", err)
		}
		found = found || len(page.Contents) > 0 || len(page.CommonPrefixes) > 0
		for _, e := range listed(base, page) {
			// S3 lists a common prefix once; gofakes3 repeats it on
			// the next page.
			if !e.IsDir() || !dirs[e.Name] {
				out = append(out, e)
				dirs[e.Name] = e.IsDir()
			}
		}
	}
	if !found && dir != "." && limit > 0 {
		return nil, &fs.PathError{Op: "readdir", Path: dir, Err: fs.ErrNotExist}
	}
	return f.firstByName(ctx, base, out, limit, !p.HasMorePages())
}

// listed are the entries of one delimited listing page under base.
func listed(base string, page *awss3.ListObjectsV2Output) []filestore.Entry {
	var out []filestore.Entry
	for _, o := range page.Contents {
		name := strings.TrimPrefix(aws.ToString(o.Key), base)
		if name == "" || name == "." || name == ".." {
			continue // a "folder" marker some consoles write, or a key no name reaches
		}
		out = append(out, fileEntry(name, aws.ToInt64(o.Size), o.LastModified, o.ETag))
	}
	for _, cp := range page.CommonPrefixes {
		name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), base), "/")
		if name == "" || name == "." || name == ".." {
			continue
		}
		out = append(out, dirEntry(name))
	}
	return out
}

// firstByName sorts the entries S3 listed (in key order, in which the
// directory "a/" comes after the file "a.txt") by name and keeps the first
// limit. When the listing stopped early, a directory not listed yet can
// still sort among the first: only one whose name is a prefix of the
// limit-th name followed by a byte below '/' (its key sorts after every
// listed one, its name before). Those are asked for one by one, again
// while one is found (a short name's, for which "a.b-c" asks "a" and
// "a.b").
func (f *FS) firstByName(ctx context.Context, base string, es []filestore.Entry, limit int, complete bool) ([]filestore.Entry, error) {
	byName := func(a, b filestore.Entry) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(es, byName)
	limit = max(limit, 0)
	for !complete && limit > 0 && len(es) >= limit {
		last := es[limit-1].Name
		added := false
		for i := 1; i < len(last); i++ {
			cand := last[:i]
			if last[i] >= '/' || slices.ContainsFunc(es, func(e filestore.Entry) bool { return e.Name == cand }) {
				continue
			}
			out, err := f.api.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &f.bucket, Prefix: aws.String(base + cand + "/"), MaxKeys: aws.Int32(1)})
			if err != nil {
				return nil, fail("readdir", path.Dir(base), "ListObjectsV2", err)
			}
			if len(out.Contents) > 0 {
				es = append(es, dirEntry(cand))
				added = true
			}
		}
		if !added {
			break
		}
		slices.SortFunc(es, byName)
	}
	return es[:min(len(es), limit)], nil
}

// Walk implements filestore.FS: a flat listing of the keys under dir,
// page by page (S3 lists keys in byte order, which is the names' lexical
// order). Keys that are no valid name (made by other tools: "a//b",
// folder markers ending in "/") are passed over.
func (f *FS) Walk(ctx context.Context, dir string, fn func(name string, e filestore.Entry) error) error {
	if err := f.check("walk", dir); err != nil {
		return err
	}
	p := awss3.NewListObjectsV2Paginator(f.api, &awss3.ListObjectsV2Input{
		Bucket: &f.bucket, Prefix: aws.String(f.dirKey(dir)), MaxKeys: aws.Int32(int32(pageSize)),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fail("walk", dir, "ListObjectsV2", err)
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), f.prefix)
			if !fs.ValidPath(name) || name == "." {
				continue
			}
			if err := fn(name, fileEntry(name, aws.ToInt64(o.Size), o.LastModified, o.ETag)); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteFile implements filestore.FS with one PutObject, conditional on
// the ETag for a Version and on no object for filestore.Absent. An S3
// object is replaced whole, so readers never see a part. The Entry's
// ModTime is the adapter's clock (PutObject returns none).
func (f *FS) WriteFile(ctx context.Context, name string, data []byte, ifVersion filestore.Version) (filestore.Entry, error) {
	if err := f.check("write", name); err != nil {
		return filestore.Entry{}, err
	}
	if name == "." {
		return filestore.Entry{}, &fs.PathError{Op: "write", Path: name, Err: filestore.ErrNotFile}
	}
	in := &awss3.PutObjectInput{
		Bucket: &f.bucket, Key: aws.String(f.key(name)),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	}
	switch ifVersion {
	case filestore.Any:
	case filestore.Absent:
		in.IfNoneMatch = aws.String("*")
	default:
		in.IfMatch = aws.String(string(ifVersion))
	}
	out, err := f.api.PutObject(ctx, in)
	if conflict(err) {
		return filestore.Entry{}, &fs.PathError{Op: "write", Path: name, Err: filestore.ErrConflict}
	}
	if err != nil {
		return filestore.Entry{}, fail("write", name, "PutObject", err)
	}
	now := time.Now()
	return fileEntry(name, int64(len(data)), &now, out.ETag), nil
}

// Remove implements filestore.FS.
func (f *FS) Remove(ctx context.Context, name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	if name == "." {
		return &fs.PathError{Op: "remove", Path: name, Err: filestore.ErrNotFile}
	}
	key := aws.String(f.key(name))
	_, missing, err := object(ctx, f, "remove", name, "HeadObject", func() (*awss3.HeadObjectOutput, error) {
		return f.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &f.bucket, Key: key})
	})
	switch {
	case err != nil:
		return err
	case missing:
		return f.missing(ctx, "remove", name)
	}
	if _, err := f.api.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &f.bucket, Key: key}); err != nil {
		return fail("remove", name, "DeleteObject", err)
	}
	return nil
}

// RemoveAll implements filestore.FS: the keys under dir are listed and
// deleted a page at a time (DeleteObjects), with a file named dir itself.
// Only keys that exist are deleted: in a versioned bucket deleting a
// missing key would leave a delete marker.
func (f *FS) RemoveAll(ctx context.Context, dir string) error {
	if err := f.check("removeall", dir); err != nil {
		return err
	}
	if dir == "." {
		return &fs.PathError{Op: "removeall", Path: dir, Err: fmt.Errorf("%w: the root is not removed", fs.ErrInvalid)}
	}
	var batch []types.ObjectIdentifier
	_, missing, err := object(ctx, f, "removeall", dir, "HeadObject", func() (*awss3.HeadObjectOutput, error) {
		return f.api.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &f.bucket, Key: aws.String(f.key(dir))})
	})
	if err != nil {
		return err
	}
	if !missing {
		batch = append(batch, types.ObjectIdentifier{Key: aws.String(f.key(dir))})
	}
	p := awss3.NewListObjectsV2Paginator(f.api, &awss3.ListObjectsV2Input{
		Bucket: &f.bucket, Prefix: aws.String(f.dirKey(dir)), MaxKeys: aws.Int32(int32(max(pageSize-1, 1))),
	})
	for {
		if p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return fail("removeall", dir, "ListObjectsV2", err)
			}
			for _, o := range page.Contents {
				batch = append(batch, types.ObjectIdentifier{Key: o.Key})
			}
		}
		if len(batch) > 0 {
			if err := f.deleteBatch(ctx, dir, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		if !p.HasMorePages() {
			return nil
		}
	}
}

// deleteBatch deletes at most pageSize keys in one request.
func (f *FS) deleteBatch(ctx context.Context, dir string, keys []types.ObjectIdentifier) error {
	out, err := f.api.DeleteObjects(ctx, &awss3.DeleteObjectsInput{
		Bucket: &f.bucket,
		Delete: &types.Delete{Objects: keys, Quiet: aws.Bool(true)},
	})
	if err != nil {
		return fail("removeall", dir, "DeleteObjects", err)
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		name := strings.TrimPrefix(aws.ToString(e.Key), f.prefix)
		return fail("removeall", dir, "DeleteObjects", &apiError{code: aws.ToString(e.Code), key: name, n: len(out.Errors)})
	}
	return nil
}

// apiError is a key DeleteObjects did not delete.
type apiError struct {
	code, key string
	n         int
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d keys not deleted, the first %s: %s", e.n, e.key, e.code)
}

// ErrorCode is S3's code of the failure, as smithy.APIError has it.
func (e *apiError) ErrorCode() string { return e.code }

// ContentVersion implements filestore.ContentVersioner: S3's ETag of an
// object written whole (as WriteFile does), unencrypted or with SSE-S3 as
// the stack's bucket, is the quoted hex MD5 of its content. (With SSE-KMS
// it is not; filestore.Sync then copies every file of the same size.)
func (f *FS) ContentVersion(data []byte) filestore.Version {
	sum := md5.Sum(data)
	return filestore.Version(`"` + hex.EncodeToString(sum[:]) + `"`)
}

// Sub implements filestore.FS.
func (f *FS) Sub(dir string) (filestore.FS, error) {
	if err := f.check("sub", dir); err != nil {
		return nil, err
	}
	return &FS{api: f.api, bucket: f.bucket, prefix: f.dirKey(dir)}, nil
}

// fileEntry describes an object.
func fileEntry(name string, size int64, mod *time.Time, etag *string) filestore.Entry {
	return filestore.Entry{Name: path.Base(name), Size: size, ModTime: aws.ToTime(mod), Version: filestore.Version(aws.ToString(etag))}
}

// dirEntry describes a directory, a key prefix.
func dirEntry(name string) filestore.Entry {
	return filestore.Entry{Name: path.Base(name), Mode: fs.ModeDir}
}

// errorCode is the S3 error code of err, or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// status is the HTTP status of the response err failed with, or 0.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// notFound reports whether err says the key holds no object (GetObject's
// NoSuchKey, HeadObject's bodiless 404).
func notFound(err error) bool {
	if err == nil {
		return false
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	return errors.As(err, &nsk) || errors.As(err, &nf) || errorCode(err) == "NoSuchKey" ||
		(status(err) == http.StatusNotFound && errorCode(err) != "NoSuchBucket")
}

// conflict reports whether a conditional write was refused: 412 when the
// condition did not hold, 409 when another conditional write of the key
// was under way.
func conflict(err error) bool {
	if err == nil {
		return false
	}
	code := errorCode(err)
	return code == "PreconditionFailed" || code == "ConditionalRequestConflict" ||
		status(err) == http.StatusPreconditionFailed
}

// fail wraps err, from the S3 call call of op on name, in an
// *fs.PathError whose text holds S3's error code and status, not the
// SDK's whole message (request ids, the endpoint); the SDK's error stays
// reachable through errors.As. A refusal matches fs.ErrPermission; a
// cancelled or expired context is passed on as itself.
func fail(op, name, call string, err error) error {
	for _, c := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, c) {
			return &fs.PathError{Op: op, Path: name, Err: c}
		}
	}
	return &fs.PathError{Op: op, Path: name, Err: &Error{Call: call, Code: errorCode(err), Status: status(err), err: err}}
}

// Error is a failed S3 request.
type Error struct {
	// Call is the S3 operation, such as "PutObject".
	Call string
	// Code is S3's error code ("AccessDenied", "NoSuchBucket"), empty
	// when no answer came.
	Code string
	// Status is the HTTP status of the answer, 0 when none came.
	Status int
	err    error
}

func (e *Error) Error() string {
	switch {
	case e.Code != "":
		return fmt.Sprintf("S3 %s: %s (HTTP %d)", e.Call, e.Code, e.Status)
	case e.Status != 0:
		return fmt.Sprintf("S3 %s: HTTP %d", e.Call, e.Status)
	}
	var ne net.Error
	if errors.As(e.err, &ne) {
		return fmt.Sprintf("S3 %s: no answer: %v", e.Call, ne)
	}
	return fmt.Sprintf("S3 %s: no answer", e.Call)
}

// Unwrap returns the SDK's error.
func (e *Error) Unwrap() error { return e.err }

// Is makes a refused request (HTTP 403) match fs.ErrPermission.
func (e *Error) Is(target error) bool {
	return target == fs.ErrPermission && e.Status == http.StatusForbidden
}
