package manager

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// pod is a pod whose containers are given as name=image pairs, with statuses name→imageID.
func pod(containers []string, imageIDs map[string]string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "rc-system", Name: "rc-controller-0"}}
	for _, c := range containers {
		n, image, _ := strings.Cut(c, "=")
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: image})
		if id, ok := imageIDs[n]; ok {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: n, Image: image, ImageID: id})
		}
	}
	return p
}

func TestChooseBuildImage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flag    string
		pod     *corev1.Pod
		want    string
		wantErr string
	}{
		{name: "flag wins outside a pod", flag: "registry.example.com/rc:v1", want: "registry.example.com/rc:v1"},
		{name: "flag wins in a pod", flag: "registry.example.com/rc:v1",
			pod:  pod([]string{"controller=registry.example.com/other:v2"}, map[string]string{"controller": "registry.example.com/other@" + digestA}),
			want: "registry.example.com/rc:v1"},
		{name: "outside a pod without the flag", wantErr: "--build-image is required outside a pod"},
		{name: "tag pinned to the digest the node pulled",
			pod:  pod([]string{"controller=registry.example.com/team/rc:v1"}, map[string]string{"controller": "registry.example.com/team/rc@" + digestA}),
			want: "registry.example.com/team/rc@" + digestA},
		{name: "registry with a port",
			pod:  pod([]string{"controller=localhost:5000/rc:v1"}, map[string]string{"controller": "localhost:5000/rc@" + digestA}),
			want: "localhost:5000/rc@" + digestA},
		{name: "no tag: the digest still pins it",
			pod:  pod([]string{"controller=localhost:5000/rc"}, map[string]string{"controller": "localhost:5000/rc@" + digestA}),
			want: "localhost:5000/rc@" + digestA},
		{name: "docker-pullable image ID",
			pod:  pod([]string{"controller=rc:v1"}, map[string]string{"controller": "docker-pullable://rc@" + digestA}),
			want: "rc@" + digestA},
		{name: "the image ID names another repository: the spec's repository keeps its spelling",
			pod:  pod([]string{"controller=mirror.example.com/rc:v1"}, map[string]string{"controller": "docker.io/library/rc@" + digestA}),
			want: "mirror.example.com/rc@" + digestA},
		{name: "spec already by digest",
			pod:  pod([]string{"controller=registry.example.com/rc@" + digestA}, map[string]string{"controller": "registry.example.com/rc@" + digestB}),
			want: "registry.example.com/rc@" + digestA},
		{name: "tag and digest in the spec",
			pod:  pod([]string{"controller=registry.example.com/rc:v1@" + digestA}, nil),
			want: "registry.example.com/rc:v1@" + digestA},
		{name: "no status yet",
			pod:  pod([]string{"controller=registry.example.com/rc:v1"}, nil),
			want: "registry.example.com/rc:v1"},
		{name: "a local image ID is no registry digest",
			pod:  pod([]string{"controller=rc:dev"}, map[string]string{"controller": digestA}),
			want: "rc:dev"},
		{name: "a malformed digest is ignored",
			pod:  pod([]string{"controller=registry.example.com/rc:v1"}, map[string]string{"controller": "registry.example.com/rc@sha256:short"}),
			want: "registry.example.com/rc:v1"},
		{name: "the only container, whatever its name",
			pod:  pod([]string{"manager=registry.example.com/rc:v1"}, map[string]string{"manager": "registry.example.com/rc@" + digestA}),
			want: "registry.example.com/rc@" + digestA},
		{name: "a sidecar: the container named controller",
			pod: pod([]string{"istio-proxy=istio/proxyv2:1.0", "controller=registry.example.com/rc:v1"},
				map[string]string{"istio-proxy": "istio/proxyv2@" + digestB, "controller": "registry.example.com/rc@" + digestA}),
			want: "registry.example.com/rc@" + digestA},
		{name: "two containers, none named controller",
			pod:     pod([]string{"a=registry.example.com/a:v1", "b=registry.example.com/b:v1"}, nil),
			wantErr: `has 2 containers, none named "controller"`},
		{name: "no image", pod: pod([]string{"controller="}, nil), wantErr: "names no image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ChooseBuildImage(tc.flag, tc.pod)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ChooseBuildImage = %q, %v; want an error containing %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ChooseBuildImage = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestOwnPod(t *testing.T) {
	dir := t.TempDir()
	nsFile := filepath.Join(dir, "namespace")
	for _, tc := range []struct {
		name                 string
		podName, podNS, host string
		nsFile               string // content of the service account's namespace file; "" for none
		want                 client.ObjectKey
		wantOK               bool
	}{
		{name: "downward API", podName: "rc-1", podNS: "rc-system", host: "other", nsFile: "ns-file",
			want: client.ObjectKey{Namespace: "rc-system", Name: "rc-1"}, wantOK: true},
		{name: "service account and hostname", host: "rc-2", nsFile: "ns-file\n",
			want: client.ObjectKey{Namespace: "ns-file", Name: "rc-2"}, wantOK: true},
		{name: "outside a pod", host: "laptop", want: client.ObjectKey{}, wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("POD_NAME", tc.podName)
			t.Setenv("POD_NAMESPACE", tc.podNS)
			t.Setenv("HOSTNAME", tc.host)
			serviceAccountNamespaceFile = filepath.Join(dir, "missing")
			if tc.nsFile != "" {
				if err := os.WriteFile(nsFile, []byte(tc.nsFile), 0o600); err != nil {
					t.Fatal(err)
				}
				serviceAccountNamespaceFile = nsFile
			}
			got, ok := OwnPod()
			if ok != tc.wantOK || (ok && got != tc.want) {
				t.Fatalf("OwnPod = %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestResolveBuildImage(t *testing.T) {
	serviceAccountNamespaceFile = filepath.Join(t.TempDir(), "missing")
	self := pod([]string{"controller=registry.example.com/rc:v1"}, map[string]string{"controller": "registry.example.com/rc@" + digestA})
	c := fake.NewClientBuilder().WithObjects(self).Build()
	ctx := context.Background()

	t.Setenv("POD_NAMESPACE", self.Namespace)
	t.Setenv("POD_NAME", self.Name)
	if got, err := ResolveBuildImage(ctx, c, ""); err != nil || got != "registry.example.com/rc@"+digestA {
		t.Errorf("in its pod: %q, %v", got, err)
	}
	if got, err := ResolveBuildImage(ctx, c, "x/rc:v2"); err != nil || got != "x/rc:v2" {
		t.Errorf("with the flag: %q, %v", got, err)
	}
	t.Setenv("POD_NAME", "gone")
	if _, err := ResolveBuildImage(ctx, c, ""); err == nil || !strings.Contains(err.Error(), "pass --build-image, or allow get on pods in rc-system") {
		t.Errorf("own pod missing: %v", err)
	}
	t.Setenv("POD_NAME", "")
	t.Setenv("POD_NAMESPACE", "")
	t.Setenv("HOSTNAME", "laptop")
	if _, err := ResolveBuildImage(ctx, c, ""); err == nil || !strings.Contains(err.Error(), "required outside a pod") {
		t.Errorf("outside a pod: %v", err)
	}
}
