package kubelet

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// apiServer is a real kube-apiserver (built by scripts/build-kube.sh) on a
// private etcd (Debian's etcd-server), both on loopback ports of their own.
type apiServer struct {
	URL   string
	token string
	dir   string
}

// startAPIServer starts etcd and kube-apiserver with a token for
// system:masters, AlwaysAllow and no ServiceAccount admission (no
// controller manager makes the default service account). t.Cleanup stops
// both and removes their data.
func startAPIServer(t *testing.T) *apiServer {
	t.Helper()
	bin := kubeBinary(t, "kube-apiserver")
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		skipOrFail(t, "etcd not installed (make deps installs Debian's etcd-server)")
	}
	dir := t.TempDir()
	a := &apiServer{token: "nodegc-parity-token", dir: dir}
	client, peer, secure := freePort(t), freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	startProcess(t, filepath.Join(dir, "etcd.log"), etcd,
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL)

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "sa.key")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	tokens := filepath.Join(dir, "tokens.csv")
	for file, data := range map[string][]byte{keyFile: pemKey, tokens: []byte(a.token + ",admin,admin,system:masters\n")} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a.URL = fmt.Sprintf("https://127.0.0.1:%d", secure)
	startProcess(t, filepath.Join(dir, "kube-apiserver.log"), bin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", secure),
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+keyFile, "--service-account-signing-key-file="+keyFile,
		"--token-auth-file="+tokens, "--authorization-mode=AlwaysAllow",
		"--disable-admission-plugins=ServiceAccount",
		"--service-cluster-ip-range=10.96.0.0/24")

	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	ready := func() bool {
		req, _ := http.NewRequest(http.MethodGet, a.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+a.token)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !waitFor(2*time.Minute, ready) {
		t.Fatalf("kube-apiserver not ready at %s; tail of its log:\n%s", a.URL, tail(filepath.Join(dir, "kube-apiserver.log"), 30))
	}
	return a
}

// kubeconfig writes a kubeconfig for the server (token, no CA check) and
// returns its path.
func (a *apiServer) kubeconfig(t *testing.T) string {
	t.Helper()
	p := filepath.Join(a.dir, "kubeconfig")
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: parity
  cluster:
    server: %s
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: parity
  context:
    cluster: parity
    user: admin
current-context: parity
`, a.URL, a.token)
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// client returns a clientset for the server.
func (a *apiServer) client(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", a.kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
