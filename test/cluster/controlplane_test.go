package cluster

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodegc/nodegc/internal/kubetest"
)

// controlPlane is etcd, kube-apiserver (RBAC and Node authorization, the
// ServiceAccount admission plugin), kube-controller-manager and
// kube-scheduler, all on loopback ports of their own, with a CA of their
// own so pods verify the API server as on a real cluster.
type controlPlane struct {
	URL  string
	Port int
	dir  string
	// CAFile signs the API server's certificate; the controller manager
	// publishes it to every namespace (kube-root-ca.crt).
	CAFile string
	// Admin is a kubeconfig of system:masters.
	Admin string
	// AuditLog is the API server's audit log (auditPolicy).
	AuditLog string
}

// auditPolicy logs who writes the NodeGC objects, with the body of each
// write: a command's holds its ID, so a test ties each command to its
// event and its user; a status write's size is what the agent sends.
// Nothing else is logged.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Request
  verbs: ["create", "update", "patch", "delete"]
  resources: [{group: "nodegc.io", resources: ["nodegcs", "nodegcs/status"]}]
- level: None
`

const adminToken = "nodegc-cluster-admin"

// startControlPlane starts the control plane; t.Cleanup ends it and removes
// its data. nodeName gets a kubelet token (system:node:<name>).
func startControlPlane(t testing.TB, nodeName string) *controlPlane {
	t.Helper()
	apiserver := kubetest.Binary(t, "kube-apiserver")
	kcm := kubetest.Binary(t, "kube-controller-manager")
	scheduler := kubetest.Binary(t, "kube-scheduler")
	etcd, err := exec.LookPath("etcd")
	if err != nil {
		kubetest.SkipOrFail(t, "etcd not installed (make deps installs Debian's etcd-server)")
	}
	dir := t.TempDir()
	cp := &controlPlane{dir: dir, CAFile: filepath.Join(dir, "ca.crt"), AuditLog: filepath.Join(dir, "audit.log")}
	client, peer := kubetest.FreePort(t), kubetest.FreePort(t)
	cp.Port = kubetest.FreePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	kubetest.StartProcess(t, filepath.Join(dir, "etcd.log"), etcd,
		"--name=default", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL)

	certFile, keyFile := filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	// Loopback serves the kubelet, the tests, and the agent on the host
	// network.
	kubetest.WriteServingCerts(t, cp.CAFile, certFile, keyFile, nil)
	saKey := filepath.Join(dir, "sa.key")
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tokens, audit := filepath.Join(dir, "tokens.csv"), filepath.Join(dir, "audit-policy.yaml")
	for file, data := range map[string][]byte{
		audit: []byte(auditPolicy),
		saKey: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		tokens: []byte(adminToken + ",admin,admin,system:masters\n" +
			kubeletToken + ",system:node:" + nodeName + ",kubelet,system:nodes\n"),
	} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cp.URL = fmt.Sprintf("https://127.0.0.1:%d", cp.Port)
	kubetest.StartProcess(t, filepath.Join(dir, "kube-apiserver.log"), apiserver,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", cp.Port),
		"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--token-auth-file="+tokens, "--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--audit-policy-file="+audit, "--audit-log-path="+cp.AuditLog)
	cp.Admin = cp.kubeconfig(t, "admin", adminToken)
	cs := cp.client(t)
	if !kubetest.WaitFor(2*time.Minute, func() bool {
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(t.Context())
		return err == nil
	}) {
		t.Fatalf("kube-apiserver not ready at %s; tail of its log:\n%s", cp.URL, kubetest.Tail(filepath.Join(dir, "kube-apiserver.log"), 30))
	}
	kubetest.StartProcess(t, filepath.Join(dir, "kube-controller-manager.log"), kcm,
		"--kubeconfig="+cp.Admin, "--leader-elect=false",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", kubetest.FreePort(t)),
		"--root-ca-file="+cp.CAFile, "--service-account-private-key-file="+saKey,
		"--use-service-account-credentials=false")
	kubetest.StartProcess(t, filepath.Join(dir, "kube-scheduler.log"), scheduler,
		"--kubeconfig="+cp.Admin, "--leader-elect=false",
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", kubetest.FreePort(t)))
	return cp
}

const kubeletToken = "nodegc-cluster-kubelet"

// kubeconfig writes a token kubeconfig that verifies the API server with
// the CA, and returns its path.
func (cp *controlPlane) kubeconfig(t testing.TB, name, token string) string {
	t.Helper()
	return kubetest.TokenKubeconfig(t, cp.dir, cp.URL, cp.CAFile, name, token)
}

// client is an admin clientset.
func (cp *controlPlane) client(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	return kubetest.Clientset(t, cp.Admin)
}
