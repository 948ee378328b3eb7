package attacks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nodegc/nodegc/control"
	"github.com/nodegc/nodegc/engine"
	"github.com/nodegc/nodegc/engine/cri"
	"github.com/nodegc/nodegc/internal/simfs"
	"github.com/nodegc/nodegc/internal/simnode"
)

// applyAgent is an agent's control server (as on its socket) over a
// simulated node whose image fs is above the high threshold, with MinAge
// 24h: every image is too young, so no pass of any kind removes one.
type applyAgent struct {
	node     *simnode.Node
	engine   *engine.Engine
	url      string
	stateDir string
}

func startApplyAgent(t *testing.T) *applyAgent {
	t.Helper()
	node, ep := startSimnode(t)
	c, err := cri.Dial(context.Background(), ep, cri.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p := engine.DefaultPolicy()
	p.Image.MinAge = 24 * time.Hour
	stateDir := t.TempDir()
	e, err := engine.New(engine.Options{Reader: c, Remover: c, Statfs: simfs.Local(node), Policy: p, StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s := engine.NewScheduler(e, engine.SchedulerOptions{Paused: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	srv := control.NewServer(control.Options{Scheduler: s, Engine: e, Context: ctx})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close(); cancel(); <-done })
	return &applyAgent{node: node, engine: e, url: hs.URL, stateDir: stateDir}
}

// apply posts body to /v1/apply and returns the status code and the
// reply's text.
func (a *applyAgent) apply(body io.Reader) (int, string, error) {
	resp, err := http.Post(a.url+"/v1/apply", "application/json", body)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), nil
}

// untouched returns an error if the node saw a mutating call or the
// journal has a line.
func (a *applyAgent) untouched() error {
	if m := a.node.MutatingCalls(); len(m) != 0 {
		return fmt.Errorf("mutating calls %v", m)
	}
	lines, err := engine.ReadJournalLines(a.stateDir)
	if err != nil {
		return err
	}
	if len(lines) != 0 {
		return fmt.Errorf("%d journal lines written: %+v", len(lines), lines)
	}
	return nil
}

// short is a reply cut to what an error line needs.
func short(body string) string {
	if len(body) > 300 {
		return body[:300] + "…"
	}
	return body
}

func applyBody(p engine.Plan) io.Reader {
	b, _ := json.Marshal(control.ApplyRequest{Plan: p})
	return bytes.NewReader(b)
}

// countingReader serves n bytes of a JSON plan whose image IDs never
// end, counting what was read.
type countingReader struct {
	n, read int64
	head    []byte
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	for i := range p[:k] {
		off := r.read + int64(i)
		if off < int64(len(r.head)) {
			p[i] = r.head[off]
		} else {
			p[i] = 'a'
		}
	}
	atomic.AddInt64(&r.read, k)
	return int(k), nil
}

func TestAttacksApply(t *testing.T) {
	rows := []struct {
		name string
		run  func(t *testing.T, a *applyAgent) error
	}{
		{"a forged plan that removes an image the policy keeps as too young, with a huge target, is refused", func(t *testing.T, a *applyAgent) error {
			s, err := a.engine.Snapshot(context.Background())
			if err != nil {
				return err
			}
			forged := engine.Plan{APIVersion: engine.APIVersion, Kind: engine.KindPlan, EvaluatedAt: a.engine.Now(), Pass: engine.PassImages,
				ImageGC: engine.ImagePlan{Triggered: true, BytesToFree: 1 << 62}}
			for _, im := range s.Images {
				forged.ImageGC.Remove = append(forged.ImageGC.Remove, engine.ImageRemoval{ID: im.ID, SizeBytes: im.SizeBytes, Reason: engine.RemoveForSpace})
			}
			code, body, err := a.apply(applyBody(forged))
			if err != nil {
				return err
			}
			if code != http.StatusConflict || !strings.Contains(body, "not a plan this engine issued") {
				return fmt.Errorf("forged plan: %d %s, want 409 naming a plan not issued", code, short(body))
			}
			return a.untouched()
		}},
		{"a forged plan that removes the newest dead container of a pod is refused", func(t *testing.T, a *applyAgent) error {
			s, err := a.engine.Snapshot(context.Background())
			if err != nil {
				return err
			}
			p, err := a.engine.Plan(context.Background(), engine.PassContainers)
			if err != nil {
				return err
			}
			kept := keptDeadContainer(s, p)
			if kept == nil {
				return fmt.Errorf("the node has no dead container the plan keeps")
			}
			p.ContainerGC.Remove = append(p.ContainerGC.Remove, engine.ContainerRemoval{ID: kept.ID, PodUID: kept.PodUID, Name: kept.Name,
				Reason: engine.RemovePerContainerLimit})
			code, body, err := a.apply(applyBody(p))
			if err != nil {
				return err
			}
			if code != http.StatusConflict {
				return fmt.Errorf("plan with a kept container added: %d %s, want 409", code, short(body))
			}
			return a.untouched()
		}},
		{"a container with an empty ID is refused before any journal line", func(t *testing.T, a *applyAgent) error {
			p, err := a.engine.Plan(context.Background(), engine.PassContainers)
			if err != nil {
				return err
			}
			p.ContainerGC.Remove = append(p.ContainerGC.Remove, engine.ContainerRemoval{ID: "", Reason: engine.RemovePerContainerLimit})
			code, body, err := a.apply(applyBody(p))
			if err != nil {
				return err
			}
			if code != http.StatusBadRequest || !strings.Contains(body, "empty ID") {
				return fmt.Errorf("empty ID: %d %s, want 400 naming the empty ID", code, short(body))
			}
			return a.untouched()
		}},
		{"a 60 MB plan is refused before it is read whole", func(t *testing.T, a *applyAgent) error {
			if _, err := a.engine.Plan(context.Background(), engine.PassFull); err != nil {
				return err
			}
			limit := a.engine.MaxApplyBytes()
			r := &countingReader{n: 60 << 20, head: []byte(`{"plan":{"imageGC":{"remove":[{"id":"`)}
			// No Content-Length: the body is streamed, as a client that
			// hides its size would send it.
			code, body, err := a.apply(io.MultiReader(r))
			if err != nil && code == 0 {
				// The server may close the connection once it has refused.
				code = http.StatusRequestEntityTooLarge
			}
			if code != http.StatusRequestEntityTooLarge {
				return fmt.Errorf("60 MB body: %d %s, want 413", code, short(body))
			}
			// What the client sent includes what the loopback's socket
			// buffers took before the agent closed the connection (a few
			// MB); the agent itself reads at most its bound.
			if read := atomic.LoadInt64(&r.read); read > limit+(16<<20) {
				return fmt.Errorf("%d bytes of the body were taken, more than the bound %d and a socket's buffers", read, limit)
			}
			return a.untouched()
		}},
		{"a body that says it is larger than the node's plans is refused unread", func(t *testing.T, a *applyAgent) error {
			limit := a.engine.MaxApplyBytes()
			req, err := http.NewRequest(http.MethodPost, a.url+"/v1/apply", &countingReader{n: limit + 1})
			if err != nil {
				return err
			}
			req.ContentLength = limit + 1
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				return fmt.Errorf("Content-Length %d: %d, want 413", limit+1, resp.StatusCode)
			}
			return a.untouched()
		}},
		{"the plan the agent issued is applied as previewed", func(t *testing.T, a *applyAgent) error {
			p, err := a.engine.Plan(context.Background(), engine.PassContainers)
			if err != nil {
				return err
			}
			if len(p.ContainerGC.Remove) == 0 {
				return fmt.Errorf("the container plan removes nothing")
			}
			code, body, err := a.apply(applyBody(p))
			if err != nil {
				return err
			}
			var reply control.PassReply
			if code != http.StatusOK || json.Unmarshal([]byte(body), &reply) != nil || reply.Report.Count(engine.OutcomeRemoved) != len(p.ContainerGC.Remove) {
				return fmt.Errorf("issued plan: %d %s, want every planned container removed", code, short(body))
			}
			return nil
		}},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			if err := row.run(t, startApplyAgent(t)); err != nil {
				t.Error(err)
			}
		})
	}
}

// keptDeadContainer is a dead container of s that the plan p keeps.
func keptDeadContainer(s engine.Snapshot, p engine.Plan) *engine.Container {
	for i, c := range s.Containers {
		if c.State == engine.ContainerRunning {
			continue
		}
		if !slices.ContainsFunc(p.ContainerGC.Remove, func(r engine.ContainerRemoval) bool { return r.ID == c.ID }) {
			return &s.Containers[i]
		}
	}
	return nil
}
