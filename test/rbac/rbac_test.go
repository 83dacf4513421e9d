//go:build !unit

package rbac

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	prowv1 "github.com/release-controller/release-controller/api/prow/v1"
	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/jobcontract"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/registryclient"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/stream"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/upgradegraph"
)

const (
	// waitTimeout bounds every wait: a deadline for a broken test, not a performance assertion.
	waitTimeout = 3 * time.Minute
	// logNamespace holds the release log.
	logNamespace = "release-log"
	// writerAccount is the user who adds to the log through the api (a CI system, say).
	writerAccount = "release-log-writer"
	// maxEntries is the controller's --log-max-entries: small, so that a verdict finds its day
	// full (a ReleaseLogFull event, the events.k8s.io grant).
	maxEntries = 3
)

// exempt are the grants no flow can be made to use, with the reason each is granted all the
// same. Keep it tiny: a grant that some path uses belongs in the flow instead.
var exempt = map[string]map[access]string{
	"controller": {
		{Group: "events.k8s.io", Resource: "events", Verb: "patch"}: "client-go's event recorder counts an event that recurs for the same " +
			"object version (the payload's verdict reconciled again after an informer relist) by patching the first one's series; " +
			"nothing in a flow makes an informer relist, and without the grant such a recurrence is refused",
		{Group: "release-controller.dev", Resource: "releasepayloads", Verb: "get"}: "a payload stored before its job templates " +
			"moved to a ConfigMap (spec.payloadVerificationConfig.templatesFrom) carries them inline, and the stream controller reads " +
			"them from the API server (its cache leaves them out); this version's stream controller creates no such payload " +
			"(internal/stream's TestInlineTemplatesStillRun runs one)",
		{Resource: "secrets", Verb: "create"}: releaseLogKeyRace,
	},
	"api": {
		{Resource: "secrets", Verb: "create"}: releaseLogKeyRace,
	},
}

// releaseLogKeyRace is why the controller and the api may create Secrets in their namespace
// though the flow may not see both do it.
const releaseLogKeyRace = "the release log key's Secret (--release-log-key-secret) is made by whichever of the controller " +
	"and the api starts first (releaselog.EnsureKey); the other only reads it"

// A component: what runs as which account, bound to which generated roles.
type component struct {
	name    string // controller, api, build: config/rbac/<name>/role.yaml
	account types.NamespacedName
	roles   roleFile
}

func (c *component) username() string {
	return "system:serviceaccount:" + c.account.Namespace + ":" + c.account.Name
}

// TestComponentsRunAsTheirOwnServiceAccounts drives a stream from component builds to
// published payloads with `release-controller controller` and `release-controller api`
// running as their own ServiceAccounts and the creation jobs' `payload build` as the build
// account, each bound to its generated role and nothing else. The flow takes every path
// the roles grant something for: leader election; creating, verifying (a Job, a ProwJob and
// an upgrade Job), accepting, annotating, logging and collecting payloads; the upgrade graph
// created and updated; jobs and ProwJobs collected; an expired log day deleted; the log's
// writes racing a deleted day (the writers' read from the API server) in the controller and
// in the api; a verdict finding its day full (an event); the api's reads and
// its Connect API's writes with a user's token (TokenReview, SubjectAccessReview). Then the
// audit log must show no refused request, and every verb each role grants used by its account.
func TestComponentsRunAsTheirOwnServiceAccounts(t *testing.T) {
	awayFromMidnight(t)
	ctx := context.Background()
	g := NewWithT(t)
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}

	// The roles as generated; the controller's leader election Role names the namespace the
	// controller runs in (an install moves it to its own).
	controller := &component{name: "controller"}
	api := &component{name: "api"}
	build := &component{name: "build"}
	components := []*component{controller, api, build}
	for _, c := range components {
		if c.roles, err = readRoleFile(c.name); err != nil {
			t.Fatal(err)
		}
		if len(c.roles.ClusterRoles) != 1 || c.roles.ClusterRoles[0].Name != "release-controller-"+c.name {
			t.Fatalf("config/rbac/%s/role.yaml: want one ClusterRole release-controller-%s, have %+v", c.name, c.name, c.roles.ClusterRoles)
		}
	}
	if len(controller.roles.Roles) != 1 || len(api.roles.Roles) != 1 || len(build.roles.Roles) != 0 {
		t.Fatalf("want one Role of the controller (its leader election) and one of the api (its own Secret) in config/rbac, have controller %d, api %d, build %d",
			len(controller.roles.Roles), len(api.roles.Roles), len(build.roles.Roles))
	}
	system := controller.roles.Roles[0].Namespace
	if api.roles.Roles[0].Namespace != system {
		t.Fatalf("the api's Role is in namespace %s, the controller's in %s: both run in one", api.roles.Roles[0].Namespace, system)
	}
	ns := env.Namespace(t) // the stream's, where its creation jobs run
	controller.account = types.NamespacedName{Namespace: system, Name: "release-controller-controller"}
	api.account = types.NamespacedName{Namespace: system, Name: "release-controller-api"}
	build.account = types.NamespacedName{Namespace: ns, Name: "release-controller-build"}

	for _, n := range []string{system, logNamespace} {
		create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
	}
	for _, c := range components {
		create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: c.account.Namespace, Name: c.account.Name}})
		subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: c.account.Namespace, Name: c.account.Name}}
		for _, r := range c.roles.ClusterRoles {
			create(t, r.DeepCopy())
			ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name}
			if c == build {
				// A creation job runs in its stream's namespace: the build account is bound there.
				create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: r.Name}, RoleRef: ref, Subjects: subject})
				continue
			}
			create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name}, RoleRef: ref, Subjects: subject})
		}
		for _, r := range c.roles.Roles {
			create(t, r.DeepCopy())
			create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name}, Subjects: subject})
		}
	}
	// The user who writes to the log through the api: RBAC lets it create releaselogs/entries,
	// which is what the api's SubjectAccessReview asks (and all it needs).
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: logNamespace, Name: writerAccount}})
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: logNamespace, Name: writerAccount},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"releaselogs/entries"}, Verbs: []string{"create"}}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: logNamespace, Name: writerAccount},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: writerAccount},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: logNamespace, Name: writerAccount}}})
	// The api's one Secret, read once at start through its Role in its own namespace.
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "git-credentials"},
		Data: map[string][]byte{"token": []byte("a token for github.com")}})
	writerToken := filepath.Join(workDir, "writer-token")
	if err := os.WriteFile(writerToken, []byte(token(t, cs, types.NamespacedName{Namespace: logNamespace, Name: writerAccount})), 0o600); err != nil {
		t.Fatal(err)
	}

	// The controller runs "in a pod": without --build-image it reads its pod for the creation
	// jobs' image, as it does on a cluster (POD_NAMESPACE and POD_NAME from the downward API).
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: system, Name: "release-controller-controller-0"},
		Spec: corev1.PodSpec{
			ServiceAccountName: controller.account.Name, AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: manager.ControllerContainer, Image: "registry.example.com/release-controller:rbac"}},
		},
	}
	create(t, pod)

	// A day expired under the components' --log-ttl (logTTL), which the controller deletes.
	// (The admission policy refuses days older than the default TTL of 30 days.)
	expiredDay := time.Now().UTC().Add(-5 * 24 * time.Hour).Truncate(24 * time.Hour)
	expired := &v1alpha1.ReleaseLog{
		ObjectMeta: metav1.ObjectMeta{Namespace: logNamespace, Name: releaselog.ObjectName(releaselog.DayOf(expiredDay))},
		Spec: v1alpha1.ReleaseLogSpec{Entries: []v1alpha1.ReleaseLogEntry{{Type: "release", Version: "0.0.1", Origin: "rbac-test",
			Date: metav1.NewTime(expiredDay.Add(12 * time.Hour))}}},
	}
	create(t, expired)
	const logTTL = "72h"

	// The local job runner plays kubelet: it runs the jobs' commands, and gives a pod that
	// names a service account a token of it, so `payload build` runs as the build account.
	// Nothing else gets cluster credentials.
	logDir := filepath.Join(workDir, "jobs")
	startJobRunner(t, jobrunner.Options{
		Executable: binary, LogDir: logDir, ServiceAccountAPIServer: env.Config,
		Env: []string{"PATH=" + filepath.Dir(binary) + ":" + os.Getenv("PATH"), "SCRATCH=" + workDir},
	})

	// A flow that stops half-way says what was refused so far, which is usually why.
	var cliOutput strings.Builder
	flowDone := false
	processes := map[string]*testbinary.Process{}
	defer func() {
		if !flowDone && processes["controller"] != nil && processes["api"] != nil {
			t.Log("the flow did not complete; what the components were refused so far follows")
			checkForbidden(t, componentOutputs(t, processes["controller"], processes["api"], cliOutput.String(), logDir))
			checkAudit(t, components)
		}
	}()
	controllerProc := startBinary(t, "controller", token(t, cs, controller.account),
		[]string{"POD_NAMESPACE=" + pod.Namespace, "POD_NAME=" + pod.Name},
		"controller",
		"--leader-election-namespace", system,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--build-service-account", build.account.Name,
		"--log-namespace", logNamespace, "--log-max-entries", fmt.Sprint(maxEntries), "--log-ttl", logTTL,
		"--import-interval", "1s", "--retry-backoff", "500ms", "--retry-backoff-max", "2s")
	processes["controller"] = controllerProc
	listen, err := testbinary.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	server := "http://" + listen
	apiProc := startBinary(t, "api", token(t, cs, api.account), nil,
		"api", "--listen", listen, "--log-namespace", logNamespace, "--log-ttl", logTTL,
		// Not in a pod: the release log key's Secret is in the api's namespace all the same.
		"--release-log-key-secret", system+"/"+releaselog.DefaultKeySecret,
		"--changelog-cache-dir", filepath.Join(workDir, "changelog-cache"),
		"--git-credentials-secret", system+"/git-credentials")
	processes["api"] = apiProc
	g.Eventually(func() error {
		_, err := testbinary.Get(ctx, server+"/")
		return err
	}).WithTimeout(waitTimeout).WithPolling(200*time.Millisecond).Should(Succeed(), "the api does not serve: %s", apiProc.Tail(20))

	// The api's writes with a user's token, on a day of their own (two days ago): the first
	// creates the day, the second appends to it; the day is then deleted behind the api's
	// back, so the third finds its day gone, reads it from the API server and creates it again.
	apiDay := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Hour)
	addEntry := func(version string) {
		t.Helper()
		out := logAdd(t, server, writerToken, version, apiDay)
		cliOutput.WriteString(out)
		if !strings.Contains(out, "added hotfix "+version) {
			t.Fatalf("log add %s: %s", version, out)
		}
	}
	addEntry("api-1")
	addEntry("api-2")
	apiDayName := releaselog.ObjectName(releaselog.DayOf(apiDay))
	first := deleteDay(t, apiDayName)
	addEntry("api-3")
	day := waitEntry(t, "api-3")
	g.Expect(day.Name).To(Equal(apiDayName))
	g.Expect(day.UID).NotTo(Equal(first.UID), "the day was not created again")
	g.Expect(versions(day)).To(Equal([]string{"api-3"}))
	g.Expect(day.Spec.Entries[0].Author).To(Equal("system:serviceaccount:" + logNamespace + ":" + writerAccount))

	// The stream: a Job reading the payload image, a ProwJob and an upgrade Job verify each
	// payload; one accepted payload is kept, and finished jobs go a second after they are
	// recorded.
	publish(t, ns, "api", "r1")
	publish(t, ns, "web", "r1")
	createStream(t, ns)

	// The first payload: built by the build account, verified, accepted (its upgrade skipped:
	// an annotation), published, and logged in a new day.
	p1 := waitAccepted(t, ns)
	g.Expect(p1.Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationUpgradeSkipped, "upgrade"))
	waitPublished(t, ns, server, &p1)
	logDay := waitEntry(t, p1.Name)
	g.Expect(logDay.Name).NotTo(Equal(apiDayName))

	// The second: upgraded from the first (the upgrade graph is created), appended to the day;
	// the first is collected.
	publish(t, ns, "api", "r2")
	p2 := waitAccepted(t, ns, p1)
	waitPublished(t, ns, server, &p2)
	g.Expect(waitEntry(t, p2.Name).UID).To(Equal(logDay.UID))
	waitUpgradeGraph(t, ns, p2.Name)

	// The day is deleted behind the controller's back: the third's verdict finds its day gone,
	// reads it from the API server and creates it again.
	deleteDay(t, logDay.Name)
	publish(t, ns, "api", "r3")
	p3 := waitAccepted(t, ns, p1, p2)
	waitPublished(t, ns, server, &p3)
	again := waitEntry(t, p3.Name)
	g.Expect(again.Name).To(Equal(logDay.Name))
	g.Expect(again.UID).NotTo(Equal(logDay.UID), "the day was not created again")
	waitUpgradeGraph(t, ns, p3.Name)

	// The day is filled up to the controller's limit: the fourth's verdict finds it full, which
	// is an event on the payload. Its verification list differs (the stream was edited): its
	// job templates go to a new ConfigMap, and the earlier one goes once no payload names it.
	fillDay(t, logDay.Name, maxEntries)
	editInspect(t, ns)
	publish(t, ns, "web", "r4")
	p4 := waitAccepted(t, ns, p1, p2, p3)
	waitPublished(t, ns, server, &p4)
	waitUpgradeGraph(t, ns, p4.Name)
	full := waitLogFullEvent(t, &p4)
	g.Expect(full.Note).To(ContainSubstring("release log"))

	// What is left once the flow settles: the expired day deleted; the newest accepted payload
	// alone; no job of it left, Job or ProwJob.
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(expired), &v1alpha1.ReleaseLog{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the expired day is still there: %v", err)
		g.Expect(payloadNames(g, ns)).To(Equal([]string{p4.Name}))
		var jobs batchv1.JobList
		g.Expect(env.Client.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(BeEmpty())
		var prowJobs prowv1.ProwJobList
		g.Expect(env.Client.List(ctx, &prowJobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(prowJobs.Items).To(BeEmpty())
		var templates corev1.ConfigMapList
		g.Expect(env.Client.List(ctx, &templates, client.InNamespace(ns),
			client.MatchingLabels{v1alpha1.LabelContent: v1alpha1.ContentVerificationTemplates})).To(Succeed())
		g.Expect(templates.Items).To(ConsistOf(HaveField("Name", p4.Spec.PayloadVerificationConfig.TemplatesFrom.ConfigMap)))
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

	// A pipeline fed by the stream: dev (a local Deployment, patched by the controller), staging
	// (reached through a kubeconfig Secret, approved with a signed request: the api reads the
	// key) and prod (local, approved with the token of a user RBAC allows).
	pipelineFlow(t, ns, server, p4.Name, &cliOutput)

	// Stopped as a rollout stops them: the controller steps down (its last lease update).
	for _, name := range []string{"controller", "api"} {
		p := processes[name]
		p.Stop(30 * time.Second)
		if status := p.ExitStatus(); status != "exit status 0" {
			t.Errorf("%s ended with %s: %s", name, status, p.Tail(30))
		}
	}

	// Nothing any component printed says forbidden, nothing was refused, and every grant was
	// used by its account.
	flowDone = true
	outputs := componentOutputs(t, controllerProc, apiProc, cliOutput.String(), logDir)
	// Each payload was built by `payload build`, which printed the image it pushed.
	for _, p := range []v1alpha1.ReleasePayload{p1, p2, p3, p4} {
		if out := outputs["job "+ns+"/"+jobcontract.CreationJobName(p.Name)+".log"]; !strings.Contains(out, p.Status.PayloadImage) {
			t.Errorf("the creation job of %s did not print its image %s: %q", p.Name, p.Status.PayloadImage, out)
		}
	}
	checkForbidden(t, outputs)
	used := checkAudit(t, components)
	for _, c := range components {
		var granted []access
		for _, r := range c.roles.ClusterRoles {
			granted = append(granted, grants(r.Rules)...)
		}
		for _, r := range c.roles.Roles {
			granted = append(granted, grants(r.Rules)...)
		}
		if len(used[c.username()]) == 0 {
			t.Errorf("%s made no request as %s", c.name, c.username())
		}
		for a, reason := range exempt[c.name] {
			if !slices.Contains(granted, a) {
				t.Errorf("the exemption of %q for %s is stale: its role does not grant it any more (%s)", a, c.name, reason)
			}
			used[c.username()][a] = true
		}
		if unused := unusedGrants(granted, used[c.username()]); len(unused) > 0 {
			var all []string
			for a := range used[c.username()] {
				all = append(all, a.String())
			}
			slices.Sort(all)
			t.Errorf("config/rbac/%s/role.yaml grants what %s never used in the flow (remove the marker, or exercise the path in this test):\n  %s\nused:\n  %s",
				c.name, c.username(), strings.Join(unused, "\n  "), strings.Join(all, "\n  "))
		}
	}
}

// componentOutputs collects what the components printed: the controller's and the api's
// output, the log CLI's, and every job's log (creation jobs run `payload build`).
func componentOutputs(t *testing.T, controller, api *testbinary.Process, cli, logDir string) map[string]string {
	t.Helper()
	outputs := map[string]string{"controller": controller.Log(), "api": api.Log(), "log add and pipeline approve": cli}
	err := filepath.WalkDir(logDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		outputs["job "+strings.TrimPrefix(path, logDir+"/")] = string(data)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Error(err)
	}
	return outputs
}

// checkForbidden fails the test for every output that says forbidden.
func checkForbidden(t *testing.T, outputs map[string]string) {
	t.Helper()
	for name, out := range outputs {
		if i := strings.Index(strings.ToLower(out), "forbidden"); i >= 0 {
			t.Errorf("%s says forbidden: …%s…", name, out[max(0, i-300):min(len(out), i+300)])
		}
	}
}

// checkAudit fails the test for every request of the components (and of the log's writer)
// that the API server refused, and returns what each component's account used, by username.
// An informer's list made as a watch (watch-list) counts as the list it is.
func checkAudit(t *testing.T, components []*component) map[string]map[access]bool {
	t.Helper()
	events, err := readAudit(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]map[access]bool{}
	for _, c := range components {
		used[c.username()] = map[access]bool{}
	}
	writer := "system:serviceaccount:" + logNamespace + ":" + writerAccount
	refused := map[string]int{}
	defer func() {
		for _, r := range slices.Sorted(maps.Keys(refused)) {
			t.Errorf("refused (%d times): %s", refused[r], r)
		}
	}()
	for _, e := range events {
		u := used[e.User.Username]
		if e.code() == 403 && (u != nil || e.User.Username == writer) {
			refused[e.String()]++
		}
		a, ok := e.access()
		if u == nil || !ok {
			continue
		}
		u[a] = true
		if imp, ok := e.impersonation(); ok {
			u[imp] = true
		}
		if e.listsToo() {
			u[access{Group: a.Group, Resource: a.Resource, Verb: "list"}] = true
		}
	}
	return used
}

// awayFromMidnight waits past UTC midnight when it is near: the flow relies on the
// controller's verdicts falling on one day.
func awayFromMidnight(t *testing.T) {
	now := time.Now().UTC()
	midnight := now.Truncate(24 * time.Hour).Add(24 * time.Hour)
	if until := midnight.Sub(now); until < 15*time.Minute {
		t.Logf("waiting %s for UTC midnight to pass: the controller's verdicts must fall on one day", until.Round(time.Second))
		time.Sleep(until + 5*time.Second)
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// token returns a token of the service account from the TokenRequest API.
func token(t *testing.T, cs kubernetes.Interface, account types.NamespacedName) string {
	t.Helper()
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	tr, err := cs.CoreV1().ServiceAccounts(account.Namespace).CreateToken(context.Background(), account.Name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of %s: %v", account, err)
	}
	return tr.Status.Token
}

// startBinary starts `release-controller ARGS --kubeconfig K` with K holding only bearer, the
// API server's address and CA (not the test's administrator credentials), and its environment
// only PATH, HOME and extraEnv. It is stopped when the test ends.
func startBinary(t *testing.T, name, bearer string, extraEnv []string, args ...string) *testbinary.Process {
	t.Helper()
	kubeconfig := filepath.Join(workDir, name+".kubeconfig")
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: bearer}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "test", AuthInfo: name}},
		CurrentContext: name,
	}
	if err := clientcmd.WriteToFile(cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	cmd := testbinary.Command(binary, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + workDir}, extraEnv...)
	p, err := testbinary.StartCommand(cmd, filepath.Join(workDir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(30 * time.Second) })
	return p
}

// startJobRunner runs the job runner with the test's administrator credentials (it is the
// kubelet and job controller of this API server) until the test ends.
func startJobRunner(t *testing.T, opts jobrunner.Options) {
	t.Helper()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: manager.NewScheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	runner, err := jobrunner.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("job runner: %v", err)
		}
	})
}

// logAdd adds a hotfix entry of version dated at through the api's Connect API, as the
// writer (`release-controller log add`), and returns what the command printed.
func logAdd(t *testing.T, server, tokenFile, version string, at time.Time) string {
	t.Helper()
	cmd := testbinary.Command(binary, "log", "add", "--server", server, "--token-file", tokenFile,
		"--type", "hotfix", "--version", version, "--message", "added by the rbac test", "--date", at.Format(time.RFC3339))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + workDir}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("log add %s: %v: %s", version, err, out)
	}
	return string(out)
}

// deleteDay deletes the release log's day object name and waits until it is gone; it returns
// the object as it was.
func deleteDay(t *testing.T, name string) *v1alpha1.ReleaseLog {
	t.Helper()
	ctx := context.Background()
	var l v1alpha1.ReleaseLog
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: logNamespace, Name: name}, &l); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &l); err != nil {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(&l), &v1alpha1.ReleaseLog{}))
	}).WithTimeout(waitTimeout).Should(BeTrue())
	return &l
}

// waitEntry waits until an entry of version is in the log, and returns its day.
func waitEntry(t *testing.T, version string) *v1alpha1.ReleaseLog {
	t.Helper()
	var day *v1alpha1.ReleaseLog
	NewWithT(t).Eventually(func(g Gomega) {
		var logs v1alpha1.ReleaseLogList
		g.Expect(env.Client.List(context.Background(), &logs, client.InNamespace(logNamespace))).To(Succeed())
		day = nil
		for i := range logs.Items {
			if slices.Contains(versions(&logs.Items[i]), version) {
				day = &logs.Items[i]
			}
		}
		g.Expect(day).NotTo(BeNil(), "no entry of %s in the log", version)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return day
}

func versions(l *v1alpha1.ReleaseLog) []string {
	var vs []string
	for _, e := range l.Spec.Entries {
		vs = append(vs, e.Version)
	}
	return vs
}

// fillDay adds entries to the day until it holds n.
func fillDay(t *testing.T, name string, n int) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var l v1alpha1.ReleaseLog
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: logNamespace, Name: name}, &l); err != nil {
			return err
		}
		_, start, err := releaselog.ParseObjectName(name)
		if err != nil {
			return err
		}
		for i := len(l.Spec.Entries); i < n; i++ {
			l.Spec.Entries = append(l.Spec.Entries, v1alpha1.ReleaseLogEntry{
				ID: fmt.Sprintf("filler-%d", i), Type: "hotfix", Version: fmt.Sprintf("filler-%d", i), Origin: "rbac-test",
				Date: metav1.NewTime(start.Add(12 * time.Hour)),
			})
		}
		return env.Client.Update(ctx, &l)
	})
	if err != nil {
		t.Fatalf("filling the day %s: %v", name, err)
	}
}

func repo(ns, image string) string { return fmt.Sprintf("%s/%s/%s", reg.Addr(), ns, image) }

// publish pushes a new build of a component, labelled with its source and revision as a CI
// system would.
func publish(t *testing.T, ns, component, revision string) {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Labels = map[string]string{
		"org.opencontainers.image.source":   "https://git.example.com/" + component,
		"org.opencontainers.image.revision": revision,
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(repo(ns, component) + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// script is a Job verification running a shell script (release-controller on its PATH).
func script(name, body string) v1alpha1.Verification {
	return v1alpha1.Verification{Name: name, Job: &v1alpha1.JobBackend{Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](0),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "test", Image: "tests", Command: []string{"sh", "-c", body}}},
		}},
	}}}}
}

func createStream(t *testing.T, ns string) {
	t.Helper()
	upgrade := script("upgrade", `echo "upgrade from $RELEASE_IMAGE_INITIAL to $RELEASE_TAG"`)
	upgrade.UpgradeFrom = v1alpha1.UpgradeFromPrevious
	prow := v1alpha1.Verification{Name: "prow", ProwJob: &v1alpha1.ProwJobBackend{Spec: prowv1.ProwJobSpec{
		Job: "periodic-rbac", PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{
			Name: "test", Image: "tests", Command: []string{"sh", "-c", `echo "prow verified $RELEASE_TAG"`},
		}}},
	}}}
	create(t, &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:         "1.0.0-0.nightly",
			PayloadRepository: repo(ns, "release"),
			Components: []v1alpha1.ComponentSource{
				{Name: "api", Image: repo(ns, "api") + ":latest"},
				{Name: "web", Image: repo(ns, "web") + ":latest"},
			},
			MaxUnreadyReleases: 1,
			PublishTags:        []string{"latest"},
			Verification: []v1alpha1.Verification{
				script("inspect", `release-controller payload info "$RELEASE_IMAGE_LATEST" && echo "inspected $RELEASE_TAG"`),
				prow, upgrade,
			},
			Retention: v1alpha1.Retention{KeepAccepted: 1, CompletedJobTTL: &metav1.Duration{Duration: time.Second}},
		},
	})
}

// editInspect changes what the stream's inspect verification prints, as a user editing the
// stream's verification list would.
func editInspect(t *testing.T, ns string) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		var s v1alpha1.ReleaseStream
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "nightly"}, &s); err != nil {
			return err
		}
		s.Spec.Verification[0] = script("inspect", `release-controller payload info "$RELEASE_IMAGE_LATEST" && echo "inspected $RELEASE_TAG again"`)
		return env.Client.Update(context.Background(), &s)
	}).WithTimeout(waitTimeout).Should(Succeed())
}

func payloadNames(g Gomega, ns string) []string {
	var list v1alpha1.ReleasePayloadList
	g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	stream.NewestFirst(list.Items)
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// waitAccepted waits until the stream's newest payload is one created after earlier and is
// accepted, with its verifications passed, and returns it.
func waitAccepted(t *testing.T, ns string, earlier ...v1alpha1.ReleasePayload) v1alpha1.ReleasePayload {
	t.Helper()
	var newest v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		var list v1alpha1.ReleasePayloadList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).NotTo(BeEmpty())
		stream.NewestFirst(list.Items)
		newest = list.Items[0]
		for _, e := range earlier {
			g.Expect(newest.Name).NotTo(Equal(e.Name), "no new payload yet")
		}
		g.Expect(newest.Status.Phase).To(Equal(v1alpha1.PhaseAccepted), "conditions: %+v", newest.Status.Conditions)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	g := NewWithT(t)
	g.Expect(newest.Status.ReleaseCreationJobResult.Status).To(Equal(v1alpha1.CreationJobSuccess))
	g.Expect(newest.Status.Verifications).To(HaveLen(3))
	for _, v := range newest.Status.Verifications {
		if len(earlier) == 0 && v.Name == "upgrade" {
			continue // nothing to upgrade from: skipped
		}
		g.Expect(v.State).To(Equal(v1alpha1.JobSuccess), "verification %s: %+v", v.Name, v)
	}
	return newest
}

// waitPublished waits until the stream's floating tag and the api's latest are p.
func waitPublished(t *testing.T, ns, server string, p *v1alpha1.ReleasePayload) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		resolved, err := registryclient.New().Resolve(context.Background(), repo(ns, "release")+":latest")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(resolved).To(Equal(p.Status.PayloadImage))
		latest, err := testbinary.Get(context.Background(), server+"/api/v1/namespaces/"+ns+"/releasestream/nightly/latest?format=name")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(strings.TrimSpace(latest)).To(Equal(p.Name))
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// waitUpgradeGraph waits until the stream's upgrade graph records an upgrade to tag.
func waitUpgradeGraph(t *testing.T, ns, tag string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var cm corev1.ConfigMap
		g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: upgradegraph.ConfigMapName("nightly")}, &cm)).To(Succeed())
		g.Expect(cm.Data[upgradegraph.Key]).To(ContainSubstring(tag))
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// waitLogFullEvent waits for the ReleaseLogFull event on p.
func waitLogFullEvent(t *testing.T, p *v1alpha1.ReleasePayload) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	NewWithT(t).Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(p.Namespace))).To(Succeed())
		ok := false
		for _, e := range list.Items {
			if e.Reason == v1alpha1.EventReleaseLogFull && e.Regarding.Kind == "ReleasePayload" && e.Regarding.Name == p.Name {
				found, ok = e, true
			}
		}
		g.Expect(ok).To(BeTrue(), "no %s event on %s", v1alpha1.EventReleaseLogFull, p.Name)
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return found
}
