//go:build !unit

package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKindLoadArchive follows README's path for kind and k3d, which have no registry of ours:
// make image IMAGE_ARCHIVE writes a docker archive, imported into the node's containerd as
// `kind load image-archive` imports it (ctr images import --all-platforms --digests, in the
// CRI's namespace), and a pod runs the image by name without pulling.
func TestKindLoadArchive(t *testing.T) {
	ctx := t.Context()
	archive := filepath.Join(tmp, "release-controller.tar")
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE_ARCHIVE="+archive, "IMAGE_ARCHIVE_TAG=release-controller:kind")
	cmd.Dir, cmd.Env = root, append(os.Environ(), "MAKEFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make image IMAGE_ARCHIVE=%s: %v\n%s", archive, err, out)
	}
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	load := exec.Command("ctr", "--address", paths.ContainerdSocket(), "--namespace=k8s.io", "images", "import", "--all-platforms", "--digests", "-")
	load.Stdin = f
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("ctr images import: %v\n%s", err, out)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kind-load"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "version", Image: "release-controller:kind", ImagePullPolicy: corev1.PullNever,
				Args: []string{"version"}, SecurityContext: restricted(),
			}},
		},
	}
	mustCreate(t, ctx, pod)
	t.Cleanup(func() { _ = admin.Delete(ctx, pod) })
	eventually(t, time.Minute, "the pod of the loaded image succeeding", func() (bool, string) {
		got, err := clientset.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if got.Status.Phase == corev1.PodFailed {
			t.Fatalf("the pod failed: %+v", got.Status)
		}
		return got.Status.Phase == corev1.PodSucceeded, string(got.Status.Phase)
	})
	logs, err := clientset.CoreV1().Pods("default").GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(logs)) == "" {
		t.Error("release-controller version printed nothing")
	}
}
