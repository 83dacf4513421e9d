//go:build !unit

package updateservice

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/releaseimage"
	"github.com/release-controller/release-controller/internal/releaseimage/releaseimagetest"
	"github.com/release-controller/release-controller/internal/stream"
)

// The media type a Cincinnati client asks /graph for, and the metadata keys of its nodes.
const (
	cincinnatiV1    = "application/vnd.redhat.cincinnati.v1+json"
	metaChannels    = "io.openshift.upgrades.graph.release.channels"
	metaRemoveRegex = "io.openshift.upgrades.graph.previous.remove_regex"
)

// TestRiskDeclaredWithKubectlIsServed declares an UpgradeRisk with a PromQL rule with kubectl
// onto a tested upgrade edge: /graph serves the edge as a conditional edge carrying the risk
// and its rule, and no longer as a plain edge; deleted, the edge is plain again. How long the
// risk took to reach /graph is logged.
func TestRiskDeclaredWithKubectlIsServed(t *testing.T) {
	ns := env.Namespace(t)
	newStream(t, ns, "2.0.0-0.risk", nil)
	from, to := twoAccepted(t, ns)
	waitGraph(t, "", func(g Gomega, gr graph) {
		g.Expect(gr.edge(from, to)).To(BeTrue(), "no plain edge %s → %s in %+v", from, to, gr)
	})

	const query = `topk(1, cluster_infrastructure_provider{_id="",type="AWS"}) or 0 * group(cluster_infrastructure_provider{_id=""})`
	risk := fmt.Sprintf(`apiVersion: release-controller.dev/v1alpha1
kind: UpgradeRisk
metadata:
  name: aws-boot
  namespace: %s
spec:
  stream: nightly
  to: %s
  from: '^2\.0\.0-0\.risk-.*$'
  name: AWSOldBootImages
  message: Clusters on AWS boot new nodes from images that cannot read the new ignition config.
  url: https://issues.example.com/browse/OCPBUGS-1234
  matchingRules:
    - {type: PromQL, promql: {promql: '%s'}}
`, ns, to, query)
	// Timed from kubectl's start (an upper bound: kubectl's own start-up is in it) and from its
	// return (a lower bound: the API server may have told the api before kubectl exited).
	started := time.Now()
	kubectlRun(t, risk, "apply", "-f", "-")
	returned := time.Now()
	var served graph
	waitGraphEvery(t, "", 10*time.Millisecond, func(g Gomega, gr graph) {
		g.Expect(gr.conditional(from, to)).NotTo(BeNil(), "no conditional edge %s → %s", from, to)
		served = gr
	})
	seen := time.Now()
	t.Logf("FIGURE: a risk applied with kubectl was served by /graph as a conditional edge %s after kubectl started, %s after it returned (polling every 10ms)",
		seen.Sub(started).Round(time.Millisecond), seen.Sub(returned).Round(time.Millisecond))

	g := NewWithT(t)
	g.Expect(served.edge(from, to)).To(BeFalse(), "the conditional edge is also a plain edge")
	c := served.conditional(from, to)
	g.Expect(c.Risks).To(ConsistOf(cincinnatiRisk{
		URL: "https://issues.example.com/browse/OCPBUGS-1234", Name: "AWSOldBootImages",
		Message:       "Clusters on AWS boot new nodes from images that cannot read the new ignition config.",
		MatchingRules: []v1alpha1.MatchingRule{{Type: v1alpha1.MatchingRulePromQL, PromQL: &v1alpha1.PromQLRule{PromQL: query}}},
	}))
	// Both ends are nodes of the answer, their pages under the api's --public-url.
	for _, v := range []string{from, to} {
		n, ok := served.node(v)
		g.Expect(ok).To(BeTrue(), "no node %s", v)
		g.Expect(n.Metadata).To(HaveKeyWithValue("url", server+"/namespaces/"+ns+"/releasestream/nightly/release/"+v))
	}

	kubectlRun(t, "", "delete", "upgraderisk", "-n", ns, "aws-boot")
	waitGraph(t, "", func(g Gomega, gr graph) {
		g.Expect(gr.conditional(from, to)).To(BeNil())
		g.Expect(gr.edge(from, to)).To(BeTrue(), "the edge is not plain again")
	})
}

// TestFeederPromotesAfterItsDelay: an accepted payload joins the channel fast at once and not
// stable, whose feeder from fast waits an hour; once the delay is shortened to end a few
// seconds from now, the payload is served in stable when that time comes, with no other change.
func TestFeederPromotesAfterItsDelay(t *testing.T) {
	ns := env.Namespace(t)
	const prefix = "2.1.0-0.channels"
	channels := func(delay time.Duration) *v1alpha1.UpdateService {
		return &v1alpha1.UpdateService{Channels: []v1alpha1.UpdateChannel{
			{Name: "fast", Versions: `^2\.1\.0-0\.channels-.*$`},
			{Name: "stable", Feeders: []v1alpha1.ChannelFeeder{{From: "fast", Delay: metav1.Duration{Duration: delay}}}},
		}}
	}
	s := newStream(t, ns, prefix, channels(time.Hour))
	publish(t, ns, "api", "r1")
	p := accepted(t, ns, 1)[0]
	acceptedAt := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadAccepted).LastTransitionTime.Time

	waitGraph(t, "fast", func(g Gomega, gr graph) {
		n, ok := gr.node(p.Name)
		g.Expect(ok).To(BeTrue(), "%s is not in fast", p.Name)
		g.Expect(n.Metadata).To(HaveKeyWithValue(metaChannels, "fast"))
	})
	stable, err := readGraph("stable")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stable.node(p.Name); ok {
		t.Fatalf("%s is in stable right after its acceptance, with an hour's delay from fast", p.Name)
	}

	// A delay that ends 5 s from now: the promotion is still to come when the stream changes,
	// so it is the feeder's time, not the change, that brings it.
	due := time.Now().Add(5 * time.Second)
	delay := due.Sub(acceptedAt).Round(time.Second)
	patch := fmt.Appendf(nil, `{"spec":{"updateService":{"channels":[{"name":"fast","versions":"^2\\.1\\.0-0\\.channels-.*$"},{"name":"stable","feeders":[{"from":"fast","delay":%q}]}]}}}`, delay)
	if err := env.Client.Patch(context.Background(), s, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	waitGraph(t, "stable", func(g Gomega, gr graph) {
		n, ok := gr.node(p.Name)
		g.Expect(ok).To(BeTrue(), "%s is not in stable", p.Name)
		g.Expect(n.Metadata).To(HaveKeyWithValue(metaChannels, "fast,stable"))
	})
	t.Logf("FIGURE: promoted into stable %s after the feeder's delay ended", time.Since(acceptedAt.Add(delay)).Round(time.Millisecond))
}

// TestTombstoneKeepsTheNodeAndDropsItsIncomingEdges tombstones the target of a tested upgrade
// with `release-controller payload tombstone`: the payload controller records when, and /graph
// keeps the payload's node in its channel (clusters on it still find it) while serving no
// upgrade into it; undone, the edge comes back.
func TestTombstoneKeepsTheNodeAndDropsItsIncomingEdges(t *testing.T) {
	ns := env.Namespace(t)
	newStream(t, ns, "2.2.0-0.tombstone", &v1alpha1.UpdateService{Channels: []v1alpha1.UpdateChannel{{Name: "candidate-2.2", Versions: `^2\.2\..*$`}}})
	from, to := twoAccepted(t, ns)
	waitGraph(t, "candidate-2.2", func(g Gomega, gr graph) {
		g.Expect(gr.edge(from, to)).To(BeTrue(), "no edge %s → %s in %+v", from, to, gr)
	})

	out, err := exec.Command(binary, "payload", "tombstone", to, "-n", ns, "--kubeconfig", kubeconfig, "--reason", "loses etcd data on upgrade").CombinedOutput()
	if err != nil {
		t.Fatalf("payload tombstone: %v\n%s", err, out)
	}
	waitGraph(t, "candidate-2.2", func(g Gomega, gr graph) {
		n, ok := gr.node(to)
		g.Expect(ok).To(BeTrue(), "the tombstoned %s lost its node", to)
		g.Expect(n.Metadata).To(HaveKeyWithValue(metaRemoveRegex, ".*"))
		g.Expect(n.Metadata).To(HaveKeyWithValue(metaChannels, "candidate-2.2"))
		_, ok = gr.node(from)
		g.Expect(ok).To(BeTrue())
		g.Expect(gr.into(to)).To(BeEmpty(), "edges into the tombstoned %s", to)
	})
	var p v1alpha1.ReleasePayload
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: to}, &p)).To(Succeed())
		c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionPayloadTombstoned)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Message).To(Equal("loses etcd data on upgrade"))
	}).WithTimeout(waitTimeout).Should(Succeed())

	if out, err := exec.Command(binary, "payload", "tombstone", to, "-n", ns, "--kubeconfig", kubeconfig, "--undo").CombinedOutput(); err != nil {
		t.Fatalf("payload tombstone --undo: %v\n%s", err, out)
	}
	waitGraph(t, "candidate-2.2", func(g Gomega, gr graph) {
		g.Expect(gr.edge(from, to)).To(BeTrue(), "the edge into %s did not come back", to)
		n, _ := gr.node(to)
		g.Expect(n.Metadata).NotTo(HaveKey(metaRemoveRegex))
	})
}

// publish pushes a new build of component for linux/amd64, labelled with its source and
// revision as a CI system would.
func publish(t *testing.T, ns, component, revision string) {
	t.Helper()
	img := releaseimagetest.Image(t, "amd64", map[string]string{
		releaseimage.LabelSource:   "https://git.example.com/" + component,
		releaseimage.LabelRevision: revision,
	})
	ref, err := name.NewTag(reg.Addr() + "/" + ns + "/" + component + ":latest")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing %s: %v", ref, err)
	}
}

// upgradeScript is the upgrade verification: it passes, from the previous accepted payload.
const upgradeScript = `echo "upgrade from $RELEASE_IMAGE_INITIAL to $RELEASE_TAG"`

// newStream creates the stream "nightly" of ns: one component, api, and an upgrade
// verification from the previous accepted payload. Every test has its own tag prefix: /graph
// serves the versions of every namespace, and a version once.
func newStream(t *testing.T, ns, tagPrefix string, updates *v1alpha1.UpdateService) *v1alpha1.ReleaseStream {
	t.Helper()
	s := &v1alpha1.ReleaseStream{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nightly"},
		Spec: v1alpha1.ReleaseStreamSpec{
			TagPrefix:          tagPrefix,
			PayloadRepository:  reg.Addr() + "/" + ns + "/release",
			Components:         []v1alpha1.ComponentSource{{Name: "api", Image: reg.Addr() + "/" + ns + "/api:latest"}},
			MaxUnreadyReleases: 1,
			UpdateService:      updates,
			Verification: []v1alpha1.Verification{{Name: "upgrade", UpgradeFrom: v1alpha1.UpgradeFromPrevious, Job: &v1alpha1.JobBackend{
				Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To[int32](0),
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "upgrade", Image: "tests", Command: []string{"sh", "-c", upgradeScript}}},
					}},
				}},
			}}},
		},
	}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatalf("creating the stream: %v", err)
	}
	return s
}

// accepted waits until ns holds count payloads, all Accepted, and returns them newest first.
func accepted(t *testing.T, ns string, count int) []v1alpha1.ReleasePayload {
	t.Helper()
	var list v1alpha1.ReleasePayloadList
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(count))
		for _, p := range list.Items {
			g.Expect(p.Status.Phase).To(Equal(v1alpha1.PhaseAccepted), "payload %s: %+v", p.Name, p.Status.Conditions)
		}
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	stream.NewestFirst(list.Items)
	return list.Items
}

// twoAccepted publishes two builds of api, one after the other's payload is accepted, and
// returns the two payloads' versions: the second's upgrade from the first passed.
func twoAccepted(t *testing.T, ns string) (from, to string) {
	t.Helper()
	publish(t, ns, "api", "r1")
	accepted(t, ns, 1)
	publish(t, ns, "api", "r2")
	list := accepted(t, ns, 2)
	runs := list[0].Status.Verifications[0].Runs
	if len(runs) == 0 || runs[0].UpgradeFrom != list[1].Name || runs[0].State != v1alpha1.JobSuccess {
		t.Fatalf("payload %s was not upgraded from %s: %+v", list[0].Name, list[1].Name, runs)
	}
	return list[1].Name, list[0].Name
}

// kubectlRun runs envtest's kubectl with args against the test API server, stdin on its input.
func kubectlRun(t *testing.T, stdin string, args ...string) {
	t.Helper()
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// graph is /graph's answer as a Cincinnati client reads it.
type graph struct {
	Version          int                `json:"version"`
	Nodes            []node             `json:"nodes"`
	Edges            [][2]int           `json:"edges"`
	ConditionalEdges []conditionalEdges `json:"conditionalEdges"`
}

type node struct {
	Version  string            `json:"version"`
	Payload  string            `json:"payload"`
	Metadata map[string]string `json:"metadata"`
}

type conditionalEdges struct {
	Edges []struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"edges"`
	Risks []cincinnatiRisk `json:"risks"`
}

type cincinnatiRisk struct {
	URL           string                  `json:"url"`
	Name          string                  `json:"name"`
	Message       string                  `json:"message"`
	MatchingRules []v1alpha1.MatchingRule `json:"matchingRules"`
}

func (gr graph) node(version string) (node, bool) {
	for _, n := range gr.Nodes {
		if n.Version == version {
			return n, true
		}
	}
	return node{}, false
}

// edge says whether the plain edges hold from → to.
func (gr graph) edge(from, to string) bool {
	for _, e := range gr.Edges {
		if gr.Nodes[e[0]].Version == from && gr.Nodes[e[1]].Version == to {
			return true
		}
	}
	return false
}

// conditional is the conditional edges' entry holding from → to, or nil.
func (gr graph) conditional(from, to string) *conditionalEdges {
	for i, c := range gr.ConditionalEdges {
		for _, e := range c.Edges {
			if e.From == from && e.To == to {
				return &gr.ConditionalEdges[i]
			}
		}
	}
	return nil
}

// into lists the versions with an edge, plain or conditional, into version.
func (gr graph) into(version string) []string {
	var from []string
	for _, e := range gr.Edges {
		if gr.Nodes[e[1]].Version == version {
			from = append(from, gr.Nodes[e[0]].Version)
		}
	}
	for _, c := range gr.ConditionalEdges {
		for _, e := range c.Edges {
			if e.To == version {
				from = append(from, e.From)
			}
		}
	}
	return from
}

// readGraph asks /graph for channel as a Cincinnati client does, and checks the answer is the
// version 1 document it asked for.
func readGraph(channel string) (graph, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/graph?channel="+url.QueryEscape(channel), nil)
	if err != nil {
		return graph{}, err
	}
	req.Header.Set("Accept", cincinnatiV1)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return graph{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return graph{}, err
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != cincinnatiV1 {
		return graph{}, fmt.Errorf("GET /graph?channel=%s: %s (%s): %s", channel, resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var gr graph
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&gr); err != nil {
		return graph{}, fmt.Errorf("/graph?channel=%s: %w", channel, err)
	}
	if gr.Version != 1 {
		return graph{}, fmt.Errorf("/graph?channel=%s answered version %d", channel, gr.Version)
	}
	return gr, nil
}

// waitGraph waits until check passes on /graph?channel=channel.
func waitGraph(t *testing.T, channel string, check func(g Gomega, gr graph)) {
	t.Helper()
	waitGraphEvery(t, channel, 200*time.Millisecond, check)
}

func waitGraphEvery(t *testing.T, channel string, every time.Duration, check func(g Gomega, gr graph)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		gr, err := readGraph(channel)
		g.Expect(err).NotTo(HaveOccurred())
		check(g, gr)
	}).WithTimeout(waitTimeout).WithPolling(every).Should(Succeed(), func() string { return "the api's log:\n" + api.Tail(20) })
}
