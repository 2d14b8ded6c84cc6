package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// Media keeps the bytes of messages' parts beside their session
// (media.Store), so that history holds references rather than the bytes.
type Media interface {
	Put(ctx context.Context, owner, session string, data []byte) (ref string, err error)
	Get(ctx context.Context, owner, ref string) ([]byte, error)
	DeleteSession(ctx context.Context, session string) error
}

// keepParts returns msgs with the bytes of their parts put in l.Media,
// each part holding its reference instead; msgs is not changed.
func (l *Loop) keepParts(ctx context.Context, owner, session string, msgs []chat.Message) ([]chat.Message, error) {
	if l.Media == nil {
		return msgs, nil
	}
	out := slices.Clone(msgs)
	for i, m := range out {
		if len(m.Parts) == 0 {
			continue
		}
		out[i].Parts = slices.Clone(m.Parts)
		for k, p := range out[i].Parts {
			if len(p.Data) == 0 {
				continue
			}
			ref, err := l.Media.Put(ctx, owner, session, p.Data)
			if err != nil {
				return nil, fmt.Errorf("keep messages[%d].parts[%d]: %w", i, k, err)
			}
			out[i].Parts[k].Data, out[i].Parts[k].Ref = nil, ref
		}
	}
	return out, nil
}

// loadParts returns msgs with the bytes of their referenced parts read
// back for the model; msgs is not changed. A part whose bytes are gone
// is left out, and its message says so.
func (l *Loop) loadParts(ctx context.Context, owner string, msgs []chat.Message) []chat.Message {
	out, cloned := msgs, false
	for i, m := range msgs {
		if !slices.ContainsFunc(m.Parts, func(p chat.Part) bool { return p.Ref != "" && len(p.Data) == 0 }) {
			continue
		}
		if !cloned {
			out, cloned = slices.Clone(msgs), true
		}
		parts := make([]chat.Part, 0, len(m.Parts))
		for _, p := range m.Parts {
			if p.Ref == "" || len(p.Data) > 0 {
				parts = append(parts, p)
				continue
			}
			var err error
			if l.Media != nil {
				p.Data, err = l.Media.Get(ctx, owner, p.Ref)
			}
			if l.Media == nil || err != nil {
				if l.Log != nil && err != nil {
					l.Log.Warn("a message's part is gone", "ref", p.Ref, "error", scrub.Scrub(err.Error()))
				}
				out[i].Content += fmt.Sprintf("\n[an earlier %s, no longer kept]", p.Type)
				continue
			}
			parts = append(parts, p)
		}
		out[i].Parts = parts
	}
	return out
}

// maxSummaryImages bounds the images of old turns a compaction's summary
// is made from: the latest ones.
const maxSummaryImages = 4

// partNotes describe m's parts in the transcript a summary is made from,
// and add the images the model takes to images, but for the first skip of
// them (so that the latest maxSummaryImages are shown).
func partNotes(a *Agent, m chat.Message, skip *int, images *[]chat.Part) string {
	var notes string
	for _, p := range m.Parts {
		switch {
		case p.Type == chat.PartImage && takes(a, p) && *skip > 0:
			*skip--
			notes += fmt.Sprintf("[%s sent an image, not shown]\n", m.Role)
		case p.Type == chat.PartImage && takes(a, p):
			*images = append(*images, p)
			notes += fmt.Sprintf("[%s sent an image: image %d of those attached]\n", m.Role, len(*images))
		case p.Name != "":
			notes += fmt.Sprintf("[%s sent a %s: %s (%s)]\n", m.Role, p.Type, p.Name, p.MediaType)
		default:
			notes += fmt.Sprintf("[%s sent a %s (%s)]\n", m.Role, p.Type, p.MediaType)
		}
	}
	return notes
}

// takes reports whether a's model takes p.
func takes(a *Agent, p chat.Part) bool {
	return llm.CheckParts(a.Provider, []chat.Message{{Parts: []chat.Part{p}}}) == nil
}
