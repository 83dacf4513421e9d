//go:build !unit

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/localcluster"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/signing"
)

const (
	// systemNamespace is where config/default installs everything.
	systemNamespace = "release-controller-system"
	// registrySecret is the registry Secret config/components/registry-auth names.
	registrySecret = "release-controller-registry"
	// teamNamespace holds the stream, its jobs and the pipeline's app.
	teamNamespace = "team-a"
	// streamName is the stream under test.
	streamName = "product"
)

// restricted is the security context every container needs under the restricted Pod Security
// Standard, which both namespaces enforce.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// verification is a blocking verification whose Job runs image with args.
func verification(name, image string, command ...string) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Type: v1alpha1.Blocking, Job: &v1alpha1.JobBackend{
		Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "check", Image: image, Command: command, SecurityContext: restricted()}},
			}},
		}},
	}}
}

// TestReleaseFlowOnARealNode installs release-controller as README says (make image, then
// kubectl apply --server-side -k with the image set by kustomize's images:) and runs the flow
// in pods: one payload Accepted, one Rejected by a verification whose image exits 1, the
// leader's pod deleted while a verification runs, retention collecting the oldest payload and
// the garbage collector its jobs' pods, the release log, the audit and signatures, the REST
// API through kubectl port-forward, and a Pipeline rolling the accepted payload out as a
// Deployment whose pods run the payload image.
func TestReleaseFlowOnARealNode(t *testing.T) {
	ctx := t.Context()
	reg := newRegistryClient(t)
	host := localcluster.RegistryHost()

	// The image, as a user builds and pushes it.
	rcImage := releaseControllerImage(t, reg)

	// Components: the pause program as images of "operator" (the payload's base, so the
	// payload runs) and of "api", a new build of which makes a new payload.
	operator := reg.push(t, teamNamespace+"/operator:1", pauseImage(t, map[string]string{
		"org.opencontainers.image.source": "https://git.example.com/operator", "org.opencontainers.image.revision": "o1",
	}))
	api := func(revision string) string {
		return reg.push(t, teamNamespace+"/api:"+revision, pauseImage(t, map[string]string{
			"org.opencontainers.image.source": "https://git.example.com/api", "org.opencontainers.image.revision": revision,
		}))
	}
	pause := reg.push(t, "cluster/pause:1", pauseImage(t, nil))
	payloadRepo := host + "/" + teamNamespace + "/release"
	// The pipeline's app starts at an image of the payload repository that is no payload.
	reg.push(t, teamNamespace+"/release:bootstrap", pauseImage(t, nil))

	// What the cluster administrator makes before the install: namespaces, the registry
	// Secret in each, the signing key, and a volume both pods share for signatures.
	createNamespace(t, ctx, systemNamespace)
	createNamespace(t, ctx, teamNamespace)
	createRegistrySecret(t, ctx, systemNamespace, registrySecret)
	createRegistrySecret(t, ctx, teamNamespace, registrySecret)
	key, err := signing.GenerateKey("release-controller cluster test", "test@example.com")
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "release-controller-signing-key"},
		Data: map[string][]byte{"private.asc": key}})
	signatures := createSharedVolume(t, ctx, systemNamespace, "release-controller-signatures")

	// The install: README's overlay over config/default, with the components for the registry
	// Secret and the file:// signature store, and two controller replicas.
	overlay := writeOverlay(t, imageRepository, imageTag)
	if out, err := kubectl(ctx, "apply", "--server-side", "-k", overlay); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("kubectl apply --server-side -k:\n%s", out)
	}
	t.Cleanup(func() {
		dump(t, systemNamespace, teamNamespace)
		uninstall(t, overlay)
	})
	for _, d := range []string{"release-controller-controller", "release-controller-api"} {
		eventually(t, 3*time.Minute, "Deployment "+d+" available", func() (bool, string) {
			return deploymentAvailable(ctx, systemNamespace, d)
		})
	}
	checkRunsAsInstalled(t, ctx, rcImage)
	leader := leaderPod(t, ctx)
	t.Logf("leader: %s", leader)

	// The creation Jobs' service account in the stream's namespace, as README says.
	if _, err := kubectl(ctx, "-n", teamNamespace, "create", "serviceaccount", "release-controller-build"); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectl(ctx, "-n", teamNamespace, "create", "rolebinding", "release-controller-build",
		"--clusterrole=release-controller-build", "--serviceaccount="+teamNamespace+":release-controller-build"); err != nil {
		t.Fatal(err)
	}

	// The pipeline's account (the namespace's default: the controller's
	// --default-service-account) may patch the app, as docs/pipelines.md says: the controller
	// promotes as that account.
	if _, err := kubectl(ctx, "-n", teamNamespace, "create", "role", "pipeline", "--verb=get,patch", "--resource=deployments.apps"); err != nil {
		t.Fatal(err)
	}
	if _, err := kubectl(ctx, "-n", teamNamespace, "create", "rolebinding", "pipeline", "--role=pipeline", "--serviceaccount="+teamNamespace+":default"); err != nil {
		t.Fatal(err)
	}

	// The app the pipeline promotes payloads into.
	app := pipelineApp(payloadRepo + ":bootstrap")
	mustCreate(t, ctx, app)
	mustCreate(t, ctx, &v1alpha1.Pipeline{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: "product"},
		Spec: v1alpha1.PipelineSpec{
			AppRef:       v1alpha1.AppReference{APIVersion: "apps/v1", Kind: "Deployment", Name: app.Name, Container: "app"},
			Source:       &v1alpha1.PipelineSource{ReleaseStream: streamName},
			Environments: []v1alpha1.Environment{{Name: "dev", Targets: []v1alpha1.Target{{Namespace: teamNamespace}}}},
		},
	})

	// Payload 1: verified by a pod that reads the payload (payload info) → Accepted.
	info := verification("info", rcImage, "release-controller", "payload", "info", "$(RELEASE_IMAGE_LATEST)")
	stream := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: streamName},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:            "1.0.0-0.cluster",
			PayloadRepository:    payloadRepo,
			PayloadBaseComponent: "operator",
			Components:           []v1alpha1.ComponentSource{{Name: "operator", Image: operator}, {Name: "api", Image: api("a1")}},
			Verification:         []v1alpha1.Verification{info},
			Retention:            v1alpha1.Retention{KeepAccepted: 1},
		},
	}
	created := time.Now()
	mustCreate(t, ctx, stream)
	first := waitVerdict(t, ctx, "", v1alpha1.PhaseAccepted)
	t.Logf("payload %s Accepted %.1fs after its stream was created", first.Name, time.Since(created).Seconds())
	checkPayloadInfoJob(t, ctx, first)
	checkPromoted(t, ctx, app.Name, first)

	// Payload 2: a verification whose image exits 1 → Rejected.
	fails := verification("e2e", pause, "/pause", "-print", "e2e fails", "-exit", "1", "-sleep", "1s")
	updateStream(t, ctx, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Components[1].Image = api("a2")
		s.Spec.Verification = []v1alpha1.Verification{info, fails}
	})
	second := waitVerdict(t, ctx, first.Name, v1alpha1.PhaseRejected)
	if c := meta.FindStatusCondition(second.Status.Conditions, v1alpha1.ConditionPayloadRejected); c == nil || !strings.Contains(c.Message, "e2e") {
		t.Errorf("PayloadRejected of %s = %+v, want it to name e2e", second.Name, c)
	}

	// Payload 3: its verification runs 30 s; the leader's pod is deleted meanwhile. The other
	// replica takes over, and no job runs twice.
	slow := verification("slow", pause, "/pause", "-sleep", "30s")
	updateStream(t, ctx, func(s *v1alpha1.ReleaseStream) {
		s.Spec.Components[1].Image = api("a3")
		s.Spec.Verification = []v1alpha1.Verification{info, slow}
	})
	third := waitPayloadAfter(t, ctx, second.Name)
	slowJob := jobcontract.RunName(third.Name, "slow", 1)
	eventually(t, 3*time.Minute, "the slow verification's pod running", func() (bool, string) {
		pods := jobPods(t, ctx, slowJob)
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d pods of %s", len(pods), slowJob)
	})
	if err := clientset.CoreV1().Pods(systemNamespace).Delete(ctx, leader, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	var next string
	eventually(t, 2*time.Minute, "another replica leading", func() (bool, string) {
		next = leaderPod(t, ctx)
		return next != "" && next != leader, "holder " + next
	})
	t.Logf("leader %s deleted; %s leads %.1fs later", leader, next, time.Since(deleted).Seconds())
	third = waitVerdict(t, ctx, second.Name, v1alpha1.PhaseAccepted)
	checkEachJobOnce(t, ctx, third)

	// Retention keeps one accepted payload: the first goes, and the garbage collector takes its
	// jobs and their pods.
	firstJobs := jobsOf(t, ctx, first.Name)
	eventually(t, 2*time.Minute, "payload "+first.Name+" collected with its jobs and pods", func() (bool, string) {
		var p v1alpha1.ReleasePayload
		err := admin.Get(ctx, client.ObjectKey{Namespace: teamNamespace, Name: first.Name}, &p)
		if !apierrors.IsNotFound(err) {
			return false, "payload still there"
		}
		for _, j := range firstJobs {
			if n := len(jobPods(t, ctx, j)); n > 0 {
				return false, fmt.Sprintf("%d pods of job %s left", n, j)
			}
			var job batchv1.Job
			if err := admin.Get(ctx, client.ObjectKey{Namespace: teamNamespace, Name: j}, &job); !apierrors.IsNotFound(err) {
				return false, "job " + j + " left"
			}
		}
		return true, ""
	})

	checkReleaseLog(t, ctx, first.Name, second.Name, third.Name)
	checkSigned(t, ctx, third, signatures)
	checkPromoted(t, ctx, app.Name, third)
	checkRESTThroughPortForward(t, ctx, second, third)
	reportFigures(t, ctx, first, second, third)
}

// reportFigures logs how long payloads took from creation to verdict with real pods, and the
// kubelet's own pod start latency (kubelet_pod_start_duration_seconds: from the pod's arrival
// at the kubelet to its containers running, image pulls included).
func reportFigures(t *testing.T, ctx context.Context, payloads ...v1alpha1.ReleasePayload) {
	t.Helper()
	for _, p := range payloads {
		for _, c := range []string{v1alpha1.ConditionPayloadAccepted, v1alpha1.ConditionPayloadRejected} {
			if cond := meta.FindStatusCondition(p.Status.Conditions, c); cond != nil && cond.Status == metav1.ConditionTrue {
				t.Logf("FIGURE payload %s: created → %s in %s (whole seconds)", p.Name, c, cond.LastTransitionTime.Sub(p.CreationTimestamp.Time))
			}
		}
	}
	// The API server does not proxy to a node at a loopback address: ask the kubelet itself,
	// as the API server does (its kubelet client certificate).
	raw, err := kubeletMetrics(ctx)
	if err != nil {
		t.Errorf("kubelet metrics: %v", err)
		return
	}
	var sum, count float64
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "kubelet_pod_start_duration_seconds_sum "); ok {
			_, _ = fmt.Sscan(v, &sum)
		}
		if v, ok := strings.CutPrefix(line, "kubelet_pod_start_duration_seconds_count "); ok {
			_, _ = fmt.Sscan(v, &count)
		}
	}
	if count == 0 {
		t.Errorf("the kubelet reports no pod start durations")
		return
	}
	t.Logf("FIGURE pod start (kubelet_pod_start_duration_seconds): %.0f pods, mean %.2fs", count, sum/count)
}

func mustCreate(t *testing.T, ctx context.Context, obj client.Object) {
	t.Helper()
	if err := admin.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// createSharedVolume makes a hostPath PersistentVolume (a folder of the cluster's, owned by the
// image's user) bound to the claim namespace/name, and returns the folder.
func createSharedVolume(t *testing.T, ctx context.Context, namespace, name string) string {
	t.Helper()
	dir := filepath.Join(paths.Dir, "volumes", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			ClaimRef:                      &corev1.ObjectReference{Namespace: namespace, Name: name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr.To(corev1.HostPathDirectory),
			}},
		},
	})
	mustCreate(t, ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To(""),
			VolumeName:       name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	})
	t.Cleanup(func() {
		_ = admin.Delete(context.Background(), &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	return dir
}

// writeOverlay writes README's kustomization over config/default: the image by kustomize's
// images:, the components for the registry Secret and the shared signature store, and two
// replicas of the controller.
func writeOverlay(t *testing.T, repo, tag string) string {
	t.Helper()
	dir := filepath.Join(tmp, "overlay")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	kustomization := fmt.Sprintf(`resources:
- %s
components:
- %s
- %s
images:
- name: release-controller
  newName: %s
  newTag: %s
patches:
- target: {kind: Deployment, name: release-controller-controller}
  patch: |-
    - op: replace
      path: /spec/replicas
      value: 2
`, rel("config/default"), rel("config/components/registry-auth"), rel("config/components/signing-file-store"), repo, tag)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// uninstall deletes what the overlay installed (the CRDs, and with them every stream and
// payload) and the team's namespace, and waits until they are gone.
func uninstall(t *testing.T, overlay string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if out, err := kubectl(ctx, "delete", "-k", overlay, "--ignore-not-found", "--wait=true", "--timeout=150s"); err != nil {
		t.Errorf("kubectl delete -k: %v\n%s", err, out)
	}
	if out, err := kubectl(ctx, "delete", "namespace", teamNamespace, "--ignore-not-found", "--wait=true", "--timeout=120s"); err != nil {
		t.Errorf("deleting namespace %s: %v\n%s", teamNamespace, err, out)
	}
}

// checkRunsAsInstalled checks the pods of both Deployments: admitted under restricted, each as
// its own ServiceAccount, running the pushed image by digest.
func checkRunsAsInstalled(t *testing.T, ctx context.Context, image string) {
	t.Helper()
	var ns corev1.Namespace
	if err := admin.Get(ctx, client.ObjectKey{Name: systemNamespace}, &ns); err != nil {
		t.Fatal(err)
	}
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace %s enforces %q, want restricted", systemNamespace, ns.Labels["pod-security.kubernetes.io/enforce"])
	}
	for component, account := range map[string]string{"controller": "release-controller-controller", "api": "release-controller-api"} {
		pods, err := clientset.CoreV1().Pods(systemNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=" + component})
		if err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase != corev1.PodRunning {
				continue
			}
			running++
			if p.Spec.ServiceAccountName != account {
				t.Errorf("pod %s runs as %s, want %s", p.Name, p.Spec.ServiceAccountName, account)
			}
			_, digest, _ := strings.Cut(image, "@")
			if len(p.Status.ContainerStatuses) == 0 || !strings.HasSuffix(p.Status.ContainerStatuses[0].ImageID, digest) {
				t.Errorf("pod %s runs %+v, want the image %s", p.Name, p.Status.ContainerStatuses, image)
			}
		}
		if want := map[string]int{"controller": 2, "api": 1}[component]; running != want {
			t.Errorf("%d %s pods running, want %d", running, component, want)
		}
	}
}

// leaderPod is the pod holding the controllers' lease ("" when none does).
func leaderPod(t *testing.T, ctx context.Context) string {
	t.Helper()
	var lease coordinationv1.Lease
	if err := admin.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: manager.LeaderElectionID}, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return ""
		}
		t.Fatal(err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	// controller-runtime's identity is <hostname>_<uuid>; the hostname is the pod's name.
	pod, _, _ := strings.Cut(holder, "_")
	return pod
}

// updateStream applies change to the stream. The controller writes the stream's status
// meanwhile, which changes its resourceVersion: a conflict reads the stream again and applies
// change again.
func updateStream(t *testing.T, ctx context.Context, change func(*v1alpha1.ReleaseStream)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s v1alpha1.ReleaseStream
		if err := admin.Get(ctx, client.ObjectKey{Namespace: teamNamespace, Name: streamName}, &s); err != nil {
			return err
		}
		change(&s)
		return admin.Update(ctx, &s)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// payloads lists the stream's payloads, oldest first.
func payloads(t *testing.T, ctx context.Context) []v1alpha1.ReleasePayload {
	t.Helper()
	var list v1alpha1.ReleasePayloadList
	if err := admin.List(ctx, &list, client.InNamespace(teamNamespace)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b v1alpha1.ReleasePayload) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
}

// waitPayloadAfter waits for a payload newer than after ("" for the first) and returns it.
func waitPayloadAfter(t *testing.T, ctx context.Context, after string) v1alpha1.ReleasePayload {
	t.Helper()
	var found v1alpha1.ReleasePayload
	eventually(t, 2*time.Minute, "a payload after "+after, func() (bool, string) {
		for _, p := range payloads(t, ctx) {
			if p.Name > after {
				found = p
				return true, ""
			}
		}
		return false, "none yet"
	})
	return found
}

// waitVerdict waits for the payload after `after` to reach phase, and fails at once on
// another verdict.
func waitVerdict(t *testing.T, ctx context.Context, after string, phase v1alpha1.PayloadPhase) v1alpha1.ReleasePayload {
	t.Helper()
	name := waitPayloadAfter(t, ctx, after).Name
	var p v1alpha1.ReleasePayload
	eventually(t, 4*time.Minute, "payload "+name+" "+string(phase), func() (bool, string) {
		if err := admin.Get(ctx, client.ObjectKey{Namespace: teamNamespace, Name: name}, &p); err != nil {
			return false, err.Error()
		}
		switch p.Status.Phase {
		case phase:
			return true, ""
		case v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed:
			t.Fatalf("payload %s is %s, want %s: %+v", name, p.Status.Phase, phase, p.Status.Conditions)
		}
		return false, fmt.Sprintf("phase %q, conditions %s", p.Status.Phase, conditionSummary(p.Status.Conditions))
	})
	return p
}

func conditionSummary(conditions []metav1.Condition) string {
	var parts []string
	for _, c := range conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Message))
	}
	return strings.Join(parts, "; ")
}

// jobsOf names the Jobs of a payload, by the job contract's label.
func jobsOf(t *testing.T, ctx context.Context, payload string) []string {
	t.Helper()
	var jobs batchv1.JobList
	if err := admin.List(ctx, &jobs, client.InNamespace(teamNamespace), client.MatchingLabels{v1alpha1.LabelPayload: payload}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Name)
	}
	return names
}

// jobPods lists the pods the Job controller made for job in the team's namespace.
func jobPods(t *testing.T, ctx context.Context, job string) []corev1.Pod {
	t.Helper()
	return jobPodsIn(t, ctx, teamNamespace, job)
}

func jobPodsIn(t *testing.T, ctx context.Context, namespace, job string) []corev1.Pod {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

func creationJob(tag string) string { return jobcontract.CreationJobName(tag) }

// checkPayloadInfoJob checks that the creation Job's pod pushed the payload and the info
// verification's pod read it: both succeeded in one pod, and the info pod printed the tag.
func checkPayloadInfoJob(t *testing.T, ctx context.Context, p v1alpha1.ReleasePayload) {
	t.Helper()
	for _, job := range []string{jobcontract.CreationJobName(p.Name), jobcontract.RunName(p.Name, "info", 1)} {
		pods := jobPods(t, ctx, job)
		if len(pods) != 1 || pods[0].Status.Phase != corev1.PodSucceeded {
			t.Errorf("job %s: %d pods, want one that succeeded", job, len(pods))
			continue
		}
		logs, err := clientset.CoreV1().Pods(teamNamespace).GetLogs(pods[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(logs), p.Name) {
			t.Errorf("the log of %s does not name %s:\n%s", job, p.Name, logs)
		}
	}
	if !strings.HasPrefix(p.Status.PayloadImage, p.Spec.PayloadCreationConfig.Repository+"@sha256:") {
		t.Errorf("payload image %q, want %s@sha256:…", p.Status.PayloadImage, p.Spec.PayloadCreationConfig.Repository)
	}
}

// checkEachJobOnce checks that every job of the payload exists once, at attempt 1, and ran in
// exactly one pod.
func checkEachJobOnce(t *testing.T, ctx context.Context, p v1alpha1.ReleasePayload) {
	t.Helper()
	want := []string{
		jobcontract.CreationJobName(p.Name),
		jobcontract.RunName(p.Name, "info", 1),
		jobcontract.RunName(p.Name, "slow", 1),
	}
	got := jobsOf(t, ctx, p.Name)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("jobs of %s = %v, want exactly %v", p.Name, got, want)
	}
	for _, job := range got {
		if pods := jobPods(t, ctx, job); len(pods) != 1 {
			t.Errorf("job %s ran in %d pods, want 1", job, len(pods))
		}
	}
}

// checkReleaseLog checks today's release log: each verdict once.
func checkReleaseLog(t *testing.T, ctx context.Context, accepted1, rejected, accepted2 string) {
	t.Helper()
	want := map[string]string{accepted1: releaselog.TypeRelease, rejected: releaselog.TypeRejected, accepted2: releaselog.TypeRelease}
	eventually(t, time.Minute, "every verdict in the release log", func() (bool, string) {
		var logs v1alpha1.ReleaseLogList
		if err := admin.List(ctx, &logs, client.InNamespace(systemNamespace)); err != nil {
			return false, err.Error()
		}
		seen := map[string]int{}
		for _, day := range logs.Items {
			for _, e := range day.Spec.Entries {
				if want[e.Version] == e.Type {
					seen[e.Version]++
				}
			}
		}
		for version := range want {
			if seen[version] != 1 {
				return false, fmt.Sprintf("entries %v", seen)
			}
		}
		return true, ""
	})
}

// checkSigned waits for the payload's audit and signature and finds the signature in the
// shared store, where the API server serves it.
func checkSigned(t *testing.T, ctx context.Context, p v1alpha1.ReleasePayload, store string) {
	t.Helper()
	eventually(t, 2*time.Minute, "payload "+p.Name+" audited and signed", func() (bool, string) {
		if err := admin.Get(ctx, client.ObjectKeyFromObject(&p), &p); err != nil {
			return false, err.Error()
		}
		audited := meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadAudited)
		signed := meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadSigned)
		return audited && signed, conditionSummary(p.Status.Conditions)
	})
	_, digest, _ := strings.Cut(p.Status.PayloadImage, "@")
	sig := filepath.Join(store, strings.Replace(digest, ":", "=", 1), "signature-1")
	if _, err := os.Stat(sig); err != nil {
		t.Errorf("no signature in the shared store: %v", err)
	}
}

// pipelineApp is the Deployment the pipeline promotes into, running image.
func pipelineApp(image string) *appsv1.Deployment {
	labels := map[string]string{"app": "product"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamNamespace, Name: "product"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ImagePullSecrets:              []corev1.LocalObjectReference{{Name: registrySecret}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers:                    []corev1.Container{{Name: "app", Image: image, SecurityContext: restricted()}},
				},
			},
		},
	}
}

// checkPromoted waits for the pipeline to have rolled p out: the Deployment's pods run the
// payload image (its digest), and the pipeline's status says dev is ready at p's tag, as the
// Deployment controller reported it.
func checkPromoted(t *testing.T, ctx context.Context, app string, p v1alpha1.ReleasePayload) {
	t.Helper()
	_, digest, _ := strings.Cut(p.Status.PayloadImage, "@")
	eventually(t, 3*time.Minute, "the pipeline rolling "+p.Name+" out", func() (bool, string) {
		var pl v1alpha1.Pipeline
		if err := admin.Get(ctx, client.ObjectKey{Namespace: teamNamespace, Name: "product"}, &pl); err != nil {
			return false, err.Error()
		}
		if len(pl.Status.Environments) == 0 {
			return false, "no environment status"
		}
		env := pl.Status.Environments[0]
		if env.Revision != p.Name || !env.Ready {
			return false, fmt.Sprintf("dev at %q ready=%v", env.Revision, env.Ready)
		}
		if ok, status := deploymentAvailable(ctx, teamNamespace, app); !ok {
			return false, status
		}
		pods, err := clientset.CoreV1().Pods(teamNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=product"})
		if err != nil {
			return false, err.Error()
		}
		for _, pod := range pods.Items {
			if pod.DeletionTimestamp != nil || pod.Status.Phase != corev1.PodRunning {
				continue
			}
			image := pod.Spec.Containers[0].Image
			if image == p.Spec.PayloadCreationConfig.Repository+":"+p.Name && len(pod.Status.ContainerStatuses) == 1 &&
				strings.HasSuffix(pod.Status.ContainerStatuses[0].ImageID, digest) && pod.Status.ContainerStatuses[0].Ready {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no ready pod runs %s", p.Status.PayloadImage)
	})
}

// checkRESTThroughPortForward reads /api/v1/releasestream/{s}/latest from the API server's
// Service through kubectl port-forward (the kubelet's streaming path) and the payload's
// signature from /signatures.
func checkRESTThroughPortForward(t *testing.T, ctx context.Context, previous, latest v1alpha1.ReleasePayload) {
	t.Helper()
	pf := exec.CommandContext(ctx, filepath.Join(kubeBin, "kubectl"), "-n", systemNamespace, "port-forward", "service/release-controller-api", "18080:8080")
	pf.Env = append(os.Environ(), "KUBECONFIG="+paths.Kubeconfig())
	out, err := os.Create(filepath.Join(tmp, "port-forward.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	pf.Stdout, pf.Stderr = out, out
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
	base := "http://127.0.0.1:18080"
	var body []byte
	eventually(t, time.Minute, "GET /api/v1/releasestream/"+streamName+"/latest through port-forward", func() (bool, string) {
		resp, err := http.Get(base + "/api/v1/releasestream/" + streamName + "/latest")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK, fmt.Sprintf("%s: %s", resp.Status, body)
	})
	var release struct {
		Name, Phase, PullSpec string
	}
	if err := json.Unmarshal(body, &release); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if release.Name != latest.Name || release.Phase != string(v1alpha1.PhaseAccepted) {
		t.Errorf("latest = %+v, want %s Accepted", release, latest.Name)
	}
	// The changelog from the previous payload: the API server read both payload images with
	// the registry's credentials and found the rebuilt component (its commits cannot be read:
	// git.example.com is nowhere).
	var info struct {
		ChangeLogJSON struct {
			From, To      struct{ Name string }
			UpdatedImages []struct{ Name string }
		} `json:"changeLogJson"`
	}
	eventually(t, time.Minute, "the changelog from "+previous.Name, func() (bool, string) {
		resp, err := http.Get(base + "/api/v1/releasestream/" + streamName + "/release/" + latest.Name + "?from=" + previous.Name)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(body, &info); err != nil {
			return false, fmt.Sprintf("%s: %v", body, err)
		}
		cl := info.ChangeLogJSON
		return cl.From.Name == previous.Name && cl.To.Name == latest.Name && len(cl.UpdatedImages) == 1 && cl.UpdatedImages[0].Name == "api", string(body)
	})

	_, digest, _ := strings.Cut(latest.Status.PayloadImage, "@")
	resp, err := http.Get(base + "/signatures/" + strings.Replace(digest, ":", "=", 1) + "/signature-1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /signatures/…/signature-1 = %s, want 200 OK", resp.Status)
	}
}
