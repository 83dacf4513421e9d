//go:build !unit

package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/internal/localcluster"
)

// eventually polls check every half second until it says done, and fails the test with its
// last word after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, check func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		done, status := check()
		if done {
			return
		}
		if status != last {
			t.Logf("waiting for %s: %s", what, status)
			last = status
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s; last: %s", what, timeout, status)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// registryClient pushes to and reads from the cluster's registry as its user, trusting its
// certificate authority.
type registryClient struct {
	opts []remote.Option
}

func newRegistryClient(t *testing.T) *registryClient {
	t.Helper()
	user, password, err := localcluster.ReadCredentials(paths)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(paths.CACert())
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return &registryClient{opts: []remote.Option{
		remote.WithAuth(&authn.Basic{Username: user, Password: password}),
		remote.WithTransport(transport),
	}}
}

// push writes img to the registry as repository:tag and returns its pull spec by digest.
func (r *registryClient) push(t *testing.T, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.NewTag(localcluster.RegistryHost() + "/" + repoTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img, r.opts...); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(digest.String()).String()
}

// head resolves ref in the registry.
func (r *registryClient) head(t *testing.T, ref string) v1.Hash {
	t.Helper()
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(parsed, r.opts...)
	if err != nil {
		t.Fatalf("resolving %s: %v", ref, err)
	}
	return desc.Digest
}

// pauseImage is the pause binary as an image whose configuration carries labels.
func pauseImage(t *testing.T, labels map[string]string) v1.Image {
	t.Helper()
	img, err := localcluster.BinaryImage(pauseBinary, labels)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// imageRepository is where the tests push the release-controller image, tagged imageTag.
var imageRepository = localcluster.RegistryHost() + "/release-controller/release-controller"

const imageTag = "cluster-test"

var (
	imageOnce   sync.Once
	imageDigest string
)

// releaseControllerImage builds and pushes the image once per run and returns it by digest.
func releaseControllerImage(t *testing.T, reg *registryClient) string {
	t.Helper()
	imageOnce.Do(func() {
		makeImage(t, imageRepository+":"+imageTag)
		imageDigest = reg.head(t, imageRepository+":"+imageTag).String()
	})
	if imageDigest == "" {
		t.Fatal("the release-controller image was not pushed (see the first test)")
	}
	return imageRepository + "@" + imageDigest
}

// makeImage builds the release-controller image with `make image` and pushes it to ref, with
// the credentials and trust a user gives it (DOCKER_CONFIG, SSL_CERT_DIR); only linux/amd64,
// the node's platform.
func makeImage(t *testing.T, ref string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE="+ref, "IMAGE_PLATFORMS=linux/amd64")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+paths.DockerConfigDir(), "SSL_CERT_DIR="+paths.TrustDir(), "MAKEFLAGS=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make image IMAGE=%s: %v\n%s", ref, err, out)
	}
	t.Logf("make image IMAGE=%s: %.1fs", ref, time.Since(start).Seconds())
}

// createNamespace makes a namespace that enforces the restricted Pod Security Standard.
func createNamespace(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := admin.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// createRegistrySecret makes the Secret name in namespace: the registry's credentials
// (kubernetes.io/dockerconfigjson) and its certificate authority (ca.crt).
func createRegistrySecret(t *testing.T, ctx context.Context, namespace, secretName string) {
	t.Helper()
	user, password, err := localcluster.ReadCredentials(paths)
	if err != nil {
		t.Fatal(err)
	}
	config, err := localcluster.DockerConfigJSON(user, password)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(paths.CACert())
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: config, "ca.crt": ca},
	}
	if err := admin.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
}

// deploymentAvailable says whether every replica of the Deployment is updated and available.
func deploymentAvailable(ctx context.Context, namespace, name string) (bool, string) {
	var d appsv1.Deployment
	if err := admin.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
		return false, err.Error()
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	status := fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d of %d",
		d.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, want)
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want, status
}

// dump logs what the cluster looks like when t has failed: pods, events and the logs of the
// namespaces' pods, and the end of the node's logs.
func dump(t *testing.T, namespaces ...string) {
	if !t.Failed() {
		return
	}
	{
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, _ := kubectl(ctx, "get", "pods,jobs,deployments,releasestreams,releasepayloads,pipelines", "-A", "-o", "wide")
		t.Logf("the cluster:\n%s", out)
		for _, ns := range namespaces {
			out, _ = kubectl(ctx, "-n", ns, "get", "events", "--sort-by=.lastTimestamp")
			t.Logf("events of %s:\n%s", ns, lastLines(out, 60))
			pods, err := clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				continue
			}
			for _, p := range pods.Items {
				out, _ = kubectl(ctx, "-n", ns, "logs", p.Name, "--all-containers", "--tail=40")
				t.Logf("logs of %s/%s:\n%s", ns, p.Name, out)
			}
		}
		for _, component := range []string{"kubelet", "kube-controller-manager", "containerd"} {
			data, _ := os.ReadFile(paths.Log(component))
			t.Logf("the end of %s:\n%s", filepath.Base(paths.Log(component)), lastLines(string(data), 30))
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kubeletMetrics reads the kubelet's /metrics with the API server's kubelet client certificate.
func kubeletMetrics(ctx context.Context) ([]byte, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(paths.PKI(), "kube-apiserver-kubelet-client.crt"), filepath.Join(paths.PKI(), "kube-apiserver-kubelet-client.key"))
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(paths.CACert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s:%d/metrics", localcluster.NodeName, localcluster.KubeletPort), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
