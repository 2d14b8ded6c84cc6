package bedrock

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
)

// plainRequestBodies is a client option that hands the HTTP client request
// bodies without a WriteTo method.
//
// The SDK (smithy-go) closes a request's body as soon as the HTTP client
// returns the response, and its body wrapper then answers WriteTo with
// io.EOF as an error. net/http's connection writer may still be finishing
// the request at that moment: once the server has its Content-Length
// bytes it can answer, and the writer's last copy of the body, which
// checks that nothing is left, then meets the error and closes the
// connection, cutting the response that is being read on it. A streamed
// answer ends with "use of closed network connection" (a known family of
// SDK failures, aws/aws-sdk-go-v2#2737). Read on a closed wrapper returns
// a clean io.EOF, so hiding WriteTo makes that last copy a no-op.
func plainRequestBodies(o *bedrockruntime.Options) {
	if o.HTTPClient != nil {
		o.HTTPClient = plainBodyClient{o.HTTPClient}
	}
}

// plainBodyClient sends requests whose bodies are a plainBody; see
// plainRequestBodies.
type plainBodyClient struct{ next bedrockruntime.HTTPClient }

func (c plainBodyClient) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r = r.WithContext(r.Context()) // a shallow copy: the caller's request keeps its body
		r.Body = plainBody{r.Body}
	}
	return c.next.Do(r)
}

// plainBody is an io.ReadCloser and nothing more.
type plainBody struct{ rc io.ReadCloser }

func (b plainBody) Read(p []byte) (int, error) { return b.rc.Read(p) }
func (b plainBody) Close() error               { return b.rc.Close() }
