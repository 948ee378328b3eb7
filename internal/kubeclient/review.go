package kubeclient

import (
	"context"
)

// What the agent's remote authorization uses: a raw JSON POST (the token
// and access reviews, decoded by their callers into structs of their
// own, so that no further API group is linked).

// PostJSON POSTs a JSON body to an API path and returns the reply's body.
func (c *Client) PostJSON(ctx context.Context, path string, body []byte) ([]byte, error) {
	return c.core.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).DoRaw(ctx)
}
