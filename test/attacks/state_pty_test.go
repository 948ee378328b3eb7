package attacks

import (
	"path/filepath"
	"strings"

	"github.com/nodegc/nodegc/internal/proctest"
)

// drawn reports whether the dashboard has taken the screen (entered the
// alternate screen).
func drawn(p *proctest.Pty) bool {
	return strings.Contains(p.Output(), "\x1b[?1049h")
}

// stateDemoDirs counts the demo's temp dirs under tmp.
func stateDemoDirs(tmp string) int {
	m, _ := filepath.Glob(filepath.Join(tmp, "nodegc-demo-*"))
	return len(m)
}
