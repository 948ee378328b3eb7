package kubetest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// APIServer is etcd and a kube-apiserver (RBAC, static tokens) with a CA
// of their own, for tests that need the API alone (test/fleet): no
// controller manager, scheduler or kubelet, so Node and Pod objects stay
// as the test writes them. test/cluster starts its own, fuller one.
type APIServer struct {
	URL    string
	Port   int
	Dir    string
	CAFile string
	// Admin is a kubeconfig of system:masters.
	Admin string
	// PID is the kube-apiserver's process, for its CPU and memory.
	PID int
}

// APIServerOptions configure StartAPIServer.
type APIServerOptions struct {
	// Bind is the address it listens on (default 127.0.0.1); the
	// serving certificate names it.
	Bind string
	// Tokens are extra static tokens: token → "user,uid,group".
	Tokens map[string]string
}

// AdminToken is the token of the Admin kubeconfig.
const AdminToken = "nodegc-test-admin"

// StartAPIServer starts etcd and kube-apiserver; t.Cleanup ends them and
// removes their data.
func StartAPIServer(t testing.TB, o APIServerOptions) *APIServer {
	t.Helper()
	apiserver := Binary(t, "kube-apiserver")
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		SkipOrFail(t, "etcd not installed (make deps installs Debian's etcd-server)")
	}
	if o.Bind == "" {
		o.Bind = "127.0.0.1"
	}
	dir := t.TempDir()
	s := &APIServer{Dir: dir, CAFile: filepath.Join(dir, "ca.crt")}
	client, peer := FreePort(t), FreePort(t)
	s.Port = FreePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	StartProcess(t, filepath.Join(dir, "etcd.log"), etcd,
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--quota-backend-bytes=1073741824")

	certFile, keyFile := filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	WriteServingCerts(t, s.CAFile, certFile, keyFile, net.ParseIP(o.Bind))
	saKey := filepath.Join(dir, "sa.key")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tokens := AdminToken + ",admin,admin,system:masters\n"
	for tok, who := range o.Tokens {
		tokens += tok + "," + who + "\n"
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	for file, data := range map[string][]byte{
		saKey:     pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		tokenFile: []byte(tokens),
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.URL = fmt.Sprintf("https://%s", net.JoinHostPort(o.Bind, fmt.Sprint(s.Port)))
	cmd := StartProcessCmd(t, filepath.Join(dir, "kube-apiserver.log"), apiserver,
		"--etcd-servers="+etcdURL,
		"--bind-address="+o.Bind, fmt.Sprintf("--secure-port=%d", s.Port),
		"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--token-auth-file="+tokenFile, "--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/24")
	s.PID = cmd.Process.Pid
	s.Admin = s.Kubeconfig(t, "admin", AdminToken)
	cs := s.Client(t)
	if !WaitFor(2*time.Minute, func() bool {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
		return err == nil
	}) {
		t.Fatalf("kube-apiserver not ready at %s; tail of its log:\n%s", s.URL, Tail(filepath.Join(dir, "kube-apiserver.log"), 30))
	}
	return s
}

// Kubeconfig writes a token kubeconfig that verifies the API server with
// the CA, and returns its path.
func (s *APIServer) Kubeconfig(t testing.TB, name, token string) string {
	t.Helper()
	return TokenKubeconfig(t, s.Dir, s.URL, s.CAFile, name, token)
}

// Client is an admin clientset (tests may link every API group; the
// nodegc binary does not).
func (s *APIServer) Client(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	return Clientset(t, s.Admin)
}

// TokenKubeconfig writes dir/name.kubeconfig: the server, verified with
// caFile, as the user of token; it returns its path.
func TokenKubeconfig(t testing.TB, dir, server, caFile, name, token string) string {
	t.Helper()
	p := filepath.Join(dir, name+".kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, server, caFile, token)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Clientset is a clientset of the kubeconfig, unthrottled.
func Clientset(t testing.TB, kubeconfig string) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// StartProcessCmd is StartProcess, returning the started command (its
// Process is for signals; its Wait belongs to the cleanup).
func StartProcessCmd(t testing.TB, logFile, bin string, args ...string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = filepath.Dir(logFile)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	exited, err := StartOnOwnThread(cmd)
	if err != nil {
		log.Close()
		t.Fatalf("start %s: %v", filepath.Base(bin), err)
	}
	done := make(chan struct{})
	go func() {
		<-exited
		log.Close()
		close(done)
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("%s: %v; tail of %s:\n%s", filepath.Base(bin), cmd.ProcessState, logFile, Tail(logFile, 20))
		}
	})
	return cmd
}

// WriteServingCerts writes a CA and the API server's serving certificate
// for loopback, ip (when not nil), and the in-cluster names.
func WriteServingCerts(t testing.TB, caFile, certFile, keyFile string, ip net.IP) {
	t.Helper()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nodegc-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(10, 96, 0, 1)}
	if ip != nil {
		ips = append(ips, ip)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	for file, block := range map[string]*pem.Block{
		caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		certFile: {Type: "CERTIFICATE", Bytes: der},
		keyFile:  {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// StartOnOwnThread starts cmd from a goroutine locked to its OS thread
// and waits for it there; the returned channel gets Wait's error and
// closes. Pdeathsig (which these commands set, so that nothing outlives
// the test) fires when the thread that forked the child exits, not the
// process, and the Go runtime ends a thread whenever a goroutine locked
// to it returns without unlocking: a child started from an ordinary
// goroutine can be killed at any moment by such a thread's end.
func StartOnOwnThread(cmd *exec.Cmd) (<-chan error, error) {
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}
