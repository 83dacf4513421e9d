//go:build !unit

package scale

// The fault suite (issue 23 §1): the shipped controller runs a fleet of streams with payloads
// in flight while a real part around it breaks (the API server process killed, etcd killed,
// the API server's priority and fairness rejecting it, the controller itself killed), is
// restored, and every payload must reach its verdict with nothing lost and nothing done twice.
//
// `go test` runs each case at a small scale; `make faults` at the (FAULTS_STREAMS=100
// FAULTS_JOBS=10 FAULTS_KILLS=10 FAULTS_KILL_PAYLOADS=1000). Each case prints one line starting
// with "FAULT" with its figures.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/audit"
	"github.com/release-controller/release-controller/internal/devenv/registry"
	"github.com/release-controller/release-controller/internal/signing"
	"github.com/release-controller/release-controller/internal/signing/cosign"
	"github.com/release-controller/release-controller/internal/testenv"
)

// controllerUser is the fault tests' controller's user: the API server audits its requests
// (auditPolicy), and a FlowSchema can single it out.
const controllerUser = "faults-controller"

// auditPolicy records every request of controllerUser, nothing else.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + controllerUser + `"]
- level: None
`

// auditLog is the API server's audit log (TestMain).
var auditLog string

// faultScale is a case's size: FAULTS_STREAMS streams with FAULTS_JOBS verifications each.
type faultScale struct{ streams, jobs, kills int }

func scaleOf(t testing.TB) faultScale {
	t.Helper()
	return faultScale{streams: envInt(t, "FAULTS_STREAMS", 20), jobs: envInt(t, "FAULTS_JOBS", 3), kills: envInt(t, "FAULTS_KILLS", 3)}
}

func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// faultController is the shipped controller as a Deployment runs it: when it exits (it does
// when it loses its leader lease), keepRunning starts it again, as the kubelet would.
type faultController struct {
	t        testing.TB
	logNS    string
	kc       string   // the kubeconfig of controllerUser
	extra    []string // more flags
	r        *replica
	restarts []string // how each earlier process ended
	// earlierLogs are the logs of the earlier processes.
	earlierLogs []string
}

// logMark is a place in the controller's logs: the process, and an offset in its log.
type logMark struct{ process, offset int }

func (c *faultController) mark() logMark {
	return logMark{len(c.earlierLogs), len(c.r.Log())}
}

// saidSince is what the controller's processes logged as errors since m: how many, and up to
// three distinct messages.
func (c *faultController) saidSince(m logMark) (int, []string) {
	logs := append(append([]string(nil), c.earlierLogs...), c.r.Log())
	total := 0
	var said []string
	for i := m.process; i < len(logs); i++ {
		offset := 0
		if i == m.process {
			offset = m.offset
		}
		n, distinct := errorLines(logs[i], offset, 3-len(said))
		total += n
		said = append(said, distinct...)
	}
	return total, said
}

// startFaultController starts the binary with controllerUser's kubeconfig (cluster-admin
// through RBAC, not system:masters, which priority and fairness exempts).
func startFaultController(t testing.TB, logNS string, extra ...string) *faultController {
	t.Helper()
	kc := filepath.Join(workDir, "kubeconfig-"+controllerUser)
	if _, err := os.Stat(kc); err != nil {
		if err := env.WriteKubeconfigFor(kc, controllerUser); err != nil {
			t.Fatal(err)
		}
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: controllerUser},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controllerUser}},
		}
		if err := env.Client.Create(context.Background(), binding); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	c := &faultController{t: t, logNS: logNS, kc: kc, extra: extra}
	c.r = startReplicaAs(t, "faults", logNS, kc, extra...)
	waitLeader(t, c.r)
	return c
}

// keepRunning starts the controller again when it has exited.
func (c *faultController) keepRunning() {
	if c.r.Running() {
		return
	}
	c.earlierLogs = append(c.earlierLogs, c.r.Log())
	c.restarts = append(c.restarts, c.r.ExitStatus())
	c.t.Logf("the controller exited (%s); starting it again, as the kubelet would. The end of its log:\n%s", c.r.ExitStatus(), c.r.Tail(5))
	c.r = startReplicaAs(c.t, "faults", c.logNS, c.kc, c.extra...)
}

// errorLines are the controller's logged errors since its log had offset bytes: how many, and
// the distinct messages (at most limit, each cut to 200 bytes).
func errorLines(log string, offset, limit int) (int, []string) {
	if offset > len(log) {
		offset = 0
	}
	n, seen := 0, map[string]bool{}
	var distinct []string
	for line := range strings.SplitSeq(log[offset:], "\n") {
		var entry struct {
			Level, Msg, Error string
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.Level != "error" {
			continue
		}
		n++
		msg := entry.Msg
		if entry.Error != "" {
			msg += ": " + entry.Error
		}
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
		if !seen[entry.Msg] && len(distinct) < limit {
			seen[entry.Msg] = true
			distinct = append(distinct, msg)
		}
	}
	return n, distinct
}

// auditEvent is a request of controllerUser, as the API server's audit log records it.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	ObjectRef  struct {
		Resource string `json:"resource"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Received time.Time `json:"requestReceivedTimestamp"`
}

// auditedRequests reads the requests the API server received from controllerUser between
// from and to, one event per request (a watch's first: its start, or its refusal).
func auditedRequests(t testing.TB, from, to time.Time) []auditEvent {
	t.Helper()
	f, err := os.Open(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []auditEvent
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if json.Unmarshal(sc.Bytes(), &e) != nil || seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		if !e.Received.Before(from) && e.Received.Before(to) {
			out = append(out, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// listsByResource counts the lists among events by resource, as "jobs=2 pods=1 …": list
// requests, and watches that send the initial state first (client-go's streaming list).
func listsByResource(events []auditEvent) (string, int) {
	counts := map[string]int{}
	most := 0
	for _, e := range events {
		if e.Verb == "list" || (e.Verb == "watch" && strings.Contains(e.RequestURI, "sendInitialEvents=true")) {
			counts[e.ObjectRef.Resource]++
			most = max(most, counts[e.ObjectRef.Resource])
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return strings.Join(parts, " "), most
}

// rate is requests per second over a window.
func rate(events []auditEvent, window time.Duration) float64 {
	return float64(len(events)) / window.Seconds()
}

// converge waits until every stream of f has made its payloads and each has its verdict,
// restarting the controller whenever it exits (and publishing the streams' next builds), then
// checks that nothing was lost or done twice: the payloads each stream was to make, each with
// the verdict its input decided, one job per run, every verification process run once, every
// verdict logged once.
func (f *fleet) converge(t testing.TB, c *faultController) time.Duration {
	t.Helper()
	start := time.Now()
	var snap *snapshot
	waitFor(t, fmt.Sprintf("every one of %d streams has its %d payloads with their verdicts", len(f.streams), f.perStream), time.Duration(f.perStream)*convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		s, err := f.progress(ctx)
		if err != nil {
			return false, "", err
		}
		snap = s
		f.publishNext(t, s)
		missing := f.unfinished(s)
		return len(missing) == 0, fmt.Sprintf("%s\n%d streams without all their verdicts:\n%s", s.summary(), len(missing), s.describe(missing, 5)), nil
	})
	took := time.Since(start)
	f.checkVerdicts(t, snap, f.streams)
	f.waitStatusSettled(t, f.streams, nil)
	final, err := f.snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.checkJobsOncePerRun(t, final)
	f.waitReleaseLogged(t, final, nil)
	return took
}

// faultLine prints a case's figures on one line starting with "FAULT", for the closing note.
func faultLine(t testing.TB, name string, kv ...any) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "FAULT %s", name)
	for i := 0; i+1 < len(kv); i += 2 {
		fmt.Fprintf(&b, " %v=%v", kv[i], kv[i+1])
	}
	fmt.Println(b.String())
	t.Log(b.String())
}

// checkSaid fails the test when the controller logged no error while the fault lasted: its
// lease renewal alone (every 2 s) fails, and logs it, while the API server cannot answer.
func checkSaid(t testing.TB, while string, errs int) {
	t.Helper()
	if errs == 0 {
		t.Errorf("the controller logged no error while %s", while)
	}
}

// inFlight starts a fleet of gated streams and waits until every payload is built and all
// its verification jobs run, held by the gate.
func inFlight(t testing.TB, sc faultScale, extra ...func(f *fleet) []string) (*fleet, *faultController) {
	t.Helper()
	f := newFleetWith(t, sc.jobs)
	var flags []string
	for _, e := range extra {
		flags = append(flags, e(f)...)
	}
	c := startFaultController(t, f.logNS, flags...)
	f.addStreams(t, sc.streams, func(int) bool { return true })
	want := sc.streams * (1 + sc.jobs)
	waitFor(t, "every payload is built and its verifications run", convergeTimeout, []*replica{c.r}, func(ctx context.Context) (bool, string, error) {
		s, err := f.snapshot(ctx)
		if err != nil {
			return false, "", err
		}
		return s.created() == sc.streams && len(s.jobs) == want, fmt.Sprintf("%s; want %d jobs", s.summary(), want), nil
	})
	return f, c
}

// TestFaultAPIServerKilled (case 1): kube-apiserver is killed with SIGKILL while every
// payload's verifications run, and started again 10 seconds later on the same etcd. The
// controller logs the failure, its watches resume without a storm of lists, and every verdict
// comes, each accepted payload signed once.
func TestFaultAPIServerKilled(t *testing.T) {
	sc := scaleOf(t)
	var store string
	f, c := inFlight(t, sc, signingFlags(t, &store))
	from := c.mark()
	if err := env.Kill(testenv.APIServer); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	time.Sleep(10 * time.Second) // the outage
	if err := env.Restart(testenv.APIServer, filepath.Join(workDir, "kube-apiserver-restarted.log")); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	errs, said := c.saidSince(from)
	f.openGate(t)
	took := f.converge(t, c)
	signed := f.waitSignedOnce(t, c, store)
	after := auditedRequests(t, restored, time.Now())
	lists, most := listsByResource(after)
	t.Logf("lists by the controller after the API server came back: %s", lists)
	// Each informer lists at most once again when its watch cannot resume, and once more per
	// controller start; more than that per resource is a relist storm.
	if limit := 2 * (1 + len(c.restarts)); most > limit {
		t.Errorf("the controller listed one resource %d times after the API server came back (at most %d expected): %s", most, limit, lists)
	}
	checkSaid(t, "the API server was down", errs)
	faultLine(t, "apiserver-killed", "streams", sc.streams, "jobs", sc.jobs, "down_s", restored.Sub(killed).Round(time.Second).Seconds(),
		"controller_errors", errs, "controller_restarts", len(c.restarts), "converge_s", took.Round(time.Second).Seconds(), "signed_once", signed,
		"lists_after", strconv.Quote(lists), "said", strconv.Quote(strings.Join(said, " | ")))
}

// TestFaultEtcdKilled (case 2): etcd is killed for 30 seconds while every payload's
// verifications run. The API server answers errors meanwhile; the controller logs them, backs
// off (its requests per second while etcd is down are counted by the API server's audit) and
// every verdict comes once etcd is back, each accepted payload signed once.
func TestFaultEtcdKilled(t *testing.T) {
	sc := scaleOf(t)
	var store string
	f, c := inFlight(t, sc, signingFlags(t, &store))
	from := c.mark()
	before := auditedRequests(t, time.Now().Add(-30*time.Second), time.Now())
	if err := env.Kill(testenv.Etcd); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	const outage = 30 * time.Second
	for time.Since(killed) < outage { // the outage; the controller is restarted if it exits
		c.keepRunning()
		time.Sleep(time.Second)
	}
	if err := env.Restart(testenv.Etcd, filepath.Join(workDir, "etcd-restarted.log")); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	during := auditedRequests(t, killed, restored)
	var failed int
	for _, e := range during {
		if e.ResponseStatus.Code >= 500 {
			failed++
		}
	}
	errs, said := c.saidSince(from)
	f.openGate(t)
	took := f.converge(t, c)
	signed := f.waitSignedOnce(t, c, store)
	perSecond := rate(during, restored.Sub(killed))
	t.Logf("controller requests: %.1f/s in the 30 s before, %.1f/s while etcd was down (%d answered 5xx)", rate(before, 30*time.Second), perSecond, failed)
	// No error storm. The client's own limit (20/s) would not tell one: a storm throttled by
	// it runs at 20/s. A controller that backs off sends its lease renewals (every 2 s) and
	// the retries of its informers and failed reconciles, each delay growing: 0.5-1.1/s
	// measured, well under 5/s.
	if perSecond > 5 {
		t.Errorf("the controller sent %.1f requests per second while etcd was down, more than 5/s: no backing off", perSecond)
	}
	checkSaid(t, "etcd was down", errs)
	faultLine(t, "etcd-killed", "streams", sc.streams, "jobs", sc.jobs, "down_s", outage.Seconds(),
		"requests_per_s_down", fmt.Sprintf("%.1f", perSecond), "answered_5xx", failed, "controller_errors", errs,
		"controller_restarts", len(c.restarts), "converge_s", took.Round(time.Second).Seconds(), "signed_once", signed, "said", strconv.Quote(strings.Join(said, " | ")))
}

// TestFaultPriorityAndFairness (case 7): while the controller starts and the fleet builds and
// verifies, a FlowSchema puts the controller's user in a priority level of one concurrency
// share that rejects what it cannot seat (429). The controller backs off (it retries a
// rejected request no sooner than the Retry-After); once the FlowSchema is gone every verdict
// comes, each accepted payload signed once.
func TestFaultPriorityAndFairness(t *testing.T) {
	sc := scaleOf(t)
	ctx := context.Background()
	level := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "faults-tight"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			NominalConcurrencyShares: ptr.To[int32](1),
			LendablePercent:          ptr.To[int32](0),
			BorrowingLimitPercent:    ptr.To[int32](0), // its few seats, not the idle levels' too
			LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
		}},
	}
	all := []string{"*"}
	schema := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "faults-controller"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level.Name},
			MatchingPrecedence:         100,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: controllerUser}}},
				ResourceRules:    []flowcontrolv1.ResourcePolicyRule{{Verbs: all, APIGroups: all, Resources: all, ClusterScope: true, Namespaces: all}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: all, NonResourceURLs: all}},
			}},
		},
	}
	if err := env.Client.Create(ctx, level); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, schema)
		_ = env.Client.Delete(ctx, level)
	})
	// The API server says the FlowSchema is in force (not dangling) once it has taken it up.
	waitFor(t, "the API server takes up the FlowSchema", time.Minute, nil, func(ctx context.Context) (bool, string, error) {
		var got flowcontrolv1.FlowSchema
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(schema), &got); err != nil {
			return false, "", err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == flowcontrolv1.ConditionFalse {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("conditions %+v", got.Status.Conditions), nil
	})
	// The controller starts throttled: its start (a list and watch per informer at once) and
	// the fleet's builds and verifications run under the limit.
	throttled := time.Now()
	f := newFleetWith(t, sc.jobs)
	var store string
	c := startFaultController(t, f.logNS, signingFlags(t, &store)(f)...)
	from := logMark{}
	f.addStreams(t, sc.streams, func(int) bool { return false })
	// Hold the limit until the API server has rejected the controller a fair number of times,
	// or the fleet converged under it.
	var rejected int
	waitFor(t, "the API server rejects the controller (429)", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		rejected = 0
		for _, e := range auditedRequests(t, throttled, time.Now()) {
			if e.ResponseStatus.Code == 429 {
				rejected++
			}
		}
		s, err := f.snapshot(ctx)
		if err != nil {
			return false, "", err
		}
		done := len(f.unfinished(s)) == 0
		return rejected >= 50 || done, fmt.Sprintf("%d rejections; %s", rejected, s.summary()), nil
	})
	lifted := time.Now()
	during := auditedRequests(t, throttled, lifted)
	if err := env.Client.Delete(ctx, schema); err != nil {
		t.Fatal(err)
	}
	errs, said := c.saidSince(from)
	took := f.converge(t, c)
	signed := f.waitSignedOnce(t, c, store)
	if rejected == 0 {
		t.Errorf("the API server never rejected the controller: the case tested nothing")
	}
	retries, early := retriesAfter429(auditedRequests(t, throttled, time.Now()))
	if len(early) > 0 {
		t.Errorf("the controller retried %d of %d rejected requests sooner than the Retry-After (1 s at least): %v", len(early), retries, early[:min(len(early), 5)])
	}
	perSecond := rate(during, lifted.Sub(throttled))
	faultLine(t, "priority-and-fairness", "streams", sc.streams, "jobs", sc.jobs, "throttled_s", lifted.Sub(throttled).Round(time.Second).Seconds(),
		"rejected_429", rejected, "retries_checked", retries, "requests_per_s_throttled", fmt.Sprintf("%.1f", perSecond), "controller_errors", errs,
		"controller_restarts", len(c.restarts), "converge_after_s", took.Round(time.Second).Seconds(), "signed_once", signed, "said", strconv.Quote(strings.Join(said, " | ")))
}

// clientRetries is how often client-go retries a request answered 429 (rest.Request's
// maxRetries), each time after the answer's Retry-After.
const clientRetries = 10

// retriesAfter429 pairs each request of events answered 429 with its retry, the next request
// of the same verb and URI, and returns how many pairs there are and those whose retry was
// received sooner than 1 s after the rejection: priority and fairness never asks for less
// (its Retry-After starts at 1 s and grows). Left out are creates, which name no object (the
// next create in the same collection may be another object's), and a request rejected more
// than clientRetries times in a row, which client-go gives up.
func retriesAfter429(events []auditEvent) (pairs int, early []string) {
	type key struct{ verb, uri string }
	rejected := map[key]time.Time{} // a rejection awaiting its retry
	inARow := map[key]int{}
	for _, e := range slices.SortedFunc(slices.Values(events), func(a, b auditEvent) int { return a.Received.Compare(b.Received) }) {
		k := key{e.Verb, e.RequestURI}
		if at, ok := rejected[k]; ok {
			delete(rejected, k)
			pairs++
			if gap := e.Received.Sub(at); gap < time.Second {
				early = append(early, fmt.Sprintf("%s %s %s after its 429", e.Verb, e.RequestURI, gap.Round(time.Millisecond)))
			}
		}
		if e.ResponseStatus.Code != 429 {
			delete(inARow, k)
			continue
		}
		if inARow[k]++; e.Verb != "create" && inARow[k] <= clientRetries {
			rejected[k] = e.Received
		}
	}
	return pairs, early
}

// TestFaultControllerKilled (case 9): the controller is killed with SIGKILL at FAULTS_KILLS
// random moments of a run of FAULTS_KILL_PAYLOADS payloads (each stream makes several, one per
// build of its app component), and started again each time. Every fourth stream's first
// verification fails, so the verdict of every payload is known beforehand, as an
// uninterrupted run gives it: rejected on those streams, accepted on the others. After the
// kills every payload must have that verdict, with nothing run, logged or signed twice.
func TestFaultControllerKilled(t *testing.T) {
	sc := scaleOf(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FAULTS_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("FAULTS_SEED=%q: %v", v, err)
		}
	}
	t.Logf("FAULTS_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	f := newFleetWith(t, sc.jobs)
	f.perStream = max(1, envInt(t, "FAULTS_KILL_PAYLOADS", 2*sc.streams)/sc.streams)
	f.rejects = func(i int) bool { return i%4 == 3 }
	total := f.perStream * sc.streams
	var store string
	c := startFaultController(t, f.logNS, signingFlags(t, &store)(f)...)
	// The moments: when the payloads with a verdict reach each of FAULTS_KILLS numbers drawn
	// below the total, so that the kills spread over the run however fast it goes, each
	// falling on a leading controller with payloads still to decide.
	at := rng.Perm(total)[:min(sc.kills, total)]
	slices.Sort(at)
	f.addStreams(t, sc.streams, never)
	var moments []string
	waitFor(t, fmt.Sprintf("%d kills during the run", len(at)), time.Duration(f.perStream)*convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		s, err := f.progress(ctx)
		if err != nil {
			return false, "", err
		}
		f.publishNext(t, s)
		verdicts := s.count(v1alpha1.PhaseAccepted, v1alpha1.PhaseRejected, v1alpha1.PhaseFailed)
		report := fmt.Sprintf("%d of %d payloads have their verdict, the next kill at %d: %s", verdicts, total, at[0], s.summary())
		if verdicts == total {
			return true, report, nil // nothing left to interrupt
		}
		if verdicts < at[0] {
			return false, report, nil
		}
		if lead, err := c.r.isLeader(ctx); err != nil || !lead {
			return false, report, err
		}
		if err := c.r.Kill(); err != nil {
			t.Fatal(err)
		}
		<-c.r.Exited()
		moments = append(moments, "["+report+"]")
		c.keepRunning()
		at = at[1:]
		return len(at) == 0, report, nil
	})
	took := f.converge(t, c)
	signed := f.waitSignedOnce(t, c, store)
	if len(moments) == 0 {
		t.Errorf("the fleet converged before the first kill: the case tested nothing")
	}
	final, err := f.progress(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	faultLine(t, "controller-killed", "streams", sc.streams, "jobs", sc.jobs, "payloads", total,
		"accepted", final.count(v1alpha1.PhaseAccepted), "rejected", final.count(v1alpha1.PhaseRejected),
		"kills", len(moments), "seed", seed, "controller_restarts", len(c.restarts), "converge_after_last_kill_s", took.Round(time.Second).Seconds(), "signed_once", signed)
	for i, m := range moments {
		t.Logf("kill %d at %s", i+1, m)
	}
}

// signingFlags makes the fleet's controller audit and sign its accepted payloads: a new
// OpenPGP key in a Secret of the fleet's namespace, and a file:// signature store, whose
// folder it returns through dir.
func signingFlags(t testing.TB, dir *string) func(f *fleet) []string {
	return func(f *fleet) []string {
		t.Helper()
		armored, err := signing.GenerateKey("faults", "faults@example.com")
		if err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "signing-key"}, Data: map[string][]byte{audit.SecretKeyPrivate: armored}}
		if err := env.Client.Create(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
		*dir = filepath.Join(workDir, "signatures-"+f.ns)
		return []string{"--signature-store", "file://" + *dir, "--signing-key-secret", f.ns + "/signing-key"}
	}
}

// TestFaultSignatureStore (case 4): the signature store's folder becomes unusable (a file takes
// its place) while the fleet's payloads are accepted; the payloads say SignatureStoreError on
// PayloadSigned (and AuditError on PayloadAudited: the audit record goes to the same store)
// with the store's message, with a SignatureStoreError Event, and once the folder is back each
// is signed exactly once, in both formats: the Sigstore signatures and attestations wait for the
// audit, whose record the store refused, and are then attached exactly once each.
func TestFaultSignatureStore(t *testing.T) {
	sc := scaleOf(t)
	var store string
	var signer *cosign.Signer
	f, c := inFlight(t, sc, signingFlags(t, &store), sigstoreFlags(t, &signer))
	from := c.mark()
	away := store + ".away"
	if err := os.Rename(store, away); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := time.Now()
	f.openGate(t)
	var while []string
	signedSays := v1alpha1.ConditionPayloadSigned + "=" + v1alpha1.ReasonSignatureStoreError + ": "
	var condition string // the first PayloadSigned that said so
	waitFor(t, "a payload says the signature store fails", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		s, err := f.snapshot(ctx)
		if err != nil {
			return false, "", err
		}
		while = storeFailures(s)
		i := slices.IndexFunc(while, func(l string) bool { return strings.Contains(l, signedSays) })
		if i >= 0 {
			condition = while[i]
		}
		return i >= 0, s.summary(), nil
	})
	time.Sleep(10 * time.Second) // the rest of the outage: the audits retry meanwhile
	if s, err := f.snapshot(context.Background()); err == nil {
		while = storeFailures(s)
	}
	events := reasonEvents(t, f.ns, v1alpha1.ReasonSignatureStoreError)
	if err := os.Remove(store); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, store); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	errs, said := c.saidSince(from)
	took := f.converge(t, c)
	signed := f.waitSignedOnce(t, c, store)
	sigstoreSigned := f.waitSigstoreOnce(t, c, signer)
	signedAfter := time.Since(restored)
	if len(events) == 0 {
		t.Errorf("no %s Event said the store failed", v1alpha1.ReasonSignatureStoreError)
	}
	faultLine(t, "signature-store", "streams", sc.streams, "jobs", sc.jobs, "broken_s", restored.Sub(broken).Round(time.Second).Seconds(),
		"payloads_saying_so", len(while), "events", len(events), "controller_errors", errs, "converge_s", took.Round(time.Second).Seconds(),
		"signed_after_s", signedAfter.Round(time.Second).Seconds(), "signed_once", signed, "sigstore_once", sigstoreSigned, "condition", strconv.Quote(condition), "said", strconv.Quote(strings.Join(said, " | ")))
}

// waitSignedOnce waits until every accepted payload of the fleet is signed, restarting the
// controller whenever it exits, then checks that each has exactly one signature in the file
// store; it returns how many payloads were signed.
func (f *fleet) waitSignedOnce(t testing.TB, c *faultController, store string) int {
	t.Helper()
	var signed map[string]int
	waitFor(t, "every accepted payload is audited and signed", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		s, err := f.progress(ctx)
		if err != nil {
			return false, "", err
		}
		var missing []string
		signed, missing = signaturesPerPayload(t, store, s)
		return len(missing) == 0, fmt.Sprintf("not signed yet: %v", missing[:min(len(missing), 5)]), nil
	})
	for tag, n := range signed {
		if n != 1 {
			t.Errorf("payload %s has %d signatures in the store, want 1", tag, n)
		}
	}
	return len(signed)
}

// storeFailures lists the payloads whose PayloadAudited, PayloadSigned or
// PayloadSigstoreSigned says the store or the registry failed, as "tag: Type=Reason: message".
func storeFailures(s *snapshot) []string {
	var out []string
	for _, list := range s.payloads {
		for _, p := range list {
			for _, c := range p.Status.Conditions {
				if c.Reason == v1alpha1.ReasonSignatureStoreError || c.Reason == v1alpha1.ReasonAuditError || c.Reason == v1alpha1.ReasonRegistryError {
					out = append(out, fmt.Sprintf("%s: %s=%s: %s", p.Name, c.Type, c.Reason, c.Message))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// reasonEvents lists the Events of namespace ns with one of reasons.
func reasonEvents(t testing.TB, ns string, reasons ...string) []string {
	t.Helper()
	var list eventsv1.EventList
	if err := env.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if slices.Contains(reasons, e.Reason) {
			out = append(out, e.Regarding.Name+": "+e.Note)
		}
	}
	return out
}

// signaturesPerPayload counts the signatures in the file store of each accepted payload of s
// (by its image digest), and lists the accepted payloads not signed (PayloadSigned) yet.
func signaturesPerPayload(t testing.TB, store string, s *snapshot) (map[string]int, []string) {
	t.Helper()
	counts := map[string]int{}
	var missing []string
	for _, list := range s.payloads {
		for _, p := range list {
			if p.Status.Phase != v1alpha1.PhaseAccepted {
				continue
			}
			if !meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.ConditionPayloadSigned) {
				missing = append(missing, p.Name)
				continue
			}
			_, digest, ok := strings.Cut(p.Status.PayloadImage, "@sha256:")
			if !ok {
				t.Fatalf("payload %s: image %q has no digest", p.Name, p.Status.PayloadImage)
			}
			files, err := filepath.Glob(filepath.Join(store, "sha256="+digest, "signature-*"))
			if err != nil {
				t.Fatal(err)
			}
			counts[p.Name] = len(files)
		}
	}
	sort.Strings(missing)
	return counts, missing
}

// TestFaultRegistryDown (case 3): the registry stops for FAULTS_REGISTRY_DOWN (2 minutes in
// make faults, 20 s in go test) while half the fleet's payloads are built and the other half
// build, and the built ones are accepted and audited. The streams' imports (every 2 s) fail
// with ImportFailed Events naming the registry, the builds wait for it (payload build
// --registry-wait), the audits say AuditError (and the Sigstore signatures RegistryError) and
// retry; once it is back every payload is built once, accepted, audited and signed once, with
// exactly one Sigstore signature and one of each attestation in the registry.
func TestFaultRegistryDown(t *testing.T) {
	sc := scaleOf(t)
	outage := 20 * time.Second
	if v := os.Getenv("FAULTS_REGISTRY_DOWN"); v != "" {
		var err error
		if outage, err = time.ParseDuration(v); err != nil {
			t.Fatalf("FAULTS_REGISTRY_DOWN=%q: %v", v, err)
		}
	}
	var store string
	var signer *cosign.Signer
	f := newFleetWith(t, sc.jobs)
	c := startFaultController(t, f.logNS, append(signingFlags(t, &store)(f), sigstoreFlags(t, &signer)(f)...)...)
	f.addStreams(t, sc.streams, func(int) bool { return true })
	waitFor(t, "half the payloads are built", convergeTimeout, nil, func(ctx context.Context) (bool, string, error) {
		c.keepRunning()
		s, err := f.snapshot(ctx)
		if err != nil {
			return false, "", err
		}
		return s.created() >= sc.streams/2, s.summary(), nil
	})
	from := c.mark()
	before, err := f.snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	addr := reg.Addr()
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	f.openGate(t)
	var auditErrors []string
	for time.Since(stopped) < outage { // the outage; what the payloads say meanwhile
		c.keepRunning()
		if s, err := f.snapshot(context.Background()); err == nil {
			for _, p := range storeFailures(s) {
				if !slices.Contains(auditErrors, p) {
					auditErrors = append(auditErrors, p)
				}
			}
		}
		time.Sleep(time.Second)
	}
	importErrors := reasonEvents(t, f.ns, v1alpha1.EventImportFailed)
	if reg, err = registry.Start(context.Background(), registry.Options{Dir: filepath.Join(workDir, "registry"), Addr: addr}); err != nil {
		t.Fatal(err)
	}
	restored := time.Now()
	errs, said := c.saidSince(from)
	took := f.converge(t, c)
	signed := f.waitSignedOnce(t, c, store)
	sigstoreSigned := f.waitSigstoreOnce(t, c, signer)
	signedAfter := time.Since(restored)
	// Every stream imports every 2 s whatever else runs, so imports failed while the registry
	// was down, even in the 20 s outage of go test; an audit may have run meanwhile or not.
	if !slices.ContainsFunc(importErrors, func(e string) bool { return strings.Contains(e, addr) }) {
		t.Errorf("no ImportFailed Event named the registry (%s) while it was down: %q", addr, importErrors)
	}
	first := ""
	if len(auditErrors) > 0 {
		first = auditErrors[0]
	}
	faultLine(t, "registry-down", "streams", sc.streams, "jobs", sc.jobs, "down_s", restored.Sub(stopped).Round(time.Second).Seconds(),
		"built_before", before.created(), "audit_errors", len(auditErrors), "import_failed_events", len(importErrors), "controller_errors", errs,
		"converge_s", took.Round(time.Second).Seconds(), "signed_after_s", signedAfter.Round(time.Second).Seconds(), "signed_once", signed, "sigstore_once", sigstoreSigned, "condition", strconv.Quote(first), "said", strconv.Quote(strings.Join(said, " | ")))
}
