package jobcontract

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Registry credentials of the jobs (--registry-auth-secret): a kubernetes.io/dockerconfigjson
// Secret in the payload's namespace, with an optional ca.crt for a registry whose certificate
// a private authority signed.
const (
	// RegistryAuthVolume is the volume holding the Secret's config.json and ca.crt.
	RegistryAuthVolume = "release-controller-registry-auth"
	// RegistryAuthPath is where every container of the job finds them: DOCKER_CONFIG (read by
	// go-containerregistry, crane, docker) and SSL_CERT_DIR (read by Go and OpenSSL besides
	// the system's certificates).
	RegistryAuthPath = "/var/run/secrets/release-controller.dev/registry"
	// RegistryCAKey is the Secret's optional key holding PEM certificate authorities.
	RegistryCAKey = "ca.crt"
)

// WithRegistryAuth gives a job's pod the registry credentials of the Secret secret: it pulls
// its images with them (imagePullSecrets), and every container gets the Secret's
// .dockerconfigjson as $DOCKER_CONFIG/config.json and its ca.crt, if any, in $SSL_CERT_DIR —
// unless the container sets those variables itself. An empty secret changes nothing.
func WithRegistryAuth(spec *corev1.PodSpec, secret string) {
	if secret == "" {
		return
	}
	if !hasPullSecret(spec.ImagePullSecrets, secret) {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: secret})
	}
	spec.Volumes = append(spec.Volumes, corev1.Volume{
		Name: RegistryAuthVolume,
		VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o444),
			Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: secret},
					Items:                []corev1.KeyToPath{{Key: corev1.DockerConfigJsonKey, Path: "config.json"}},
				}},
				{Secret: &corev1.SecretProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: secret},
					Items:                []corev1.KeyToPath{{Key: RegistryCAKey, Path: RegistryCAKey}},
					Optional:             ptr.To(true),
				}},
			},
		}},
	})
	for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range containers {
			c := &containers[i]
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: RegistryAuthVolume, MountPath: RegistryAuthPath, ReadOnly: true})
			for _, name := range []string{"DOCKER_CONFIG", "SSL_CERT_DIR"} {
				if !containerSets(c, name) {
					c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: RegistryAuthPath})
				}
			}
		}
	}
}

func hasPullSecret(refs []corev1.LocalObjectReference, name string) bool {
	for _, r := range refs {
		if r.Name == name {
			return true
		}
	}
	return false
}

func containerSets(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}
