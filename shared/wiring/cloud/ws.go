package cloud

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
)

// WebSocket returns the handler of the ws function: API Gateway WebSocket
// events (apigw.WebSocket), with runs started by the Step Functions
// driver, flushing its events before it returns. It needs WS_ENDPOINT, to
// answer the clients.
func (r *Root) WebSocket() (func(context.Context, events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error), error) {
	if r.Conns.API == nil {
		return nil, errors.New("cloud: WS_ENDPOINT is not set: the ws function answers clients through the API Gateway Management API")
	}
	ws := &apigw.WebSocket{
		Loop: r.Loop, Lane: r.Driver, Keys: r.Store, Connections: r.Store, Runs: r.Store, Conns: r.Conns,
		HasAgent: r.Agents.Has, Identity: r.Identity, Limiter: r.Limiter, Log: r.Log,
	}
	return Flushed(r, ws.Handle), nil
}
