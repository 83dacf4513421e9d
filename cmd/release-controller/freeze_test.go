//go:build !unit

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
)

// TestFreezeCommands starts, lists and ends freezes as a release team would: a stop-the-line
// of a namespace's prod, a cluster freeze of some pipelines for a while; an end is kept for the
// record, and what cannot work is refused before anything is written.
func TestFreezeCommands(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	env.StartFreezes(t, env.Namespace(t))
	ns := env.Namespace(t)
	kubeconfig := writeKubeconfig(t)
	cli := func(args ...string) (string, error) {
		return run(t, append(args, "--kubeconfig", kubeconfig)...)
	}

	out, err := cli("freeze", "start", "incident-42", "-n", ns, "--reason", "payments down", "--environments", "prod")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("✔ freeze " + ns + "/incident-42 started: payments down; every pipeline, environments prod, until `release-controller freeze end " + ns + "/incident-42`\n"))
	var line v1alpha1.ReleaseFreeze
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "incident-42"}, &line)).To(Succeed())
	g.Expect(line.Spec).To(Equal(v1alpha1.ReleaseFreezeSpec{Reason: "payments down", Environments: []string{"prod"}}))

	cluster := "release-day-" + ns
	before := time.Now()
	out, err = cli("freeze", "start", cluster, "--cluster", "--reason", "launch", "--pipelines", "team in (web,api)", "--for", "2h")
	g.Expect(err).NotTo(HaveOccurred(), out)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &v1alpha1.ClusterReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
	})
	var day v1alpha1.ClusterReleaseFreeze
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: cluster}, &day)).To(Succeed())
	g.Expect(day.Spec.End.Time).To(BeTemporally("~", before.Add(2*time.Hour), 5*time.Second))
	g.Expect(day.Spec.Pipelines.MatchExpressions).To(Equal([]metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"api", "web"}}}))
	g.Expect(out).To(HavePrefix("✔ freeze " + cluster + " started: launch; the pipelines team in (api,web), every environment, until "))

	// Refused before anything is written.
	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"freeze", "start", "incident-42", "-n", ns, "--reason", "again"}, "freeze " + ns + "/incident-42 exists"},
		{[]string{"freeze", "start", "x", "-n", ns}, "--reason is required"},
		{[]string{"freeze", "start", "x", "-n", ns, "--reason", "r", "--until", "2020-01-01T00:00:00Z"}, "--until 2020-01-01T00:00:00Z has passed"},
		{[]string{"freeze", "start", "x", "-n", ns, "--reason", "r", "--until", "tomorrow"}, "--until is a time in RFC 3339"},
		{[]string{"freeze", "start", "x", "-n", ns, "--reason", "r", "--until", "2099-01-01T00:00:00Z", "--for", "1h"}, "none of the others can be"},
		{[]string{"freeze", "start", "x", "-n", ns, "--reason", "r", "--pipelines", "team in web"}, "--pipelines: "},
		{[]string{"freeze", "start", "x", "--cluster", "-n", ns, "--reason", "r"}, "a ClusterReleaseFreeze has a name and no namespace"},
		{[]string{"freeze", "end", "nothing", "-n", ns}, "freeze " + ns + "/nothing not found"},
	} {
		out, err := cli(bad.args...)
		if err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%q: %v, want an error saying %q\n%s", bad.args, err, bad.says, out)
		}
	}
	var all v1alpha1.ReleaseFreezeList
	g.Expect(env.Client.List(ctx, &all, client.InNamespace(ns))).To(Succeed())
	g.Expect(all.Items).To(HaveLen(1), "a refused command wrote a freeze")

	// The controller says both are active; list shows it.
	g.Eventually(func(g Gomega) {
		out, err := cli("freeze", "list", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`(?m)^` + ns + `/incident-42 +active +\S+Z +- +- +every pipeline, environments prod +payments down$`))
		g.Expect(out).To(MatchRegexp(`(?m)^` + cluster + ` \(cluster\) +active +\S+Z +\S+Z +- +the pipelines team in \(api,web\), every environment +launch$`))
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

	// Ended: its end is now, the object stays, the controller says it ended.
	out, err = cli("freeze", "end", ns+"/incident-42")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`^✔ freeze ` + ns + `/incident-42 ended at \S+Z: payments down; it stays for the record\n$`))
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "incident-42"}, &line)).To(Succeed())
	g.Expect(line.Spec.End).NotTo(BeNil())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "incident-42"}, &line)).To(Succeed())
		c := meta.FindStatusCondition(line.Status.Conditions, v1alpha1.ConditionFreezeActive)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(v1alpha1.ReasonFreezeEnded))
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	out, err = cli("freeze", "list", "-n", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`(?m)^` + ns + `/incident-42 +ended `))
	_, err = cli("freeze", "end", "incident-42", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring("ended at")))

	// A recurring freeze is ended by editing its schedule, not by `freeze end`.
	weekend := &v1alpha1.ReleaseFreeze{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "weekend"},
		Spec: v1alpha1.ReleaseFreezeSpec{Reason: "weekend", Schedule: &v1alpha1.FreezeSchedule{
			Cron: "0 18 * * 5", Duration: metav1.Duration{Duration: 63 * time.Hour}, TimeZone: "Europe/Berlin"}}}
	g.Expect(env.Client.Create(ctx, weekend)).To(Succeed())
	_, err = cli("freeze", "end", "weekend", "-n", ns)
	g.Expect(err).To(MatchError(ContainSubstring(`freeze ` + ns + `/weekend recurs ("0 18 * * 5" in Europe/Berlin)`)))
	g.Eventually(func(g Gomega) {
		out, err := cli("freeze", "list", "-n", ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`(?m)^` + ns + `/weekend +(scheduled|active) `))
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

	// The cluster freeze ended with --cluster.
	out, err = cli("freeze", "end", cluster, "--cluster")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: cluster}, &day)).To(Succeed())
	g.Expect(day.Spec.End.Time).To(BeTemporally("<=", time.Now()))
}
