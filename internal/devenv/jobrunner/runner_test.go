//go:build !unit

package jobrunner_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/manager"
)

func TestJobCompletes(t *testing.T) {
	ns := env.Namespace(t)
	runner, _ := startRunner(t, ns, jobrunner.Options{Env: []string{"FROM_RUNNER=yes"}})
	create(t, newJob(ns, "hello", "echo hello $GREETING; echo runner $FROM_RUNNER", corev1.EnvVar{Name: "GREETING", Value: "world"}))

	job := waitJob(t, ns, "hello", finished)
	g := NewWithT(t)
	g.Expect(condition(job, batchv1.JobComplete).Status).To(Equal(corev1.ConditionTrue))
	g.Expect(condition(job, batchv1.JobSuccessCriteriaMet).Status).To(Equal(corev1.ConditionTrue))
	g.Expect(job.Status.Succeeded).To(Equal(int32(1)))
	g.Expect(job.Status.Failed).To(BeZero())
	g.Expect(job.Status.Active).To(BeZero())
	g.Expect(job.Status.StartTime).NotTo(BeNil())
	g.Expect(job.Status.CompletionTime).NotTo(BeNil())
	g.Expect(readFile(t, runner.LogPath(ns, "hello"))).To(Equal("hello world\nrunner yes\n"))
}

func TestFailingJobIsRetriedUpToBackoffLimit(t *testing.T) {
	ns := env.Namespace(t)
	runner, _ := startRunner(t, ns, jobrunner.Options{})
	job := newJob(ns, "fails", "echo attempt; exit 3")
	job.Spec.BackoffLimit = ptr.To[int32](1)
	create(t, job)

	job = waitJob(t, ns, "fails", finished)
	g := NewWithT(t)
	failed := condition(job, batchv1.JobFailed)
	g.Expect(failed.Status).To(Equal(corev1.ConditionTrue))
	g.Expect(failed.Reason).To(Equal(batchv1.JobReasonBackoffLimitExceeded))
	g.Expect(condition(job, batchv1.JobFailureTarget).Status).To(Equal(corev1.ConditionTrue))
	g.Expect(job.Status.Failed).To(Equal(int32(2)))
	g.Expect(job.Status.Succeeded).To(BeZero())
	g.Expect(strings.Count(readFile(t, runner.LogPath(ns, "fails")), "attempt\n")).To(Equal(2))
}

func TestJobThatCannotRunLocallyFails(t *testing.T) {
	ns := env.Namespace(t)
	runner, _ := startRunner(t, ns, jobrunner.Options{})
	create(t, newJob(ns, "value-from", "echo $POD", corev1.EnvVar{Name: "POD", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
	}}))
	noCommand := newJob(ns, "no-command", "")
	noCommand.Spec.Template.Spec.Containers[0].Command = nil
	create(t, noCommand)

	for name, message := range map[string]string{
		"value-from": "env POD uses valueFrom, which the local job runner does not support",
		"no-command": `container "test" has no command`,
	} {
		job := waitJob(t, ns, name, finished)
		failed := condition(job, batchv1.JobFailed)
		if failed.Status != corev1.ConditionTrue || failed.Reason != jobrunner.ReasonNotRunnableLocally || !strings.Contains(failed.Message, message) {
			t.Errorf("%s: Failed condition %+v, want reason %s and a message with %q", name, failed, jobrunner.ReasonNotRunnableLocally, message)
		}
		if log := readFile(t, runner.LogPath(ns, name)); !strings.Contains(log, message) {
			t.Errorf("%s: log %q does not say %q", name, log, message)
		}
	}
}

func TestDeletingRunningJobKillsItsProcesses(t *testing.T) {
	ns := env.Namespace(t)
	startRunner(t, ns, jobrunner.Options{})
	dir := t.TempDir()
	// The sleep is the shell's child: only killing the process group ends it.
	job := newJob(ns, "sleeper", `echo run >> "$DIR/runs"; sleep 300 & echo $! > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"; wait`,
		corev1.EnvVar{Name: "DIR", Value: dir})
	create(t, job)
	pid := waitPid(t, filepath.Join(dir, "pid"))
	waitJob(t, ns, "sleeper", func(g Gomega, job *batchv1.Job) { g.Expect(job.Status.Active).To(Equal(int32(1))) })

	// Reconciles repeat on every change; none may start the process a second time.
	ctx := context.Background()
	for _, v := range []string{"1", "2", "3"} {
		patch := client.MergeFrom(job.DeepCopy())
		job.Annotations = map[string]string{"touched": v}
		if err := env.Client.Patch(ctx, job, patch); err != nil {
			t.Fatalf("annotating job: %v", err)
		}
	}
	if err := env.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatalf("deleting job: %v", err)
	}
	waitGone(t, pid)
	if runs := readFile(t, filepath.Join(dir, "runs")); runs != "run\n" {
		t.Errorf("the process ran %d times, want once", strings.Count(runs, "run\n"))
	}
}

func TestActiveDeadlineFailsJob(t *testing.T) {
	ns := env.Namespace(t)
	runner, _ := startRunner(t, ns, jobrunner.Options{})
	job := newJob(ns, "slow", "sleep 60")
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	create(t, job)

	job = waitJob(t, ns, "slow", finished)
	failed := condition(job, batchv1.JobFailed)
	if failed.Status != corev1.ConditionTrue || failed.Reason != batchv1.JobReasonDeadlineExceeded {
		t.Errorf("Failed condition %+v, want reason %s", failed, batchv1.JobReasonDeadlineExceeded)
	}
	if job.Status.Failed != 1 || job.Status.Active != 0 {
		t.Errorf("failed=%d active=%d, want 1 and 0", job.Status.Failed, job.Status.Active)
	}
	if log := readFile(t, runner.LogPath(ns, "slow")); !strings.Contains(log, "process killed: the job was active longer than its activeDeadlineSeconds") {
		t.Errorf("log %q does not say the process was killed for the deadline", log)
	}
}

func TestProwJobs(t *testing.T) {
	ns := env.Namespace(t)
	runner, _ := startRunner(t, ns, jobrunner.Options{LogURL: func(kind, namespace, name string) string {
		return "http://127.0.0.1:8080/logs/" + kind + "/" + namespace + "/" + name
	}})
	prowJob := func(name string, pod *corev1.PodSpec) *prowv1.ProwJob {
		return &prowv1.ProwJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       prowv1.ProwJobSpec{Type: prowv1.PeriodicJob, Agent: prowv1.KubernetesAgent, Job: "periodic-" + name, PodSpec: pod},
		}
	}
	script := func(s string) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "test", Image: "registry.example.com/tests:latest", Command: []string{"sh", "-c", s}}}}
	}
	create(t, prowJob("pass", script("echo prow $JOB_NAME $JOB_TYPE")))
	create(t, prowJob("fail", script("exit 1")))
	create(t, prowJob("no-pod", nil))

	for name, want := range map[string]struct {
		state       prowv1.ProwJobState
		description string
	}{
		"pass":   {prowv1.SuccessState, "Job succeeded."},
		"fail":   {prowv1.FailureState, "Job failed: exit status 1."},
		"no-pod": {prowv1.ErrorState, "the pod has no containers"},
	} {
		pj := waitProwJob(t, ns, name)
		st := pj.Status
		if st.State != want.state || st.Description != want.description {
			t.Errorf("%s: state %q description %q, want %q and %q", name, st.State, st.Description, want.state, want.description)
		}
		if st.URL != "http://127.0.0.1:8080/logs/ProwJob/"+ns+"/"+name {
			t.Errorf("%s: url %q", name, st.URL)
		}
		if st.StartTime.IsZero() || st.CompletionTime == nil || st.CompletionTime.Before(&st.StartTime) {
			t.Errorf("%s: start %v completion %v", name, st.StartTime, st.CompletionTime)
		}
		if name != "no-pod" && (st.PendingTime == nil || st.PodName != name) {
			t.Errorf("%s: pendingTime %v pod %q, want both set", name, st.PendingTime, st.PodName)
		}
	}
	if log := readFile(t, runner.LogPath(ns, "pass")); log != "prow periodic-pass periodic\n" {
		t.Errorf("log %q", log)
	}
}

func TestRestartedRunnerRunsUnfinishedJobAgain(t *testing.T) {
	ns := env.Namespace(t)
	opts := jobrunner.Options{LogDir: t.TempDir()}
	_, stop := startRunner(t, ns, opts)
	dir := t.TempDir()
	// The first run waits; the second, after the restart, succeeds at once.
	create(t, newJob(ns, "restarted", `echo run >> "$DIR/runs"; [ $(wc -l < "$DIR/runs") -ge 2 ] && exit 0
sleep 300 & echo $! > "$DIR/pid.tmp"; mv "$DIR/pid.tmp" "$DIR/pid"; wait`, corev1.EnvVar{Name: "DIR", Value: dir}))
	pid := waitPid(t, filepath.Join(dir, "pid"))

	stop()
	waitGone(t, pid)
	var job batchv1.Job
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "restarted"}, &job); err != nil {
		t.Fatal(err)
	}
	if len(job.Status.Conditions) != 0 || job.Status.Active != 1 || job.Status.Failed != 0 {
		t.Fatalf("after shutdown the job is %+v, want it left running", job.Status)
	}

	startRunner(t, ns, opts)
	done := waitJob(t, ns, "restarted", finished)
	if condition(done, batchv1.JobComplete).Status != corev1.ConditionTrue || !done.Status.StartTime.Equal(job.Status.StartTime) {
		t.Errorf("after the restart the job is %+v, want it complete with its first start time", done.Status)
	}
	if runs := readFile(t, filepath.Join(dir, "runs")); runs != strings.Repeat("run\n", 2) {
		t.Errorf("runs %q, want two runs", runs)
	}
}

func TestSuspendedJobWaitsForResume(t *testing.T) {
	ns := env.Namespace(t)
	runner, _ := startRunner(t, ns, jobrunner.Options{})
	job := newJob(ns, "suspended", "echo ran")
	job.Spec.Suspend = ptr.To(true)
	create(t, job)

	job = waitJob(t, ns, "suspended", func(g Gomega, job *batchv1.Job) {
		g.Expect(condition(job, batchv1.JobSuspended).Status).To(Equal(corev1.ConditionTrue))
	})
	if job.Status.StartTime != nil || job.Status.Active != 0 || condition(job, batchv1.JobSuspended).Reason != "JobSuspended" {
		t.Errorf("suspended job status %+v", job.Status)
	}
	if _, err := os.Stat(runner.LogPath(ns, "suspended")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the suspended job has a log (%v): it ran", err)
	}

	patch := client.MergeFrom(job.DeepCopy())
	job.Spec.Suspend = ptr.To(false)
	if err := env.Client.Patch(context.Background(), job, patch); err != nil {
		t.Fatalf("resuming: %v", err)
	}
	job = waitJob(t, ns, "suspended", finished)
	if condition(job, batchv1.JobComplete).Status != corev1.ConditionTrue {
		t.Errorf("resumed job conditions %+v", job.Status.Conditions)
	}
	if c := condition(job, batchv1.JobSuspended); c.Status != corev1.ConditionFalse || c.Reason != "JobResumed" {
		t.Errorf("Suspended condition %+v, want False JobResumed", c)
	}
	if log := readFile(t, runner.LogPath(ns, "suspended")); log != "ran\n" {
		t.Errorf("log %q", log)
	}
}

func TestReleaseControllerCommandRunsExecutable(t *testing.T) {
	ns := env.Namespace(t)
	exe := filepath.Join(t.TempDir(), "fake-release-controller")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho \"release-controller called with: $*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runner, _ := startRunner(t, ns, jobrunner.Options{Executable: exe})
	job := newJob(ns, "build", "")
	c := &job.Spec.Template.Spec.Containers[0]
	c.Command = []string{"release-controller", "payload", "build"}
	// $(NAME) is expanded as Kubernetes does; $$ escapes it.
	c.Args = []string{"--tag=$(TAG)", "$$(TAG)"}
	c.Env = []corev1.EnvVar{{Name: "TAG", Value: "4.15.0"}}
	create(t, job)

	job = waitJob(t, ns, "build", finished)
	if condition(job, batchv1.JobComplete).Status != corev1.ConditionTrue {
		t.Errorf("conditions %+v", job.Status.Conditions)
	}
	if log := readFile(t, runner.LogPath(ns, "build")); log != "release-controller called with: payload build --tag=4.15.0 $(TAG)\n" {
		t.Errorf("log %q", log)
	}
}

func TestMaxParallelRunsJobsInTurn(t *testing.T) {
	ns := env.Namespace(t)
	startRunner(t, ns, jobrunner.Options{MaxParallel: 1})
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		create(t, newJob(ns, n, `echo start $N >> "$DIR/order"; sleep 0.2; echo end $N >> "$DIR/order"`,
			corev1.EnvVar{Name: "DIR", Value: dir}, corev1.EnvVar{Name: "N", Value: n}))
	}
	waitJob(t, ns, "a", finished)
	waitJob(t, ns, "b", finished)
	lines := strings.Fields(strings.ReplaceAll(readFile(t, filepath.Join(dir, "order")), " ", "-"))
	// With one slot, a job ends before the other starts.
	if len(lines) != 4 || lines[0] != "start-"+lines[1][len("end-"):] || lines[2] != "start-"+lines[3][len("end-"):] ||
		!strings.HasPrefix(lines[1], "end-") || !strings.HasPrefix(lines[3], "end-") {
		t.Errorf("order %q, want one job after the other", lines)
	}
}

// TestBuildsDoNotWaitBehindVerifications: with one slot held by a verification that waits, a
// creation job (a payload build) still runs: builds have slots of their own.
func TestBuildsDoNotWaitBehindVerifications(t *testing.T) {
	ns := env.Namespace(t)
	startRunner(t, ns, jobrunner.Options{MaxParallel: 1})
	dir := t.TempDir()
	waiting := newJob(ns, "verify", `while [ ! -e "$DIR/open" ]; do sleep 0.1; done`, corev1.EnvVar{Name: "DIR", Value: dir})
	waiting.Labels = map[string]string{v1alpha1.LabelJobType: v1alpha1.JobTypeVerification}
	create(t, waiting)
	build := newJob(ns, "build", `echo built`)
	build.Labels = map[string]string{v1alpha1.LabelJobType: v1alpha1.JobTypeCreation}
	create(t, build)
	waitJob(t, ns, "build", finished)
	if err := os.WriteFile(filepath.Join(dir, "open"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitJob(t, ns, "verify", finished)
}

// TestServiceAccountTokens: with ServiceAccountAPIServer, a pod naming a service account runs
// with a kubeconfig holding a token of that account, as a kubelet mounts it; other pods, and
// pods that opt out of the token, keep the runner's environment.
func TestServiceAccountTokens(t *testing.T) {
	ns := env.Namespace(t)
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "builder"}})
	runner, _ := startRunner(t, ns, jobrunner.Options{Env: []string{"KUBECONFIG=/from/the/runner"}, ServiceAccountAPIServer: env.Config})
	// The token's line, and the kubeconfig's path, so the test can see it is gone afterwards.
	show := `echo "kubeconfig $KUBECONFIG"; if [ -f "$KUBECONFIG" ]; then sed -n 's/^ *token: */token /p' "$KUBECONFIG"; fi`
	withToken := newJob(ns, "with-token", show)
	withToken.Spec.Template.Spec.ServiceAccountName = "builder"
	optedOut := newJob(ns, "opted-out", show)
	optedOut.Spec.Template.Spec.ServiceAccountName = "builder"
	optedOut.Spec.Template.Spec.AutomountServiceAccountToken = ptr.To(false)
	unknown := newJob(ns, "unknown-account", show)
	unknown.Spec.Template.Spec.ServiceAccountName = "nobody"
	unknown.Spec.BackoffLimit = ptr.To[int32](0)
	for _, job := range []*batchv1.Job{withToken, optedOut, unknown, newJob(ns, "no-account", show)} {
		create(t, job)
	}

	for _, name := range []string{"opted-out", "no-account"} {
		waitJob(t, ns, name, finished)
		if log := readFile(t, runner.LogPath(ns, name)); log != "kubeconfig /from/the/runner\n" {
			t.Errorf("%s: log %q, want the runner's KUBECONFIG and no token", name, log)
		}
	}
	job := waitJob(t, ns, "unknown-account", finished)
	if failed := condition(job, batchv1.JobFailed); failed.Status != corev1.ConditionTrue {
		t.Errorf("a pod of a missing service account ran: %+v", job.Status.Conditions)
	}
	if log := readFile(t, runner.LogPath(ns, "unknown-account")); !strings.Contains(log, "requesting a token of service account "+ns+"/nobody") {
		t.Errorf("unknown-account: log %q does not say why it failed", log)
	}

	job = waitJob(t, ns, "with-token", finished)
	if c := condition(job, batchv1.JobComplete); c.Status != corev1.ConditionTrue {
		t.Fatalf("with-token: %+v", job.Status.Conditions)
	}
	var kubeconfig, token string
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, runner.LogPath(ns, "with-token"))), "\n") {
		if v, ok := strings.CutPrefix(line, "kubeconfig "); ok {
			kubeconfig = v
		}
		if v, ok := strings.CutPrefix(line, "token "); ok {
			token = v
		}
	}
	if token == "" || kubeconfig == "" || kubeconfig == "/from/the/runner" {
		t.Fatalf("with-token: kubeconfig %q, token %q", kubeconfig, token)
	}
	if _, err := os.Stat(filepath.Dir(kubeconfig)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the token's folder %s outlived the run: %v", filepath.Dir(kubeconfig), err)
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := env.Client.Create(context.Background(), review); err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":builder"; !review.Status.Authenticated || review.Status.User.Username != want {
		t.Errorf("the pod's token is %+v, want %s's", review.Status, want)
	}
}

// TestStartRunsJobsAlone runs the runner with Start, as the tests of separate controller
// processes do: it runs a Job, and stop ends it cleanly.
func TestStartRunsJobsAlone(t *testing.T) {
	ns := env.Namespace(t)
	logs := t.TempDir()
	stop, err := jobrunner.Start(env.Config, manager.NewScheme(), jobrunner.Options{LogDir: logs})
	if err != nil {
		t.Fatal(err)
	}
	create(t, newJob(ns, "alone", "echo alone"))
	job := waitJob(t, ns, "alone", finished)
	if condition(job, batchv1.JobComplete).Status != corev1.ConditionTrue {
		t.Errorf("the Job did not complete: %+v", job.Status)
	}
	if got := readFile(t, filepath.Join(logs, ns, "alone.log")); got != "alone\n" {
		t.Errorf("the Job's log holds %q", got)
	}
	if err := stop(); err != nil {
		t.Errorf("stopping the runner: %v", err)
	}
}
