package awsapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The stage's connections: the stage's path kept, the id escaped as a
// label, signed for execute-api; a closed connection is GoneException.
func TestAPIGatewayManagement(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.EscapedPath()+" "+string(body)+verify(r, body, "execute-api", "eu-west-1"))
		if r.Method == http.MethodDelete {
			w.Header().Set("X-Amzn-Errortype", "GoneException")
			w.WriteHeader(http.StatusGone)
			io.WriteString(w, `{"message":"Gone"}`)
		}
	}))
	defer srv.Close()
	api, err := NewAPIGatewayManagement(testConfig("eu-west-1"), srv.URL+"/prod")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := api.PostToConnection(ctx, "L0SM9cOFvHcCIhw=", []byte(`{"type":"done"}`)); err != nil {
		t.Error(err)
	}
	if err := api.DeleteConnection(ctx, "L0SM9cOFvHcCIhw="); !HasCode(err, "GoneException") || Status(err) != http.StatusGone {
		t.Errorf("DeleteConnection of a closed connection: %v, want GoneException", err)
	}
	want := []string{
		`POST /prod/@connections/L0SM9cOFvHcCIhw%3D {"type":"done"}`,
		`DELETE /prod/@connections/L0SM9cOFvHcCIhw%3D `,
	}
	if diff := cmp.Diff(want, seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
