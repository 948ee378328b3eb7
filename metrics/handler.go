package metrics

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check is one readiness condition of /readyz: Fn returns why it is not
// met, or nil.
type Check struct {
	Name string
	Fn   func(ctx context.Context) error
}

// checkTimeout bounds each readiness check, so a probe answers within a
// kubelet probe's default 1 s timeout even when the runtime hangs.
const checkTimeout = 900 * time.Millisecond

// NewHandler serves the collector, with the Go runtime's and the
// process's own metrics, on /metrics; /healthz answers 200 while the
// process serves; /readyz answers 200 when every check passes, else 503
// with one line per failed check.
func NewHandler(c *Collector, checks ...Check) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(c.o.Extra...)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		var failed []string
		for _, ck := range checks {
			ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
			err := ck.Fn(ctx)
			cancel()
			if err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", ck.Name, err))
			}
		}
		if len(failed) > 0 {
			http.Error(w, strings.Join(failed, "\n"), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "nodegc agent: /metrics, /healthz, /readyz")
	})
	return mux
}
