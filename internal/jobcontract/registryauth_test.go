package jobcontract

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWithRegistryAuth(t *testing.T) {
	pod := func() corev1.PodSpec {
		return corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init"}},
			Containers: []corev1.Container{
				{Name: "main"},
				{Name: "own-certs", Env: []corev1.EnvVar{{Name: "SSL_CERT_DIR", Value: "/mine"}}},
			},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "other"}},
		}
	}

	t.Run("no secret changes nothing", func(t *testing.T) {
		spec := pod()
		WithRegistryAuth(&spec, "")
		if len(spec.Volumes) != 0 || len(spec.ImagePullSecrets) != 1 || len(spec.Containers[0].Env) != 0 {
			t.Errorf("changed: %+v", spec)
		}
	})

	spec := pod()
	WithRegistryAuth(&spec, "regcred")
	if got := spec.ImagePullSecrets; len(got) != 2 || got[1].Name != "regcred" {
		t.Errorf("imagePullSecrets = %v, want other and regcred", got)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].Projected == nil {
		t.Fatalf("volumes = %+v, want one projected volume", spec.Volumes)
	}
	sources := spec.Volumes[0].Projected.Sources
	if len(sources) != 2 || sources[0].Secret.Items[0].Key != corev1.DockerConfigJsonKey || sources[0].Secret.Items[0].Path != "config.json" ||
		sources[0].Secret.Optional != nil || sources[1].Secret.Items[0].Key != RegistryCAKey || !*sources[1].Secret.Optional {
		t.Errorf("projection = %+v: want a required .dockerconfigjson as config.json and an optional ca.crt", sources)
	}
	env := func(c corev1.Container, name string) string {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value
			}
		}
		return ""
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != RegistryAuthPath || !c.VolumeMounts[0].ReadOnly {
			t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
		}
		if env(c, "DOCKER_CONFIG") != RegistryAuthPath {
			t.Errorf("container %s: DOCKER_CONFIG = %q", c.Name, env(c, "DOCKER_CONFIG"))
		}
	}
	if got := env(spec.Containers[1], "SSL_CERT_DIR"); got != "/mine" || len(spec.Containers[1].Env) != 2 {
		t.Errorf("a container's own SSL_CERT_DIR was replaced or repeated: %v", spec.Containers[1].Env)
	}
	if got := env(spec.Containers[0], "SSL_CERT_DIR"); got != RegistryAuthPath {
		t.Errorf("SSL_CERT_DIR = %q, want %q", got, RegistryAuthPath)
	}
	again := pod()
	again.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	WithRegistryAuth(&again, "regcred")
	if len(again.ImagePullSecrets) != 1 {
		t.Errorf("imagePullSecrets = %v: the secret is listed twice", again.ImagePullSecrets)
	}
}
