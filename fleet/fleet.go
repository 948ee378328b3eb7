// Package fleet reads the cluster's nodes and their agents' NodeGC
// objects for `nodegc fleet`, with the user's kubeconfig: one list and
// one watch of the Nodes (metadata only) and one of the objects, however
// many nodes there are (Watcher). Nothing is asked of any node or agent:
// no request per node, and no credential or command ever goes to a port
// on a node. Each object is the agent's writing, so it is checked
// (object.go) and a bad one is an error on its row alone.
package fleet

import (
	"fmt"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultNamespace is the agents' namespace in deploy/.
const DefaultNamespace = "nodegc"

// ForbiddenError is an API request the user's credentials may not make:
// Verb names the verb and resource ("list nodes").
type ForbiddenError struct {
	Verb string
	Err  error
}

func (e *ForbiddenError) Error() string {
	why := "forbidden"
	if apierrors.IsUnauthorized(e.Err) {
		why = "unauthorized: the API server did not accept the credentials"
	}
	return fmt.Sprintf("your kubeconfig may not %s (%s)", e.Verb, why)
}
func (e *ForbiddenError) Unwrap() error { return e.Err }

// oneLine is s on one line, at most 200 bytes and a mark, cut on a rune
// boundary (a rune cut in two would show as its bytes' escapes).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if n := 200; len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}
