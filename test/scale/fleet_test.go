//go:build !unit

package scale

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/verdict"
)

// verification is the one blocking verification every stream runs.
const verification = "check"

// fleet is a namespace of streams, each following two components by tag (a base image all
// share and an app image of its own), with one trivial blocking verification, and the
// namespace their release log goes to.
type fleet struct {
	ns, logNS string
	base      string // the shared component's image, by tag
	streams   []string
	// verifications are the blocking verifications of every stream: one, "check", unless
	// newFleetWith asked for more.
	verifications []string
	// perStream is how many payloads each stream makes: one, unless a test asks for more;
	// publishNext makes the others.
	perStream int
	// rejects, when set, says which streams (by index) fail their first verification: every
	// payload of theirs is to be rejected, every other one accepted.
	rejects func(i int) bool
	// rejected are the streams rejects chose; builds counts each stream's app builds.
	rejected map[string]bool
	builds   map[string]int
}

// newFleet creates the namespaces and the shared component. When the test ends, after the
// controllers it started later have stopped, the fleet's streams, payloads and jobs are
// deleted, so that later tests' controllers do not keep importing them.
func newFleet(t testing.TB) *fleet {
	t.Helper()
	return newFleetWith(t, 1)
}

// newFleetWith is newFleet whose streams run jobs blocking verifications each: check,
// check-2, check-3 ….
func newFleetWith(t testing.TB, jobs int) *fleet {
	t.Helper()
	f := &fleet{ns: env.Namespace(t), logNS: env.Namespace(t), verifications: []string{verification}, perStream: 1,
		rejected: map[string]bool{}, builds: map[string]int{}}
	for i := 2; i <= jobs; i++ {
		f.verifications = append(f.verifications, fmt.Sprintf("%s-%d", verification, i))
	}
	f.base = publish(t, f.ns, "base")
	t.Cleanup(func() { f.deleteAll(t) })
	return f
}

func repo(ns, image string) string { return fmt.Sprintf("%s/%s/%s", reg.Addr(), ns, image) }

// publish pushes a new build of a component (a small random image) as <ns>/<image>:latest and
// returns that reference.
func publish(t testing.TB, ns, image string) string {
	t.Helper()
	ref := repo(ns, image) + ":latest"
	pushComponent(t, ref, "https://git.example.com/"+image, "r1")
	return ref
}

// pushComponent pushes a small random linux/amd64 image labelled with its source and revision
// as ref, and returns it by digest.
func pushComponent(t testing.TB, ref, source, revision string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Labels = map[string]string{releaseimage.LabelSource: source, releaseimage.LabelRevision: revision}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	parsed, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(parsed, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Context().Digest(digest.String()).String()
}

// runsFile collects one line per verification process started: the payload's tag.
func (f *fleet) runsFile() string { return filepath.Join(workDir, "runs-"+f.ns) }

// gateFile, once it exists, lets gated verifications finish.
func (f *fleet) gateFile() string { return filepath.Join(workDir, "open-"+f.ns) }

func (f *fleet) openGate(t testing.TB) {
	t.Helper()
	if err := os.WriteFile(f.gateFile(), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// addStream creates stream name with its own app component; the i-th stream has the tag
// prefix 1.<i>.0-0.scale, so tags (payload names) never collide within the namespace. A gated
// stream's verification waits for openGate before it passes.
func (f *fleet) addStream(t testing.TB, i int, name string, gated bool) {
	t.Helper()
	f.createStream(t, f.newStream(t, i, name, gated))
}

// newStream publishes the stream's app component and returns the stream, not created yet.
// Every verification records its run and passes, but the first of a stream rejects chose,
// which fails.
func (f *fleet) newStream(t testing.TB, i int, name string, gated bool) *v1alpha1.ReleaseStream {
	t.Helper()
	app := publish(t, f.ns, name+"-app")
	f.builds[name] = 1
	f.rejected[name] = f.rejects != nil && f.rejects(i)
	var verifications []v1alpha1.Verification
	for n, v := range f.verifications {
		body := `echo "$RELEASE_TAG ` + v + `" >> "` + f.runsFile() + `"; `
		if gated {
			body += `while [ ! -e "` + f.gateFile() + `" ]; do sleep 0.5; done; `
		}
		if n == 0 && f.rejected[name] {
			body += `echo "failing $RELEASE_TAG"; exit 1`
		} else {
			body += `echo "verified $RELEASE_TAG"`
		}
		verifications = append(verifications, v1alpha1.Verification{Name: v, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "test", Image: "tests", Command: []string{"sh", "-c", body}}},
			}},
		}}}})
	}
	return &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:         fmt.Sprintf("1.%d.0-0.scale", i),
			PayloadRepository: repo(f.ns, name+"-release"),
			Components: []v1alpha1.ComponentSource{
				{Name: "base", Image: f.base},
				{Name: "app", Image: app},
			},
			PublishTags:  []string{"latest"},
			Verification: verifications,
			// Every payload the stream makes stays, to be checked.
			Retention: v1alpha1.Retention{KeepAccepted: int32(f.perStream), KeepRejected: ptr.To(int32(f.perStream))},
		},
	}
}

// expected is the verdict every payload of stream name is to get.
func (f *fleet) expected(name string) v1alpha1.PayloadPhase {
	if f.rejected[name] {
		return v1alpha1.PhaseRejected
	}
	return v1alpha1.PhaseAccepted
}

// decided reports whether every payload in list has its verdict.
func decided(list []v1alpha1.ReleasePayload) bool {
	return !slices.ContainsFunc(list, func(p v1alpha1.ReleasePayload) bool { return !verdict.IsVerdict(p.Status.Phase) })
}

// publishNext publishes a new build of the app component of every stream whose payloads all
// have their verdict, one made of each build, and that has made fewer than perStream: its
// next import makes its next payload. Nothing is published while a payload waits for its
// verdict, so every build makes one payload.
func (f *fleet) publishNext(t testing.TB, s *snapshot) {
	t.Helper()
	for _, name := range f.streams {
		list := s.payloads[name]
		if len(list) == f.builds[name] && len(list) < f.perStream && decided(list) {
			publish(t, f.ns, name+"-app")
			f.builds[name]++
		}
	}
}

// unfinished lists the streams of the fleet that have not made their perStream payloads yet,
// or whose payloads do not all have their verdict.
func (f *fleet) unfinished(s *snapshot) []string {
	var out []string
	for _, name := range f.streams {
		if list := s.payloads[name]; len(list) < f.perStream || !decided(list) {
			out = append(out, name)
		}
	}
	return out
}

func (f *fleet) createStream(t testing.TB, s *v1alpha1.ReleaseStream) {
	t.Helper()
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating stream %s: %v", s.Name, err)
	}
	f.streams = append(f.streams, s.Name)
}

// addStreams adds n streams s-000 …: their components are published first, then the streams
// are created at once, so the controller receives them as a burst.
func (f *fleet) addStreams(t testing.TB, n int, gated func(i int) bool) {
	t.Helper()
	streams := make([]*v1alpha1.ReleaseStream, n)
	for i := range n {
		streams[i] = f.newStream(t, i, fmt.Sprintf("s-%03d", i), gated(i))
	}
	for _, s := range streams {
		f.createStream(t, s)
	}
}

func (f *fleet) deleteAll(t testing.TB) { deleteReleaseObjects(t, f.ns) }

// deleteReleaseObjects deletes the streams, payloads, jobs and pipelines of namespace ns, so
// that the controllers of later tests (each with a release log of its own) do not take them up.
func deleteReleaseObjects(t testing.TB, ns string) {
	ctx := context.Background()
	background := client.PropagationPolicy(metav1.DeletePropagationBackground)
	for _, obj := range []client.Object{&v1alpha1.ReleaseStream{}, &v1alpha1.ReleasePayload{}, &batchv1.Job{}, &v1alpha1.Pipeline{}} {
		if err := env.Client.DeleteAllOf(ctx, obj, client.InNamespace(ns), background); err != nil {
			t.Logf("cleaning up %T in %s: %v", obj, ns, err)
		}
	}
}

// snapshot is the state of a fleet's streams, payloads and jobs at one moment.
type snapshot struct {
	streams  map[string]*v1alpha1.ReleaseStream
	payloads map[string][]v1alpha1.ReleasePayload // by stream, oldest first
	jobs     []batchv1.Job
	// withJobs says the jobs were listed (snapshot, not progress).
	withJobs bool
}

func (f *fleet) snapshot(ctx context.Context) (*snapshot, error) {
	s, err := f.progress(ctx)
	if err != nil {
		return nil, err
	}
	var jobs batchv1.JobList
	if err := env.Client.List(ctx, &jobs, client.InNamespace(f.ns)); err != nil {
		return nil, err
	}
	s.jobs, s.withJobs = jobs.Items, true
	return s, nil
}

// progress is snapshot without the jobs: cheaper to poll (a run of 1,000 payloads has
// 11,000 jobs).
func (f *fleet) progress(ctx context.Context) (*snapshot, error) {
	var streams v1alpha1.ReleaseStreamList
	if err := env.Client.List(ctx, &streams, client.InNamespace(f.ns)); err != nil {
		return nil, err
	}
	var payloads v1alpha1.ReleasePayloadList
	if err := env.Client.List(ctx, &payloads, client.InNamespace(f.ns)); err != nil {
		return nil, err
	}
	s := &snapshot{streams: map[string]*v1alpha1.ReleaseStream{}, payloads: map[string][]v1alpha1.ReleasePayload{}}
	for i := range streams.Items {
		s.streams[streams.Items[i].Name] = &streams.Items[i]
	}
	for _, p := range payloads.Items {
		s.payloads[p.Spec.PayloadCoordinates.Stream] = append(s.payloads[p.Spec.PayloadCoordinates.Stream], p)
	}
	for _, list := range s.payloads {
		// A stream's tags end with their creation time.
		slices.SortFunc(list, func(a, b v1alpha1.ReleasePayload) int { return strings.Compare(a.Name, b.Name) })
	}
	return s, nil
}

// phases counts the payloads by phase ("" for a payload without one yet).
func (s *snapshot) phases() map[v1alpha1.PayloadPhase]int {
	counts := map[v1alpha1.PayloadPhase]int{}
	for _, list := range s.payloads {
		for _, p := range list {
			counts[p.Status.Phase]++
		}
	}
	return counts
}

func (s *snapshot) count(phases ...v1alpha1.PayloadPhase) int {
	n := 0
	for ph, c := range s.phases() {
		if slices.Contains(phases, ph) {
			n += c
		}
	}
	return n
}

// created counts the payloads whose image was built.
func (s *snapshot) created() int {
	n := 0
	for _, list := range s.payloads {
		for _, p := range list {
			if meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadCreated) {
				n++
			}
		}
	}
	return n
}

// unfinishedJobs counts the jobs that have neither completed nor failed.
func (s *snapshot) unfinishedJobs() int {
	n := 0
	for _, j := range s.jobs {
		done := false
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				done = true
			}
		}
		if !done {
			n++
		}
	}
	return n
}

// withoutAccepted lists the streams among names that have no accepted payload.
func (s *snapshot) withoutAccepted(names []string) []string {
	var missing []string
	for _, name := range names {
		if !slices.ContainsFunc(s.payloads[name], func(p v1alpha1.ReleasePayload) bool { return p.Status.Phase == v1alpha1.PhaseAccepted }) {
			missing = append(missing, name)
		}
	}
	return missing
}

// summary is one line: payloads by phase, how many were built, and jobs in flight.
func (s *snapshot) summary() string {
	counts := s.phases()
	keys := make([]string, 0, len(counts))
	for ph := range counts {
		keys = append(keys, string(ph))
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		label := k
		if label == "" {
			label = "(no phase yet)"
		}
		parts = append(parts, fmt.Sprintf("%s %d", label, counts[v1alpha1.PayloadPhase(k)]))
	}
	out := fmt.Sprintf("%d streams, payloads: [%s], built %d", len(s.streams), strings.Join(parts, ", "), s.created())
	if s.withJobs {
		out += fmt.Sprintf("; jobs: %d, unfinished %d", len(s.jobs), s.unfinishedJobs())
	}
	return out
}

// describe tells, for at most limit of the streams named, what their status and payloads say.
func (s *snapshot) describe(names []string, limit int) string {
	var b strings.Builder
	for i, name := range names {
		if i == limit {
			fmt.Fprintf(&b, "  … and %d more\n", len(names)-limit)
			break
		}
		st := s.streams[name]
		if st == nil {
			fmt.Fprintf(&b, "  stream %s: not found\n", name)
			continue
		}
		fmt.Fprintf(&b, "  stream %s: latestPayload %q latestAccepted %q components %s conditions %s\n",
			name, st.Status.LatestPayload, st.Status.LatestAccepted, componentsOf(st), conditionsOf(st.Status.Conditions))
		if len(s.payloads[name]) == 0 {
			fmt.Fprintf(&b, "    no payload\n")
		}
		for _, p := range s.payloads[name] {
			fmt.Fprintf(&b, "    payload %s: phase %q creation %s/%q image %q conditions %s\n", p.Name, p.Status.Phase,
				p.Status.ReleaseCreationJobResult.Status, p.Status.ReleaseCreationJobResult.Message, p.Status.PayloadImage, conditionsOf(p.Status.Conditions))
			for _, v := range p.Status.Verifications {
				var runs []string
				for _, r := range v.Runs {
					runs = append(runs, fmt.Sprintf("%s=%s", r.Name, r.State))
				}
				fmt.Fprintf(&b, "      verification %s: %s runs %v\n", v.Name, v.State, runs)
			}
			for _, j := range s.jobs {
				if j.Labels[v1alpha1.LabelPayload] == p.Name {
					fmt.Fprintf(&b, "      job %s: active %d succeeded %d failed %d conditions %v\n", j.Name, j.Status.Active, j.Status.Succeeded, j.Status.Failed, jobConditionsOf(j))
				}
			}
		}
	}
	return b.String()
}

func componentsOf(s *v1alpha1.ReleaseStream) string {
	var parts []string
	for _, c := range s.Status.Components {
		state := "resolved"
		if c.Error != "" {
			state = "error: " + c.Error
		} else if c.Image == "" {
			state = "unresolved"
		}
		parts = append(parts, c.Name+" "+state)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func conditionsOf(conditions []metav1.Condition) string {
	var parts []string
	for _, c := range conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func jobConditionsOf(j batchv1.Job) []string {
	var parts []string
	for _, c := range j.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	return parts
}

// waitFor polls cond every half second until it holds, failing the test with cond's last
// report when timeout passes first, or at once with its log when one of the replicas that
// must keep running has exited. The timeout is a generous bound, not a measurement.
func waitFor(t testing.TB, what string, timeout time.Duration, running []*replica, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		for _, r := range running {
			if err := r.check(); err != nil {
				t.Fatalf("waiting until %s: %v\nlast observed:\n%s", what, err, last)
			}
		}
		ok, report, err := cond(ctx)
		if err != nil {
			report = fmt.Sprintf("error: %v\n%s", err, report)
		}
		if ok && err == nil {
			return
		}
		last = report
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s; last observed:\n%s", what, timeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitAllAccepted waits until every stream named has an accepted payload.
func (f *fleet) waitAllAccepted(t testing.TB, names []string, timeout time.Duration, running []*replica) *snapshot {
	t.Helper()
	var snap *snapshot
	waitFor(t, fmt.Sprintf("every one of %d streams has an accepted payload", len(names)), timeout, running, func(ctx context.Context) (bool, string, error) {
		s, err := f.snapshot(ctx)
		if err != nil {
			return false, "", err
		}
		snap = s
		missing := s.withoutAccepted(names)
		return len(missing) == 0, fmt.Sprintf("%s\n%d streams without an accepted payload:\n%s", s.summary(), len(missing), s.describe(missing, 10)), nil
	})
	return snap
}

// checkVerdicts checks that every stream named has exactly its perStream payloads, each built
// and with the verdict the input decided (accepted, or rejected on a stream rejects chose): one
// payload per build of its components, so another payload would be a duplicate.
func (f *fleet) checkVerdicts(t testing.TB, s *snapshot, names []string) {
	t.Helper()
	var wrong []string
	for _, name := range names {
		list := s.payloads[name]
		if len(list) != f.perStream || slices.ContainsFunc(list, func(p v1alpha1.ReleasePayload) bool {
			return p.Status.Phase != f.expected(name) || p.Status.PayloadImage == ""
		}) {
			wrong = append(wrong, name)
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d streams do not have exactly %d built payloads with their expected verdict (Rejected where the stream's first verification fails, else Accepted):\n%s",
			len(wrong), f.perStream, s.describe(wrong, 10))
	}
	var stuck []string
	for name, list := range s.payloads {
		for _, p := range list {
			if p.Status.Phase == "" || p.Status.Phase == v1alpha1.PhasePending || p.Status.Phase == v1alpha1.PhaseReady {
				stuck = append(stuck, name)
				break
			}
		}
	}
	if len(stuck) > 0 {
		sort.Strings(stuck)
		t.Errorf("%d streams have payloads stuck without a verdict:\n%s", len(stuck), s.describe(stuck, 10))
	}
}

// checkJobsOncePerRun checks that every payload has one creation job and one job of each
// verification, attempt 1 (a verification passes or fails at once and has no retries), and
// that every verification process ran once.
func (f *fleet) checkJobsOncePerRun(t testing.TB, s *snapshot) {
	t.Helper()
	type run struct{ payload, jobType, verify, attempt string }
	jobs := map[run][]string{}
	for _, j := range s.jobs {
		r := run{j.Labels[v1alpha1.LabelPayload], j.Labels[v1alpha1.LabelJobType], j.Labels[v1alpha1.LabelVerify], j.Annotations[v1alpha1.AnnotationAttempt]}
		jobs[r] = append(jobs[r], j.Name)
	}
	for r, names := range jobs {
		if len(names) > 1 {
			t.Errorf("payload %s: %d jobs for the same run (%s %s attempt %s): %v", r.payload, len(names), r.jobType, r.verify, r.attempt, names)
		}
	}
	for _, list := range s.payloads {
		for _, p := range list {
			var creation, verify []string
			for r, names := range jobs {
				if r.payload != p.Name {
					continue
				}
				switch r.jobType {
				case v1alpha1.JobTypeCreation:
					creation = append(creation, names...)
				case v1alpha1.JobTypeVerification:
					verify = append(verify, fmt.Sprintf("%s attempt %s: %v", r.verify, r.attempt, names))
				}
			}
			if len(creation) != 1 {
				t.Errorf("payload %s has %d creation jobs, want 1: %v", p.Name, len(creation), creation)
			}
			var want []string
			for _, v := range f.verifications {
				want = append(want, v+" attempt 1")
			}
			var got []string
			for _, v := range verify {
				got = append(got, v[:strings.Index(v, ":")])
			}
			sort.Strings(want)
			sort.Strings(got)
			if !slices.Equal(got, want) {
				t.Errorf("payload %s has verification jobs %v, want one each: %v", p.Name, verify, want)
			}
			for _, v := range p.Status.Verifications {
				if len(v.Runs) != 1 {
					t.Errorf("payload %s records %d runs of %s, want 1: %+v", p.Name, len(v.Runs), v.Name, v.Runs)
				}
			}
		}
	}
	data, err := os.ReadFile(f.runsFile())
	if err != nil {
		t.Errorf("reading the verification processes' record: %v", err)
		return
	}
	started := map[string]int{}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		started[line]++
	}
	for _, list := range s.payloads {
		for _, p := range list {
			for _, v := range f.verifications {
				if n := started[p.Name+" "+v]; n != 1 {
					t.Errorf("verification %s of payload %s ran %d times, want once", v, p.Name, n)
				}
			}
		}
	}
}

// waitReleaseLogged waits until the release log holds the verdict of every payload of the
// fleet (a release entry for an accepted payload, a rejected one for a rejected payload), then
// checks that none is logged twice and nothing else was logged.
func (f *fleet) waitReleaseLogged(t testing.TB, s *snapshot, running []*replica) {
	t.Helper()
	want := map[string]string{} // the entry type of each payload's verdict, by tag
	for _, list := range s.payloads {
		for _, p := range list {
			switch p.Status.Phase {
			case v1alpha1.PhaseAccepted:
				want[p.Name] = releaselog.TypeRelease
			case v1alpha1.PhaseRejected:
				want[p.Name] = releaselog.TypeRejected
			}
		}
	}
	var entries map[string]int
	var others []string
	waitFor(t, fmt.Sprintf("the release log holds the %d verdicts", len(want)), 2*time.Minute, running, func(ctx context.Context) (bool, string, error) {
		var logs v1alpha1.ReleaseLogList
		if err := env.Client.List(ctx, &logs, client.InNamespace(f.logNS)); err != nil {
			return false, "", err
		}
		entries, others = map[string]int{}, nil
		for _, l := range logs.Items {
			for _, e := range l.Spec.Entries {
				if typ, ok := want[e.Version]; ok && e.Type == typ {
					entries[e.Version]++
				} else {
					others = append(others, fmt.Sprintf("%s %s (%s)", e.Type, e.Version, e.Message))
				}
			}
		}
		var missing []string
		for tag := range want {
			if entries[tag] == 0 {
				missing = append(missing, tag)
			}
		}
		sort.Strings(missing)
		return len(missing) == 0, fmt.Sprintf("%d of %d verdicts not in the release log, e.g. %v", len(missing), len(want), missing[:min(len(missing), 10)]), nil
	})
	for tag, n := range entries {
		if n != 1 {
			t.Errorf("the release log holds %d %s entries for %s, want 1", n, want[tag], tag)
		}
	}
	if len(others) > 0 {
		t.Errorf("the release log holds unexpected entries: %v", others)
	}
}

// leaseHolder returns the holder of the replicas' lease, "" when there is none.
func leaseHolder(ctx context.Context) (string, error) {
	var lease coordinationv1.Lease
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: leaseNamespace, Name: manager.LeaderElectionID}, &lease); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// leaders returns the replicas that report holding the lease.
func leaders(ctx context.Context, replicas ...*replica) ([]*replica, error) {
	var out []*replica
	for _, r := range replicas {
		lead, err := r.isLeader(ctx)
		if err != nil {
			return nil, fmt.Errorf("controller %s: %w", r.name, err)
		}
		if lead {
			out = append(out, r)
		}
	}
	return out, nil
}

// statusWrites reads the API server's count of write requests to releasestreams/status.
func statusWrites(ctx context.Context) (float64, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return 0, err
	}
	data, err := dc.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	total := 0.0
	for _, verb := range []string{"PATCH", "PUT", "APPLY"} {
		v, _ := metricValue(string(data), "apiserver_request_total", map[string]string{
			"group": v1alpha1.GroupVersion.Group, "resource": "releasestreams", "subresource": "status", "verb": verb,
		})
		total += v
	}
	return total, nil
}
