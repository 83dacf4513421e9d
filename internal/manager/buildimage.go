package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reading the controller's own Pod, for the creation Jobs' default image (the `controller`
// command, once at start): a get in the pod's namespace, which is the Role
// release-controller-controller of namespace release-controller-system in
// config/rbac/controller/role.yaml, put into the install's own namespace like the leader
// election's rules (see manager.go).
// +kubebuilder:rbac:groups="",namespace=release-controller-system,resources=pods,verbs=get

// ControllerContainer is the name of the controller's container in its Pod: when the Pod has
// more than one container (an injected sidecar), this is the one whose image the creation
// Jobs run by default.
const ControllerContainer = "controller"

// serviceAccountNamespaceFile holds the namespace of a pod's service account, which is the
// pod's namespace; a variable so that tests can point it elsewhere.
var serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// OwnPod names the Pod this process runs in: POD_NAMESPACE and POD_NAME (the downward API, as
// config/default and the Helm chart set them), else the service account's namespace and
// HOSTNAME (a pod's hostname is its name unless spec.hostname says otherwise). ok is false
// outside a pod.
func OwnPod() (key client.ObjectKey, ok bool) {
	key = client.ObjectKey{Namespace: os.Getenv("POD_NAMESPACE"), Name: os.Getenv("POD_NAME")}
	if key.Namespace == "" {
		if data, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
			key.Namespace = strings.TrimSpace(string(data))
		}
	}
	if key.Name == "" && key.Namespace != "" {
		key.Name = os.Getenv("HOSTNAME")
	}
	return key, key.Namespace != "" && key.Name != ""
}

// ResolveBuildImage returns the image of the payload creation Jobs: flag when it is set;
// otherwise, in a pod, the image of the pod's controller container (see ChooseBuildImage),
// read through c; outside a pod, an error asking for --build-image.
func ResolveBuildImage(ctx context.Context, c client.Reader, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	key, inPod := OwnPod()
	if !inPod {
		return ChooseBuildImage("", nil)
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, key, pod); err != nil {
		return "", fmt.Errorf("--build-image is not set and reading this pod %s for its image failed (pass --build-image, or allow get on pods in %s): %w", key, key.Namespace, err)
	}
	return ChooseBuildImage("", pod)
}

// ChooseBuildImage decides the creation Jobs' image:
//   - flag, when set;
//   - outside a pod (pod is nil): an error, since no image is known that the cluster can pull;
//   - in a pod: the image of its container ControllerContainer (or of its only container),
//     pinned to the digest the node pulled when the container's status.imageID names one
//     (repository@sha256:…), so a tag moved later does not change what the Jobs run; the
//     spec's image as written otherwise (status not reported yet, or an image ID that is no
//     registry digest).
func ChooseBuildImage(flag string, pod *corev1.Pod) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if pod == nil {
		return "", errors.New("--build-image is required outside a pod: name the release-controller image the cluster pulls for the payload creation jobs (in a pod it defaults to the pod's own image)")
	}
	container, err := controllerContainer(pod)
	if err != nil {
		return "", err
	}
	image := container.Image
	if image == "" {
		return "", fmt.Errorf("--build-image is not set and container %q of pod %s/%s names no image", container.Name, pod.Namespace, pod.Name)
	}
	if strings.Contains(image, "@") {
		return image, nil // already by digest
	}
	for _, status := range pod.Status.ContainerStatuses {
		if status.Name != container.Name {
			continue
		}
		if digest := registryDigest(status.ImageID); digest != "" {
			pinned := repository(image) + "@" + digest
			if _, err := name.NewDigest(pinned); err == nil {
				return pinned, nil
			}
		}
	}
	return image, nil
}

// controllerContainer is the pod's container named ControllerContainer, else its only one.
func controllerContainer(pod *corev1.Pod) (*corev1.Container, error) {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == ControllerContainer {
			return &pod.Spec.Containers[i], nil
		}
	}
	if len(pod.Spec.Containers) == 1 {
		return &pod.Spec.Containers[0], nil
	}
	return nil, fmt.Errorf("--build-image is not set and pod %s/%s has %d containers, none named %q: pass --build-image", pod.Namespace, pod.Name, len(pod.Spec.Containers), ControllerContainer)
}

// registryDigest returns the digest of an image ID that names one in a registry —
// "repo@sha256:…", as containerd reports it, or "docker-pullable://repo@sha256:…" — and ""
// for anything else (a bare "sha256:…" is the local image's ID, not a manifest digest).
func registryDigest(imageID string) string {
	if _, rest, ok := strings.Cut(imageID, "://"); ok {
		imageID = rest
	}
	_, digest, ok := strings.Cut(imageID, "@")
	if !ok {
		return ""
	}
	if _, err := name.NewDigest("example.com/repo@" + digest); err != nil {
		return ""
	}
	return digest
}

// repository drops the tag (and any digest) from an image reference, keeping the rest as
// written: "registry:5000/team/rc:v1" → "registry:5000/team/rc".
func repository(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		image = image[:i]
	}
	return image
}
