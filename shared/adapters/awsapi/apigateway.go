package awsapi

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// APIGatewayManagement is the API Gateway Management API of one
// WebSocket stage (restJson1): PostToConnection and DeleteConnection.
type APIGatewayManagement struct{ c *Client }

var apiGatewayManagement = Service{Name: "ApiGatewayManagementApi", Prefix: "execute-api", Signing: "execute-api", protocol: restJSON}

// NewAPIGatewayManagement returns a client of the stage at endpoint
// (https://<api id>.execute-api.<region>.amazonaws.com/<stage>, the
// stage's callback URL), with cfg's credentials and Region.
func NewAPIGatewayManagement(cfg aws.Config, endpoint string) (*APIGatewayManagement, error) {
	c, err := newClient(cfg, apiGatewayManagement, endpoint)
	return &APIGatewayManagement{c}, err
}

// PostToConnection sends data to the connection id. A connection that
// is closed is GoneException (410).
func (a *APIGatewayManagement) PostToConnection(ctx context.Context, id string, data []byte) error {
	_, err := a.c.do(ctx, request{op: "PostToConnection", method: http.MethodPost, path: "/@connections/" + escapeLabel(id), body: data})
	return err
}

// DeleteConnection closes the connection id. A connection already
// closed is GoneException (410).
func (a *APIGatewayManagement) DeleteConnection(ctx context.Context, id string) error {
	_, err := a.c.do(ctx, request{op: "DeleteConnection", method: http.MethodDelete, path: "/@connections/" + escapeLabel(id)})
	return err
}
