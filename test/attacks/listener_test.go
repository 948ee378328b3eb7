package attacks

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nodegc/nodegc/internal/proctest"
	"github.com/nodegc/nodegc/internal/simnode"
)

// TestListener holds issue 36's findings about the agent's TCP listener
// (metrics, the kubelet's probes): a user on the node, not root, starved
// the probes with slow requests until the kubelet restarted the agent,
// took its port in the gap, and the agent never came back; took the
// loopback address the agent did not bind; and, holding the port, would
// have collected the operators' tokens the remote protocol relayed
// (issue 38: that protocol is gone). Each row failed on main at 0beeab1.
//
// The rows that bind as another user need root (setpriv to nobody).
func TestListener(t *testing.T) {
	runAttacks(t, listenerAttacks)
}

var listenerAttacks = []attack{
	{10, "the agent's default port is root's: another user binds it on no address of either family (127.0.0.1, 127.0.0.2, [::1], 0.0.0.0, [::])", func(t *testing.T) error {
		addr := defaultMetricsAddress(t)
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return fmt.Errorf("default %q: %w", addr, err)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("default %q: %w", addr, err)
		}
		if start := unprivilegedPortStart(t); p < 1024 && p >= start {
			t.Skipf("this machine lets any user bind port %d (net.ipv4.ip_unprivileged_port_start=%d, below the kernel's 1024): the agent warns so", p, start)
		}
		var targets []string
		for _, h := range []string{"127.0.0.1", "127.0.0.2", "::1", "0.0.0.0", "::"} {
			targets = append(targets, net.JoinHostPort(h, port))
		}
		for a, res := range bindAsNobody(t, targets...) {
			if res == "bound" {
				return fmt.Errorf("a user other than root bound %s, the agent's default address's port (%s)", a, addr)
			}
		}
		return nil
	}},
	{10, "the agent on localhost holds both loopbacks: another user binds neither 127.0.0.1 nor [::1] on its port, and both answer /healthz", func(t *testing.T) error {
		port := freePort(t)
		agent := startAgent(t, "localhost:"+port)
		agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
		res := bindAsNobody(t, "127.0.0.1:"+port, "[::1]:"+port)
		for a, r := range res {
			if r == "bound" {
				return fmt.Errorf("with the agent on localhost:%s, a user other than root bound %s: `curl localhost:%s` may reach it", port, a, port)
			}
		}
		if err := probeHealthz("127.0.0.1:" + port); err != nil {
			return fmt.Errorf("127.0.0.1: %w", err)
		}
		if ipv6Loopback() {
			if err := probeHealthz("[::1]:" + port); err != nil {
				return fmt.Errorf("[::1]: %w", err)
			}
		}
		// An unprivileged port is warned about: in the gap of a restart
		// it is anyone's.
		if !slicesContain(agent.Seen, `"level":"WARN"`, "any user may bind port "+port, "ip_unprivileged_port_start") {
			return fmt.Errorf("no warning that port %s can be taken; stderr:\n%s", port, strings.Join(agent.Seen, "\n"))
		}
		agent.Stop(t)
		return nil
	}},
	{1, "140 connections sending a slow body and 140 sending a slow head keep neither /healthz from answering nor themselves open", func(t *testing.T) error {
		addr := "127.0.0.1:" + freePort(t)
		agent := startAgent(t, addr)
		agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
		var held []net.Conn
		for _, send := range []string{
			// One byte of 100,000, then nothing.
			"POST /healthz HTTP/1.1\r\nHost: agent\r\nContent-Length: 100000\r\n\r\nx",
			// A head that never ends.
			"GET /healthz HTTP/1.1\r\nHost: agent\r\n",
		} {
			for range 140 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return err
				}
				t.Cleanup(func() { c.Close() })
				if _, err := c.Write([]byte(send)); err != nil {
					return err
				}
				held = append(held, c)
			}
		}
		// The kubelet restarts the agent after 3 failed probes.
		for i := range 3 {
			if err := probeHealthz(addr); err != nil {
				return fmt.Errorf("probe %d with %d slow connections held: %w", i+1, len(held), err)
			}
		}
		// Every held connection is closed: by its deadline, or to make
		// room. A minute bounds a hang, not the deadline.
		var wg sync.WaitGroup
		open := make(chan int, len(held))
		for i, c := range held {
			wg.Go(func() {
				c.SetReadDeadline(time.Now().Add(time.Minute))
				if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
					open <- i
				}
			})
		}
		wg.Wait()
		close(open)
		if n := len(open); n > 0 {
			return fmt.Errorf("%d of %d slow connections still open after a minute (the first: %d)", n, len(held), <-open)
		}
		agent.Stop(t)
		return nil
	}},
	{1, "the agent's port takes no credential: every /v1/ path (and the old fleet row) is 404 with a bearer token in Authorization or Nodegc-Authorization, no token or access review reaches the API server, and the probes answer", func(t *testing.T) error {
		api := startReviewAPI(t)
		addr := "127.0.0.1:" + freePort(t)
		agent := startAgentWithAPI(t, addr, api.kubeconfig(t))
		agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"agent started"`))
		var wrong []string
		for _, req := range []string{"GET /v1/status", "GET /v1/status?brief=true", "GET /v1/notices", "GET /v1/snapshot", "GET /v1/plan",
			"GET /v1/reports", "GET /v1/journal", "POST /v1/force", "POST /v1/preview", "POST /v1/apply", "POST /v1/pause", "POST /v1/stop",
			"GET /fleet/v1/summary"} {
			for _, header := range []string{"Nodegc-Authorization", "Authorization"} {
				method, path, _ := strings.Cut(req, " ")
				code, err := sendWithToken(addr, method, path, header)
				if err != nil {
					return fmt.Errorf("%s with %s: %w", req, header, err)
				}
				if code != http.StatusNotFound {
					wrong = append(wrong, fmt.Sprintf("%s with a token in %s: %d", req, header, code))
				}
			}
		}
		var errs []error
		if len(wrong) > 0 {
			errs = append(errs, fmt.Errorf("the agent's port serves only /metrics, /healthz and /readyz; want 404 for every other path, got %d others:\n%s", len(wrong), strings.Join(wrong, "\n")))
		}
		if reviews := api.reviews(); len(reviews) > 0 {
			errs = append(errs, fmt.Errorf("the agent sent the API server %d reviews of the tokens it was sent (%v): it must take no one's credential", len(reviews), reviews))
		}
		for _, probe := range []string{"/healthz", "/metrics"} {
			if code, err := sendWithToken(addr, http.MethodGet, probe, ""); err != nil || code != http.StatusOK {
				errs = append(errs, fmt.Errorf("GET %s: %d, %v", probe, code, err))
			}
		}
		agent.Stop(t)
		return errors.Join(errs...)
	}},
	{1, "an address another program holds: the agent says so in an error line, keeps collecting, and serves there once it is free", func(t *testing.T) error {
		squat, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer squat.Close()
		addr := squat.Addr().String()
		agent := startAgent(t, addr)
		agent.WaitLine(t, time.Minute, proctest.Contains(`"level":"ERROR"`, "--metrics-bind-address: "+addr+" is held by another program"))
		agent.WaitLine(t, time.Minute, proctest.Contains(`"msg":"pass done"`))
		squat.Close()
		agent.WaitLine(t, 2*time.Minute, proctest.Contains(`"msg":"metrics listener bound"`, addr))
		if err := probeHealthz(addr); err != nil {
			return fmt.Errorf("after the address was freed: %w", err)
		}
		agent.Stop(t)
		return nil
	}},
}

// startAgent runs `nodegc agent` on a simulated node of its own, serving
// on addr, passes every second, until the test ends (or Stop).
func startAgent(t *testing.T, addr string) *proctest.Process {
	t.Helper()
	_, ep := startSimnode(t)
	return proctest.Start(t, binary(t), "agent", "--simulated", "--runtime-endpoint", ep,
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--kubelet-config", os.DevNull, "--kubelet-pid", "-1",
		"--metrics-bind-address", addr, "--container-gc-period", "1s", "--image-gc-period", "1h")
}

// startAgentWithAPI runs `nodegc agent` with a pod source, its API
// server the one kubeconfig names, on a simulated node taken for a real
// runtime (a simulated one has no pod source), below its high threshold,
// serving on addr, until the test ends (or Stop).
func startAgentWithAPI(t *testing.T, addr, kubeconfig string) *proctest.Process {
	t.Helper()
	_, ep := simnode.ServeTemp(t, simnode.Options{Seed: 7, Images: 8, Pods: 3, MinImageBytes: 50 << 20, MaxImageBytes: 200 << 20,
		InitialUsagePercent: 50, Start: time.Now().Add(-24 * time.Hour), Mountpoint: t.TempDir()})
	return proctest.Start(t, binary(t), "agent", "--runtime-endpoint", asRealRuntime(t, ep), "--kubeconfig", kubeconfig, "--node-name", "node-a",
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--kubelet-config", os.DevNull, "--kubelet-pid", "-1",
		"--metrics-bind-address", addr, "--image-gc-period", "1h")
}

// reviewAPI is a stand-in API server that accepts every token
// (TokenReview) and allows every user everything (SubjectAccessReview),
// as an agent that relayed a token would have been answered, and refuses
// anything else (403). It records the reviews it is sent.
type reviewAPI struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []string
}

func startReviewAPI(t *testing.T) *reviewAPI {
	t.Helper()
	a := &reviewAPI{}
	a.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.HasSuffix(r.URL.Path, "/tokenreviews"):
			a.record(r)
			io.WriteString(w, `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","status":{"authenticated":true,"user":{"username":"operator"}}}`)
		case strings.HasSuffix(r.URL.Path, "/subjectaccessreviews"):
			a.record(r)
			io.WriteString(w, `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","status":{"allowed":true}}`)
		default:
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`)
		}
	}))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *reviewAPI) record(r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, r.Method+" "+r.URL.Path)
}

// reviews are the token and access reviews the API server was sent.
func (a *reviewAPI) reviews() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got)
}

// kubeconfig writes a root-owned kubeconfig for the API server, with the
// agent's own token, and returns its path.
func (a *reviewAPI) kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.conf")
	conf := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + a.srv.URL + "\n    insecure-skip-tls-verify: true\n" +
		"users:\n- name: u\n  user:\n    token: the-agents-own\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sendWithToken sends method path to the agent at addr, with an
// operator's bearer token in header (none when header is ""), and
// returns the reply's status. The body is not read: a stream's never
// ends.
func sendWithToken(addr, method, path, header string) (int, error) {
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(`{"kind":"images"}`))
	if err != nil {
		return 0, err
	}
	if header != "" {
		req.Header.Set(header, "Bearer an-operators-token")
	}
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// defaultMetricsAddress is --metrics-bind-address's default, as the
// binary's help says.
func defaultMetricsAddress(t *testing.T) string {
	t.Helper()
	r := nodegc(t, "agent", "--help")
	m := regexp.MustCompile(`--metrics-bind-address string .*\(default "([^"]+)"\)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no default of --metrics-bind-address in agent --help (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
	return m[1]
}

// unprivilegedPortStart is net.ipv4.ip_unprivileged_port_start here.
func unprivilegedPortStart(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_unprivileged_port_start")
	if err != nil {
		return 1024 // kernels before 4.11: fixed
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// freePort is a TCP port nothing listens on now, on any loopback.
func freePort(t *testing.T) string {
	t.Helper()
	for range 100 {
		_, port, err := net.SplitHostPort(proctest.FreeAddress(t))
		if err != nil {
			t.Fatal(err)
		}
		if l, err := net.Listen("tcp", "[::1]:"+port); err == nil {
			l.Close()
			return port
		} else if !ipv6Loopback() {
			return port
		}
	}
	t.Fatal("no port free on both loopbacks")
	return ""
}

// ipv6Loopback reports whether this machine has [::1].
func ipv6Loopback() bool {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// bindScript binds and listens on each host:port argument, with
// SO_REUSEADDR and SO_REUSEPORT as a squatter would, and prints
// "<arg> bound" or "<arg> <error>". Perl is Debian's (perl-base, an
// essential package), runnable by any user.
const bindScript = `use Socket qw(:all);
for my $a (@ARGV) {
	my ($h, $p) = $a =~ /^\[?([^\]]*)\]?:(\d+)$/ or die "bad address $a";
	my $six = $h =~ /:/;
	my $fam = $six ? AF_INET6 : AF_INET;
	socket(my $s, $fam, SOCK_STREAM, 0) or do { print "$a socket: $!\n"; next };
	setsockopt($s, SOL_SOCKET, SO_REUSEADDR, 1);
	setsockopt($s, SOL_SOCKET, SO_REUSEPORT, 1);
	my $sa = $six ? pack_sockaddr_in6($p, inet_pton(AF_INET6, $h)) : pack_sockaddr_in($p, inet_aton($h));
	if (bind($s, $sa) && listen($s, 1)) { print "$a bound\n" } else { print "$a $!\n" }
	close $s;
}
`

// bindAsNobody tries to bind each address as uid and gid 65534 (what a
// user on the node can do) and returns each one's result: "bound" or
// the error.
func bindAsNobody(t *testing.T, addrs ...string) map[string]string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("binding as another user needs root (setpriv)")
	}
	// A free unprivileged port, which nobody must be able to bind: the
	// script works, and a refusal below is the kernel's.
	control := proctest.FreeAddress(t)
	out, err := exec.Command("setpriv", append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", "perl", "-e", bindScript, control}, addrs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("setpriv perl: %v: %s", err, out)
	}
	res := map[string]string{}
	for line := range strings.Lines(string(out)) {
		a, r, _ := strings.Cut(strings.TrimSpace(line), " ")
		res[a] = r
	}
	if res[control] != "bound" || len(res) != len(addrs)+1 {
		t.Fatalf("bind script answered %q for %s (which it must bind) and %v", out, control, addrs)
	}
	delete(res, control)
	t.Logf("as nobody: %v", res)
	return res
}

// probeHealthz is the kubelet's liveness probe: GET /healthz on a new
// connection, failing unless 200 comes within the DaemonSet's
// timeoutSeconds (5).
func probeHealthz(addr string) error {
	const timeout = 5 * time.Second
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: kube-probe/1.36\r\nConnection: close\r\n\r\n")); err != nil {
		return err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Errorf("/healthz not answered within the probe's %s: %w", timeout, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz: %d", resp.StatusCode)
	}
	return nil
}

// slicesContain reports whether one of lines contains every one of subs.
func slicesContain(lines []string, subs ...string) bool {
	match := proctest.Contains(subs...)
	for _, l := range lines {
		if match(l) {
			return true
		}
	}
	return false
}
