package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// MediaPath is where the API serves a stored file to its owner: the path
// followed by the file's reference.
const MediaPath = "/v1/lambdaclaw/media/"

// maxCaption bounds a file's caption (Telegram's limit, the smallest).
const maxCaption = 1024

// FileSenders are the channels that deliver files, by channel name
// (channel.Replier): a file sent in a conversation of one of them is
// delivered as the platform's photo or document message.
type FileSenders map[string]interface {
	SendFile(ctx context.Context, to string, f channel.File) (string, error)
}

// SendFile returns the send_file tool: it stores a workspace file in
// store, as the conversation's, and delivers it where the conversation
// is (senders); on the API it answers the link the caller's key fetches.
// A call is not repeated (it is not idempotent), so a file is sent once.
func SendFile(store *media.Store, senders FileSenders) tool.Tool {
	return sendFile{store: store, senders: senders}
}

type sendFile struct {
	store   *media.Store
	senders FileSenders
}

func (sendFile) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "send_file",
		Description: "Send a file of your workspace to the person you talk with, such as a chart or a report you made: " +
			"an image is shown as a photo, another file as a document. On the API, the result is a link to give them.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace, e.g. \"chart.png\"."},
    "caption": {"type": "string", "maxLength": ` + fmt.Sprint(maxCaption) + `, "description": "A short text shown with the file."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
	}
}

// Policy: sending to the conversation's own person is the owner's
// business, as a reply is; it is not repeated after a restart.
func (sendFile) Policy() tool.Policy { return tool.Policy{Effect: tool.WriteOwn} }

func (t sendFile) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in struct {
		Path    string `json:"path"`
		Caption string `json:"caption"`
	}
	if err := tool.DecodeArgs(args, &in, "path", "caption"); err != nil {
		return "", err
	}
	switch {
	case env.Workspace == nil:
		return "", errors.New("this agent has no workspace")
	case env.Owner == "" || env.SessionID == "":
		return "", errors.New("there is no conversation to send a file to")
	case len([]rune(in.Caption)) > maxCaption:
		return "", fmt.Errorf("the caption has %d characters, of at most %d", len([]rune(in.Caption)), maxCaption)
	}
	limit := t.store.Limit()
	data, e, err := env.Workspace.ReadFile(ctx, in.Path, limit+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: no such file", in.Path)
	case err != nil:
		return "", fmt.Errorf("%s: %w", in.Path, err)
	case e.Size > limit:
		return "", fmt.Errorf("%s has %d bytes; files of at most %d can be sent", in.Path, e.Size, limit)
	}
	name := path.Base(in.Path)
	f := channel.File{Name: name, MediaType: media.TypeOf(name, "", data), Data: data, Caption: in.Caption}
	if err := chat.CheckBytes(chat.Part{MediaType: f.MediaType, Data: data}); err != nil {
		return "", fmt.Errorf("%s: %w", in.Path, err)
	}
	ref, err := t.store.Put(ctx, env.Owner, env.SessionID, data)
	if err != nil {
		return "", err
	}
	s, ok := t.senders[env.Channel]
	if !ok || env.ReplyTo == "" {
		return fmt.Sprintf("%s (%s, %d bytes) is at %s%s; give this link to the person: it opens with their API key.",
			name, f.MediaType, len(data), MediaPath, ref), nil
	}
	if _, err := s.SendFile(ctx, env.ReplyTo, f); err != nil {
		return "", fmt.Errorf("sending %s: %w", name, err)
	}
	as := "a document"
	if strings.HasPrefix(f.MediaType, "image/") {
		as = "a photo"
	}
	return fmt.Sprintf("Sent %s (%s, %d bytes) to the conversation as %s.", name, f.MediaType, len(data), as), nil
}
