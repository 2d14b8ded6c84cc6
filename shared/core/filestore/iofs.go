package filestore

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"time"
)

// maxViewEntries bounds the entries of one directory IOFS reads.
const maxViewEntries = 10000

// IOFS returns f as a read-only io/fs file system, for code written
// against fs.FS (such as the skill catalog). Its calls run under ctx. A
// file opened through it is read whole, up to maxFile bytes: longer files
// read as their first maxFile bytes, while Stat tells their true size. A
// directory lists at most 10,000 entries.
func IOFS(ctx context.Context, f FS, maxFile int64) fs.FS {
	return ioFS{ctx: ctx, f: f, max: maxFile}
}

type ioFS struct {
	ctx context.Context
	f   FS
	max int64
}

var (
	_ fs.StatFS    = ioFS{}
	_ fs.ReadDirFS = ioFS{}
)

func (v ioFS) Open(name string) (fs.File, error) {
	e, err := v.f.Stat(v.ctx, name)
	if err != nil {
		return nil, err
	}
	if e.IsDir() {
		es, err := v.f.ReadDir(v.ctx, name, maxViewEntries)
		if err != nil {
			return nil, err
		}
		return &ioDir{info: info{e}, entries: es}, nil
	}
	data, e, err := v.f.ReadFile(v.ctx, name, v.max)
	if err != nil {
		return nil, err
	}
	return &ioFile{info: info{e}, r: bytes.NewReader(data)}, nil
}

func (v ioFS) Stat(name string) (fs.FileInfo, error) {
	e, err := v.f.Stat(v.ctx, name)
	if err != nil {
		return nil, err
	}
	return info{e}, nil
}

func (v ioFS) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := v.f.ReadDir(v.ctx, name, maxViewEntries)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(es))
	for i, e := range es {
		out[i] = fs.FileInfoToDirEntry(info{e})
	}
	return out, nil
}

// info is an Entry as an fs.FileInfo.
type info struct{ e Entry }

func (i info) Name() string       { return i.e.Name }
func (i info) Size() int64        { return i.e.Size }
func (i info) Mode() fs.FileMode  { return i.e.Mode | 0o444 }
func (i info) ModTime() time.Time { return i.e.ModTime }
func (i info) IsDir() bool        { return i.e.IsDir() }
func (i info) Sys() any           { return nil }

type ioFile struct {
	info info
	r    *bytes.Reader
}

func (f *ioFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *ioFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *ioFile) Close() error               { return nil }

type ioDir struct {
	info    info
	entries []Entry
}

func (d *ioDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *ioDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: fs.ErrInvalid}
}
func (d *ioDir) Close() error { return nil }

// ReadDir implements fs.ReadDirFile.
func (d *ioDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n > 0 && len(d.entries) == 0 {
		return nil, io.EOF
	}
	take := len(d.entries)
	if n > 0 {
		take = min(n, take)
	}
	out := make([]fs.DirEntry, take)
	for i, e := range d.entries[:take] {
		out[i] = fs.FileInfoToDirEntry(info{e})
	}
	d.entries = d.entries[take:]
	return out, nil
}
