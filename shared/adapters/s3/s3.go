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

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// API is the part of the S3 API the adapter calls; *awsapi.S3 has it.
type API interface {
	GetObject(ctx context.Context, bucket, key, rng string) (*awsapi.GetObjectOutput, error)
	HeadObject(ctx context.Context, bucket, key string) (awsapi.Object, error)
	PutObject(ctx context.Context, in awsapi.PutObjectInput) (string, error)
	DeleteObject(ctx context.Context, bucket, key string) error
	DeleteObjects(ctx context.Context, bucket string, keys []string) ([]awsapi.DeleteError, error)
	ListObjectsV2(ctx context.Context, in awsapi.ListObjectsV2Input) (*awsapi.ListObjectsV2Output, error)
}

// Limits of S3 the adapter keeps to.
const (
	// maxKey is the longest object key, in bytes.
	maxKey = 1024
)

// pageSize is the most keys one ListObjectsV2 or DeleteObjects request
// carries (S3's most; tests lower it).
var pageSize = 1000

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

// Open returns the objects of bucket through an S3 client of cfg
// (awsapi.NewS3); a non-empty endpoint replaces S3's (an S3-compatible
// server, as in tests) and is addressed path-style.
func Open(cfg aws.Config, endpoint, bucket string) (*FS, error) {
	api, err := awsapi.NewS3(cfg, endpoint)
	if err != nil {
		return nil, fmt.Errorf("s3: %w", err)
	}
	return New(api, bucket, "")
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
	o, missing, err := object(ctx, f, "stat", name, "HeadObject", func() (awsapi.Object, error) {
		return f.api.HeadObject(ctx, f.bucket, f.key(name))
	})
	switch {
	case err != nil:
		return filestore.Entry{}, err
	case missing:
		return filestore.Entry{}, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return fileEntry(name, o), nil
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
		case awsapi.Status(err) != http.StatusForbidden:
			return out, false, fail(op, name, call, err)
		}
		key := f.key(name)
		list, lerr := f.api.ListObjectsV2(ctx, awsapi.ListObjectsV2Input{Bucket: f.bucket, Prefix: key, MaxKeys: 1})
		switch {
		case lerr != nil || try == 1:
			return out, false, fail(op, name, call, err)
		case len(list.Contents) == 0 || list.Contents[0].Key != key:
			return out, true, nil
		}
	}
}

// isDir reports whether a file is under the directory name.
func (f *FS) isDir(ctx context.Context, op, name string) (bool, error) {
	out, err := f.api.ListObjectsV2(ctx, awsapi.ListObjectsV2Input{Bucket: f.bucket, Prefix: f.dirKey(name), MaxKeys: 1})
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
	rng := ""
	if limit > 0 {
		rng = fmt.Sprintf("bytes=0-%d", limit-1)
	}
	out, missing, err := object(ctx, f, "read", name, "GetObject", func() (*awsapi.GetObjectOutput, error) {
		out, err := f.api.GetObject(ctx, f.bucket, f.key(name), rng)
		if rng != "" && awsapi.Code(err) == "InvalidRange" {
			// An empty object has no byte 0: S3 refuses any range of it.
			rng = ""
			out, err = f.api.GetObject(ctx, f.bucket, f.key(name), rng)
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
	if total, ok := rangeTotal(out.ContentRange); ok {
		out.Size = total
	}
	return data, fileEntry(name, out.Object), nil
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
	p := &pages{api: f.api, in: awsapi.ListObjectsV2Input{
		Bucket: f.bucket, Prefix: base, Delimiter: "/", MaxKeys: min(max(limit, 1), pageSize),
	}}
	for p.more() && len(out) < limit {
		page, err := p.next(ctx)
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
	return f.firstByName(ctx, base, out, limit, !p.more())
}

// pages is a listing, page by page.
type pages struct {
	api  API
	in   awsapi.ListObjectsV2Input
	done bool
}

// more reports whether a page is left.
func (p *pages) more() bool { return !p.done }

// next lists the next page.
func (p *pages) next(ctx context.Context) (*awsapi.ListObjectsV2Output, error) {
	page, err := p.api.ListObjectsV2(ctx, p.in)
	if err != nil {
		return nil, err
	}
	p.in.ContinuationToken = page.NextContinuationToken
	p.done = !page.IsTruncated
	return page, nil
}

// listed are the entries of one delimited listing page under base.
func listed(base string, page *awsapi.ListObjectsV2Output) []filestore.Entry {
	var out []filestore.Entry
	for _, o := range page.Contents {
		name := strings.TrimPrefix(o.Key, base)
		if name == "" || name == "." || name == ".." {
			continue // a "folder" marker some consoles write, or a key no name reaches
		}
		out = append(out, fileEntry(name, o))
	}
	for _, cp := range page.CommonPrefixes {
		name := strings.TrimSuffix(strings.TrimPrefix(cp, base), "/")
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
			out, err := f.api.ListObjectsV2(ctx, awsapi.ListObjectsV2Input{Bucket: f.bucket, Prefix: base + cand + "/", MaxKeys: 1})
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
	p := &pages{api: f.api, in: awsapi.ListObjectsV2Input{Bucket: f.bucket, Prefix: f.dirKey(dir), MaxKeys: pageSize}}
	for p.more() {
		page, err := p.next(ctx)
		if err != nil {
			return fail("walk", dir, "ListObjectsV2", err)
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(o.Key, f.prefix)
			if !fs.ValidPath(name) || name == "." {
				continue
			}
			if err := fn(name, fileEntry(name, o)); err != nil {
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
	in := awsapi.PutObjectInput{Bucket: f.bucket, Key: f.key(name), Body: data}
	switch ifVersion {
	case filestore.Any:
	case filestore.Absent:
		in.IfNoneMatch = "*"
	default:
		in.IfMatch = string(ifVersion)
	}
	etag, err := f.api.PutObject(ctx, in)
	if conflict(err) {
		return filestore.Entry{}, &fs.PathError{Op: "write", Path: name, Err: filestore.ErrConflict}
	}
	if err != nil {
		return filestore.Entry{}, fail("write", name, "PutObject", err)
	}
	return fileEntry(name, awsapi.Object{Size: int64(len(data)), LastModified: time.Now(), ETag: etag}), nil
}

// Remove implements filestore.FS.
func (f *FS) Remove(ctx context.Context, name string) error {
	if err := f.check("remove", name); err != nil {
		return err
	}
	if name == "." {
		return &fs.PathError{Op: "remove", Path: name, Err: filestore.ErrNotFile}
	}
	key := f.key(name)
	_, missing, err := object(ctx, f, "remove", name, "HeadObject", func() (awsapi.Object, error) {
		return f.api.HeadObject(ctx, f.bucket, key)
	})
	switch {
	case err != nil:
		return err
	case missing:
		return f.missing(ctx, "remove", name)
	}
	if err := f.api.DeleteObject(ctx, f.bucket, key); err != nil {
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
	var batch []string
	_, missing, err := object(ctx, f, "removeall", dir, "HeadObject", func() (awsapi.Object, error) {
		return f.api.HeadObject(ctx, f.bucket, f.key(dir))
	})
	if err != nil {
		return err
	}
	if !missing {
		batch = append(batch, f.key(dir))
	}
	p := &pages{api: f.api, in: awsapi.ListObjectsV2Input{Bucket: f.bucket, Prefix: f.dirKey(dir), MaxKeys: max(pageSize-1, 1)}}
	for {
		if p.more() {
			page, err := p.next(ctx)
			if err != nil {
				return fail("removeall", dir, "ListObjectsV2", err)
			}
			for _, o := range page.Contents {
				batch = append(batch, o.Key)
			}
		}
		if len(batch) > 0 {
			if err := f.deleteBatch(ctx, dir, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		if !p.more() {
			return nil
		}
	}
}

// deleteBatch deletes at most pageSize keys in one request.
func (f *FS) deleteBatch(ctx context.Context, dir string, keys []string) error {
	failed, err := f.api.DeleteObjects(ctx, f.bucket, keys)
	if err != nil {
		return fail("removeall", dir, "DeleteObjects", err)
	}
	if len(failed) > 0 {
		e := failed[0]
		return &fs.PathError{Op: "removeall", Path: dir, Err: &Error{Call: "DeleteObjects", Code: e.Code,
			err: fmt.Errorf("%d keys not deleted, the first %s: %s", len(failed), strings.TrimPrefix(e.Key, f.prefix), e.Code)}}
	}
	return nil
}

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

// fileEntry describes the object o as the file name.
func fileEntry(name string, o awsapi.Object) filestore.Entry {
	return filestore.Entry{Name: path.Base(name), Size: o.Size, ModTime: o.LastModified, Version: filestore.Version(o.ETag)}
}

// dirEntry describes a directory, a key prefix.
func dirEntry(name string) filestore.Entry {
	return filestore.Entry{Name: path.Base(name), Mode: fs.ModeDir}
}

// notFound reports whether err says the key holds no object (GetObject's
// NoSuchKey, HeadObject's bodiless 404).
func notFound(err error) bool {
	return awsapi.Code(err) == "NoSuchKey" || (awsapi.Status(err) == http.StatusNotFound && awsapi.Code(err) != "NoSuchBucket")
}

// conflict reports whether a conditional write was refused: 412 when the
// condition did not hold, 409 when another conditional write of the key
// was under way.
func conflict(err error) bool {
	if err == nil {
		return false
	}
	return awsapi.HasCode(err, "PreconditionFailed", "ConditionalRequestConflict") ||
		awsapi.Status(err) == http.StatusPreconditionFailed
}

// fail wraps err, from the S3 call call of op on name, in an
// *fs.PathError whose text holds S3's error code and status, not the
// service's whole message (request ids, the endpoint); the
// *awsapi.Error stays reachable through errors.As. A refusal matches fs.ErrPermission; a
// cancelled or expired context is passed on as itself.
func fail(op, name, call string, err error) error {
	for _, c := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, c) {
			return &fs.PathError{Op: op, Path: name, Err: c}
		}
	}
	return &fs.PathError{Op: op, Path: name, Err: &Error{Call: call, Code: awsapi.Code(err), Status: awsapi.Status(err), err: err}}
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

// Unwrap returns the client's error.
func (e *Error) Unwrap() error { return e.err }

// Is makes a refused request (HTTP 403) match fs.ErrPermission.
func (e *Error) Is(target error) bool {
	return target == fs.ErrPermission && e.Status == http.StatusForbidden
}
