package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/url"
	"path"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// The media of a request's messages: OpenAI's content parts beside the
// text (Chat Completions' image_url, input_audio and file; the Responses
// API's input_image and input_file) become chat.Parts, checked against
// Config.Media before anything is queued: a data: URL must be base64 and
// its bytes what its type says (chat.CheckBytes), an image URL https, and
// each part and message within its limit (413 over it). Whether the
// agent's model takes them is the agent's question (llm.CheckParts),
// asked when the run is queued.

// contentPart is one element of a content array, of any type, in either
// API's shape.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// ImageURL is {"url","detail"} in Chat Completions, a string in the
	// Responses API.
	ImageURL   json.RawMessage `json:"image_url"`
	InputAudio *struct {
		Data   string `json:"data"`
		Format string `json:"format"`
	} `json:"input_audio"`
	File *struct {
		FileData string `json:"file_data"`
		FileID   string `json:"file_id"`
		Filename string `json:"filename"`
	} `json:"file"`
	// The Responses API's fields of input_image and input_file.
	Detail   string `json:"detail"`
	FileID   string `json:"file_id"`
	FileData string `json:"file_data"`
	FileURL  string `json:"file_url"`
	Filename string `json:"filename"`
}

// maxURLBytes bounds an image's https URL.
const maxURLBytes = 8 << 10

// tooLarge is a part over its limit: answered 413.
func tooLarge(at, format string, args ...any) error {
	return &paramError{at, "request_too_large", fmt.Sprintf(format, args...)}
}

// readContent reads a message's content: a string, null, or an array of
// parts, whose text parts make its text and whose media its parts (only
// when media is set: a user's message). at names the content in errors.
func readContent(at string, raw json.RawMessage, media bool, lim chat.Limits) (string, []chat.Part, error) {
	if !set(raw) {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, badParam(at, "%s must be a string or an array of content parts", at)
	}
	var b strings.Builder
	var out []chat.Part
	total := 0
	for i, p := range parts {
		pat := fmt.Sprintf("%s[%d]", at, i)
		switch p.Type {
		case "text", "input_text", "output_text":
			b.WriteString(p.Text)
			continue
		case "image_url", "input_image", "input_audio", "file", "input_file":
			if !media {
				return "", nil, badParam(pat+".type", "%s: parts of type %q are taken in a user's message only", pat, p.Type)
			}
		default:
			return "", nil, badParam(pat+".type", "%s: content parts of type %q are not supported; send text, image_url, input_audio or file (input_text, input_image or input_file in the Responses API)", pat, p.Type)
		}
		if len(out) == lim.Count() {
			return "", nil, tooLarge(at, "%s has more than %d media parts", at, lim.Count())
		}
		part, err := readPart(pat, p, lim)
		if err != nil {
			return "", nil, err
		}
		if total += part.Size(); total > lim.Message() {
			return "", nil, tooLarge(at, "the media parts of %s together are larger than the limit of %d bytes", at, lim.Message())
		}
		out = append(out, part)
	}
	return b.String(), out, nil
}

// readPart reads one media part.
func readPart(at string, p contentPart, lim chat.Limits) (chat.Part, error) {
	switch p.Type {
	case "image_url":
		var u struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		}
		if err := json.Unmarshal(p.ImageURL, &u); err != nil || u.URL == "" {
			return chat.Part{}, badParam(at+".image_url", "%s.image_url must be an object with the image's url", at)
		}
		return imagePart(at+".image_url.url", u.URL, u.Detail, lim)
	case "input_image":
		var u string
		if p.FileID != "" {
			return chat.Part{}, badParam(at+".file_id", "%s.file_id: files uploaded to OpenAI cannot be read here; send image_url", at)
		}
		if err := json.Unmarshal(p.ImageURL, &u); err != nil || u == "" {
			return chat.Part{}, badParam(at+".image_url", "%s.image_url must be the image's URL (https or data:)", at)
		}
		return imagePart(at+".image_url", u, p.Detail, lim)
	case "input_audio":
		a := p.InputAudio
		if a == nil {
			return chat.Part{}, badParam(at+".input_audio", "%s.input_audio is required", at)
		}
		types := map[string]string{"wav": "audio/wav", "mp3": "audio/mpeg"}
		mt, ok := types[a.Format]
		if !ok {
			return chat.Part{}, badParam(at+".input_audio.format", "%s.input_audio.format must be wav or mp3; got %q", at, a.Format)
		}
		data, err := decodeBase64(at+".input_audio.data", a.Data, lim.Of(chat.PartAudio))
		if err != nil {
			return chat.Part{}, err
		}
		return chat.Part{Type: chat.PartAudio, MediaType: mt, Data: data}, nil
	case "file":
		if p.File == nil {
			return chat.Part{}, badParam(at+".file", "%s.file is required", at)
		}
		return filePart(at+".file.", p.File.FileData, p.File.FileID, "", p.File.Filename, lim)
	default: // input_file
		return filePart(at+".", p.FileData, p.FileID, p.FileURL, p.Filename, lim)
	}
}

// imagePart reads an image's URL: https, or a data: URL of its bytes.
func imagePart(at, raw, detail string, lim chat.Limits) (chat.Part, error) {
	switch detail {
	case "", "auto", "low", "high", "original":
	default:
		return chat.Part{}, badParam(at, "%s: detail must be auto, low, high or original; got %q", at, detail)
	}
	if strings.HasPrefix(raw, "data:") {
		mt, data, err := dataURL(at, raw, lim.Of(chat.PartImage))
		if err != nil {
			return chat.Part{}, err
		}
		if !strings.HasPrefix(mt, "image/") {
			return chat.Part{}, badParam(at, "%s: the data: URL is of type %q, not an image", at, mt)
		}
		return checked(at, chat.Part{Type: chat.PartImage, MediaType: mt, Data: data, Detail: detail})
	}
	if len(raw) > maxURLBytes {
		return chat.Part{}, tooLarge(at, "%s: the URL is longer than %d bytes", at, maxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return chat.Part{}, badParam(at, "%s must be an https URL or a data: URL (data:image/png;base64,...)", at)
	}
	return chat.Part{Type: chat.PartImage, URL: u.String(), Detail: detail}, nil
}

// filePart reads a file given as its data: a data: URL, or plain base64
// whose type its name or its bytes say.
func filePart(at, fileData, fileID, fileURL, name string, lim chat.Limits) (chat.Part, error) {
	switch {
	case fileID != "":
		return chat.Part{}, badParam(at+"file_id", "%sfile_id: files uploaded to OpenAI cannot be read here; send file_data", at)
	case fileURL != "":
		return chat.Part{}, badParam(at+"file_url", "%sfile_url: files are not fetched; send file_data", at)
	case fileData == "":
		return chat.Part{}, badParam(at+"file_data", "%sfile_data is required", at)
	}
	at += "file_data"
	var mt string
	var data []byte
	var err error
	if strings.HasPrefix(fileData, "data:") {
		mt, data, err = dataURL(at, fileData, lim.Of(chat.PartFile))
	} else {
		data, err = decodeBase64(at, fileData, lim.Of(chat.PartFile))
		mt = chat.SniffMediaType(data)
		if t, _, perr := mime.ParseMediaType(mime.TypeByExtension(path.Ext(name))); mt == "" && perr == nil {
			mt = t
		}
		if mt == "" {
			mt = "application/octet-stream"
		}
	}
	if err != nil {
		return chat.Part{}, err
	}
	if len(name) > maxURLBytes {
		return chat.Part{}, badParam(at, "%s: the file's name is longer than %d bytes", at, maxURLBytes)
	}
	if name != "" {
		name = path.Base(name)
	}
	return checked(at, chat.Part{Type: chat.PartFile, MediaType: mt, Data: data, Name: name})
}

// checked refuses a part whose bytes are not of its declared type.
func checked(at string, p chat.Part) (chat.Part, error) {
	if err := chat.CheckBytes(p); err != nil {
		return chat.Part{}, &paramError{at, "invalid_media", fmt.Sprintf("%s: %v", at, err)}
	}
	return p, nil
}

// dataURL reads a base64 data: URL (RFC 2397) of at most limit bytes:
// its media type, lower-cased, and its bytes.
func dataURL(at, raw string, limit int) (string, []byte, error) {
	header, payload, ok := strings.Cut(strings.TrimPrefix(raw, "data:"), ",")
	params, isBase64 := strings.CutSuffix(header, ";base64")
	if !ok || !isBase64 {
		return "", nil, badParam(at, "%s: a data: URL must be base64: data:<media type>;base64,<data>", at)
	}
	mt, _, err := mime.ParseMediaType(params)
	if err != nil {
		return "", nil, badParam(at, "%s: the data: URL's media type %q is not valid", at, params)
	}
	if mt == "image/jpg" {
		mt = "image/jpeg"
	}
	data, err := decodeBase64(at, payload, limit)
	return mt, data, err
}

// decodeBase64 decodes standard base64 (padded or not) of at most limit
// bytes, refusing a larger one before decoding it.
func decodeBase64(at, s string, limit int) ([]byte, error) {
	if n := base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(s, "="))); n > limit {
		return nil, tooLarge(at, "%s is %d bytes, over the limit of %d bytes", at, n, limit)
	}
	data, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		data, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(data) == 0 {
		return nil, badParam(at, "%s is not valid base64 data", at)
	}
	return data, nil
}
