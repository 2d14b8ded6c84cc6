package media

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// Dir is the directory of the media in the home file store: the data
// directory locally, the workspace bucket on AWS.
const Dir = "media"

// ErrNotFound is the error of a reference that names no file of the
// owner: another owner's file is not found either.
var ErrNotFound = errors.New("media: no such file")

// Store keeps the files of conversations (what people send, what an
// agent sends), once per content in each session:
// <Dir>/<session>/<owner>/<sha-256 of the bytes>, the session and the
// owner by their hashes, so that a session's files go with it
// (DeleteSession). A file is reached by its reference, <session>/<hash>,
// and only by its owner, whose hash is part of the path: another owner's
// reference names no file.
type Store struct {
	FS filestore.FS
	// MaxBytes bounds one file (default 20 MB).
	MaxBytes int64
}

// isRef reports whether ref is a reference: the session's hash, a slash
// and the file's, in lowercase hex.
func isRef(ref string) bool {
	session, sum, ok := strings.Cut(ref, "/")
	return ok && len(session) == 32 && len(sum) == 64 && isHex(session) && isHex(sum)
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

// Limit is the most bytes one file may have.
func (s *Store) Limit() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return 20 << 20
}

// Put stores data as a file of owner's session and returns its
// reference; the same bytes stored again are the same file.
func (s *Store) Put(ctx context.Context, owner, session string, data []byte) (string, error) {
	if owner == "" || session == "" {
		return "", errors.New("media: a file needs an owner and a session")
	}
	if int64(len(data)) > s.Limit() {
		return "", fmt.Errorf("media: the file has %d bytes, of at most %d", len(data), s.Limit())
	}
	sum := sha256.Sum256(data)
	ref := hash(session) + "/" + hex.EncodeToString(sum[:])
	name := filePath(owner, ref)
	if _, err := s.FS.WriteFile(ctx, name, data, filestore.Absent); err != nil && !errors.Is(err, filestore.ErrConflict) {
		return "", fmt.Errorf("media: store: %w", err)
	}
	return ref, nil
}

// Get returns owner's file ref.
func (s *Store) Get(ctx context.Context, owner, ref string) ([]byte, error) {
	if !isRef(ref) {
		return nil, ErrNotFound
	}
	data, _, err := s.FS.ReadFile(ctx, filePath(owner, ref), s.Limit())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("media: read: %w", err)
	}
	return data, nil
}

// filePath is where owner's file ref is.
func filePath(owner, ref string) string {
	session, sum, _ := strings.Cut(ref, "/")
	return Dir + "/" + session + "/" + hash(owner) + "/" + sum
}

// DeleteSession deletes the files of a session.
func (s *Store) DeleteSession(ctx context.Context, session string) error {
	if err := s.FS.RemoveAll(ctx, Dir+"/"+hash(session)); err != nil {
		return fmt.Errorf("media: delete session: %w", err)
	}
	return nil
}
