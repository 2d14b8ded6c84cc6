package console

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Media are the stored files of conversations (media.Store), each read
// only by its owner.
type Media interface {
	Get(ctx context.Context, owner, ref string) ([]byte, error)
}

// media answers a stored file of the key's own conversations: the file a
// send_file's link names. Another key's file is not found. Images are
// shown (their type from their bytes); anything else is a download of
// type application/octet-stream, so no stored file runs as a page.
func (c *Console) media(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	if c.cfg.Media == nil {
		return notFound("the file")
	}
	data, err := c.cfg.Media.Get(r.Context(), owner(k), r.PathValue("session")+"/"+r.PathValue("hash"))
	if errors.Is(err, media.ErrNotFound) {
		return notFound("the file")
	}
	if err != nil {
		return failed("read the file", err)
	}
	h := w.Header()
	mt := chat.SniffMediaType(data)
	if strings.HasPrefix(mt, "image/") {
		h.Set("Content-Disposition", "inline")
	} else {
		mt = "application/octet-stream"
		h.Set("Content-Disposition", "attachment")
	}
	h.Set("Content-Type", mt)
	h.Set("Content-Length", strconv.Itoa(len(data)))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	_, err = w.Write(data)
	return err
}
