//go:build !unit

package approval_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/eventlog"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/server/approval"
)

// route is a replica whose approvals and rejections are reported: Events into a fake
// recorder, release log entries into namespace logNS.
type route struct {
	*replica
	events *events.FakeRecorder
	logNS  string
}

func startRoute(t *testing.T) *route {
	t.Helper()
	r := &route{events: events.NewFakeRecorder(100), logNS: env.Namespace(t)}
	r.replica = startReplicaWith(t, "", func(h *approval.Handler) {
		h.Report = eventlog.Recorder{Events: r.events}
		h.Log = releaselog.NewWriter(env.Client, env.Client, releaselog.Options{Namespace: r.logNS})
	})
	return r
}

// nextEvent is the Event the last request recorded (the fake recorder records synchronously).
func (r *route) nextEvent(t *testing.T) string {
	t.Helper()
	select {
	case e := <-r.events.Events:
		return e
	default:
		t.Fatal("no Event was recorded")
		return ""
	}
}

// entries are today's release log entries of the route, as "type version author: message".
func (r *route) entries(t *testing.T) []string {
	t.Helper()
	var l v1alpha1.ReleaseLog
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: r.logNS, Name: releaselog.ObjectName(releaselog.DayOf(time.Now()))}, &l)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range l.Spec.Entries {
		out = append(out, e.Type+" "+e.Version+" "+e.Author+": "+e.Message)
	}
	return out
}

// approverToken makes the ServiceAccount namespace/name, lets it approve the pipelines of
// pipelineNS (update pipelines/approval) and returns a token of it once RBAC allows it.
func approverToken(t *testing.T, namespace, name, pipelineNS string) string {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	g.Expect(env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})).To(Succeed())
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNS, Name: "approver-" + namespace + "-" + name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"pipelines/approval"}, Verbs: []string{"update"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: pipelineNS, Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}}}
	g.Expect(env.Client.Create(ctx, role)).To(Succeed())
	g.Expect(env.Client.Create(ctx, binding)).To(Succeed())
	// The route caches a denial: ask the API server itself until the binding is in force.
	g.Eventually(func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: approval.ServiceAccountUser(namespace, name), Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: pipelineNS, Verb: "update", Group: v1alpha1.GroupVersion.Group,
				Resource: "pipelines", Subresource: "approval", Name: "web"}}}
		return env.Client.Create(ctx, sar) == nil && sar.Status.Allowed
	}).WithTimeout(waitTimeout).Should(BeTrue())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// answer is what the route answered a request.
type answer struct {
	code     int
	msg      string
	approved *approval.Response
	rejected *approval.RejectResponse
}

// approve sends req's approval to r; reject (reason not empty) its rejection.
func (r *route) approve(t *testing.T, req approval.Request) answer {
	t.Helper()
	req.Server = r.URL
	resp, err := req.Send(context.Background(), http.DefaultClient)
	return toAnswer(t, err, answer{approved: resp})
}

func (r *route) reject(t *testing.T, req approval.Request, reason string) answer {
	t.Helper()
	req.Server = r.URL
	resp, err := req.Reject(context.Background(), http.DefaultClient, reason)
	return toAnswer(t, err, answer{rejected: resp})
}

func toAnswer(t *testing.T, err error, a answer) answer {
	t.Helper()
	var se *approval.StatusError
	switch {
	case err == nil:
		a.code = http.StatusOK
	case errors.As(err, &se):
		a.code, a.msg = se.Code, se.Message
	default:
		t.Fatalf("sending the request: %v", err)
	}
	return a
}

// as is req sent with the bearer token token.
func as(req approval.Request, token string) approval.Request {
	req.Token = token
	return req
}

// once sends until the route's cache has the pipeline (404 until then) and returns the first
// other answer.
func once(t *testing.T, send func() answer) answer {
	t.Helper()
	var a answer
	NewWithT(t).Eventually(func() int { a = send(); return a.code }).WithTimeout(waitTimeout).ShouldNot(Equal(http.StatusNotFound))
	return a
}

// prodStatus is the live status of p's environment prod.
func prodStatus(t *testing.T, p *v1alpha1.Pipeline) v1alpha1.EnvironmentStatus {
	t.Helper()
	var got v1alpha1.Pipeline
	NewWithT(t).Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(p), &got)).To(Succeed())
	for _, e := range got.Status.Environments {
		if e.Name == "prod" {
			return e
		}
	}
	t.Fatal("no status of prod")
	return v1alpha1.EnvironmentStatus{}
}

// Two distinct approvers are needed under minApprovers: 2; the same person twice is refused
// (409) and changes nothing; the second approval sets policyMet in the same write, and a
// third is refused. Without approval.secretRef a signed approval is refused naming the field
// (it used to dereference the absent reference). Each approval is an Event and a release log
// entry with the approvers' names.
func TestTwoDistinctApprovers(t *testing.T) {
	g := NewWithT(t)
	p := setup(t, []byte("unused"), "2", func(p *v1alpha1.Pipeline) {
		p.Spec.Environments[1].Approval = &v1alpha1.Approval{MinApprovers: 2}
	})
	alice, bob, carol := approverToken(t, p.Namespace, "alice", p.Namespace), approverToken(t, p.Namespace, "bob", p.Namespace),
		approverToken(t, p.Namespace, "carol", p.Namespace)
	aliceName, bobName := approval.ServiceAccountUser(p.Namespace, "alice"), approval.ServiceAccountUser(p.Namespace, "bob")
	r := startRoute(t)
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "prod", Revision: "2"}

	a := once(t, func() answer { return r.approve(t, as(req, alice)) })
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)
	g.Expect(a.approved.Approvers).To(Equal([]string{aliceName}))
	g.Expect(a.approved.MinApprovers).To(Equal(2))
	g.Expect(a.approved.PolicyMet).To(BeNil())
	g.Expect(r.nextEvent(t)).To(Equal("Normal " + v1alpha1.EventApproved + " " + aliceName + " approved 2 for prod: 1 of 2 approvals, 1 more needed"))
	rec := prodStatus(t, p).Approval
	g.Expect(rec).NotTo(BeNil())
	g.Expect(rec.Approvers).To(HaveLen(1))
	g.Expect(rec.PolicyMet).To(BeNil())

	a = r.approve(t, as(req, alice))
	g.Expect(a.code).To(Equal(http.StatusConflict))
	g.Expect(a.msg).To(ContainSubstring(aliceName + ` approved revision 2 of environment "prod" already`))
	g.Expect(prodStatus(t, p).Approval.Approvers).To(HaveLen(1), "a refused approval changes nothing")

	signed := req
	signed.Key = []byte("unused")
	a = r.approve(t, signed)
	g.Expect(a.code).To(Equal(http.StatusForbidden))
	g.Expect(a.msg).To(ContainSubstring(`environment "prod" has no approval.secretRef`))
	g.Expect(r.keys.reads.Load()).To(BeZero(), "no key is read for an environment without one")

	a = r.approve(t, as(req, bob))
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)
	g.Expect(a.approved.Approvers).To(Equal([]string{aliceName, bobName}))
	g.Expect(a.approved.PolicyMet).NotTo(BeNil())
	rec = prodStatus(t, p).Approval
	g.Expect(rec.PolicyMet).NotTo(BeNil())
	g.Expect(rec.PolicyMet.Time).To(Equal(rec.Time.Time))
	g.Expect(rec.Approver).To(Equal(bobName), "the approver whose approval met the policy")
	g.Expect(r.nextEvent(t)).To(Equal("Normal " + v1alpha1.EventApprovalPolicyMet + " " + bobName +
		" approved 2 for prod: the approval policy is met (2 of 2: " + aliceName + ", " + bobName + ")"))

	a = r.approve(t, as(req, carol))
	g.Expect(a.code).To(Equal(http.StatusConflict))
	g.Expect(a.msg).To(ContainSubstring("is approved already"))

	g.Expect(r.entries(t)).To(Equal([]string{
		"approval 2 " + aliceName + ": pipeline " + p.Namespace + "/web: " + aliceName + " approved 2 for prod: 1 of 2 approvals, 1 more needed",
		"approval 2 " + bobName + ": pipeline " + p.Namespace + "/web: " + bobName + " approved 2 for prod: the approval policy is met (2 of 2: " + aliceName + ", " + bobName + ")",
	}))

	// A new revision starts a new record.
	wait(t, p, "3")
	req.Revision = "3"
	a = r.approve(t, as(req, carol))
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)
	rec = prodStatus(t, p).Approval
	g.Expect(rec.Revision).To(Equal("3"))
	g.Expect(rec.Approvers).To(HaveLen(1))
	g.Expect(rec.PolicyMet).To(BeNil())
}

// approval.users and approval.groups admit the users they name (from the TokenReview) and
// nobody else, whatever RBAC allows; a signed approval never counts under them, and is
// refused before the key is read.
func TestPolicyUsersAndGroups(t *testing.T) {
	g := NewWithT(t)
	other := env.Namespace(t)
	p := setup(t, []byte("prod key"), "2", func(p *v1alpha1.Pipeline) {
		p.Spec.Environments[1].Approval.Users = []string{approval.ServiceAccountUser(other, "carol")}
		p.Spec.Environments[1].Approval.Groups = []string{"system:serviceaccounts:" + p.Namespace}
	})
	bob := approverToken(t, p.Namespace, "bob", p.Namespace)
	carol := approverToken(t, other, "carol", p.Namespace)
	mallory := approverToken(t, other, "mallory", p.Namespace)
	r := startRoute(t)
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "prod", Revision: "2"}
	a := once(t, func() answer { return r.approve(t, as(req, mallory)) })
	g.Expect(a.code).To(Equal(http.StatusForbidden), "RBAC allows mallory, the policy does not")
	g.Expect(a.msg).To(ContainSubstring(`user "` + approval.ServiceAccountUser(other, "mallory") + `" is neither in approval.users of environment "prod" nor a member of one of its approval.groups`))
	g.Expect(r.reject(t, as(req, mallory), "I do not like it").code).To(Equal(http.StatusForbidden), "nor may mallory reject")

	signed := req
	signed.Key = []byte("prod key")
	a = r.approve(t, signed)
	g.Expect(a.code).To(Equal(http.StatusForbidden))
	g.Expect(a.msg).To(ContainSubstring("a signed (HMAC) request is a machine"))
	g.Expect(r.keys.reads.Load()).To(BeZero(), "the key is not read for a request the policy refuses")

	a = r.approve(t, as(req, bob))
	g.Expect(a.code).To(Equal(http.StatusOK), "bob is a member of the group: %s", a.msg)
	g.Expect(a.approved.PolicyMet).NotTo(BeNil())

	wait(t, p, "3")
	req.Revision = "3"
	a = r.approve(t, as(req, carol))
	g.Expect(a.code).To(Equal(http.StatusOK), "carol is a user the policy names: %s", a.msg)
	g.Expect(prodStatus(t, p).Approval.Approver).To(Equal(approval.ServiceAccountUser(other, "carol")))
}

// Under separationOfDuties, who approved a revision for the previous environment may not
// approve it for this one; someone else may.
func TestSeparationOfDuties(t *testing.T) {
	g := NewWithT(t)
	p := setup(t, []byte("unused"), "2", func(p *v1alpha1.Pipeline) {
		staging := v1alpha1.Environment{Name: "staging", Targets: []v1alpha1.Target{{Namespace: p.Namespace + "-staging"}}, Approval: &v1alpha1.Approval{}}
		p.Spec.Environments[1].Approval = &v1alpha1.Approval{SeparationOfDuties: true}
		p.Spec.Environments = []v1alpha1.Environment{p.Spec.Environments[0], staging, p.Spec.Environments[1]}
	})
	alice, bob := approverToken(t, p.Namespace, "alice", p.Namespace), approverToken(t, p.Namespace, "bob", p.Namespace)
	r := startRoute(t)
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "staging", Revision: "2", Token: alice}

	waitFor(t, p, map[string]string{"staging": "2"})
	a := once(t, func() answer { return r.approve(t, req) })
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)

	// Staging runs 2 (the controller promoted it); prod waits for it.
	waitFor(t, p, map[string]string{"prod": "2"})
	req.Environment = "prod"
	a = r.approve(t, req)
	g.Expect(a.code).To(Equal(http.StatusForbidden))
	g.Expect(a.msg).To(ContainSubstring(`separation of duties (approval.separationOfDuties of environment "prod"): ` +
		approval.ServiceAccountUser(p.Namespace, "alice") + ` approved revision 2 for the previous environment "staging"`))
	req.Token = bob
	a = r.approve(t, req)
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)
	g.Expect(a.approved.PolicyMet).NotTo(BeNil())
}

// A rejection is recorded with its reason, withdraws the approvals of its revision (the record
// is removed from the status: server-side apply drops what the route no longer applies), and
// the revision can be neither approved nor rejected again. A revision not there yet may be
// rejected too, signed; the signature is refused again. No reason: 400.
func TestRejection(t *testing.T) {
	g := NewWithT(t)
	key := []byte("prod key")
	p := setup(t, key, "2", func(p *v1alpha1.Pipeline) { p.Spec.Environments[1].Approval.MinApprovers = 2 })
	alice, bob := approverToken(t, p.Namespace, "alice", p.Namespace), approverToken(t, p.Namespace, "bob", p.Namespace)
	aliceName, bobName := approval.ServiceAccountUser(p.Namespace, "alice"), approval.ServiceAccountUser(p.Namespace, "bob")
	r := startRoute(t)
	req := approval.Request{Namespace: p.Namespace, Pipeline: p.Name, Environment: "prod", Revision: "2"}
	a := once(t, func() answer { return r.approve(t, as(req, alice)) })
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)
	r.nextEvent(t)

	a = r.reject(t, as(req, bob), "  ")
	g.Expect(a.code).To(Equal(http.StatusBadRequest))
	g.Expect(a.msg).To(ContainSubstring("a rejection needs a reason"))

	a = r.reject(t, as(req, bob), "CVE-2026-1234 in the base image")
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)
	g.Expect(a.rejected.By).To(Equal(bobName))
	g.Expect(a.rejected.Withdrawn).To(Equal([]string{aliceName}))
	st := prodStatus(t, p)
	g.Expect(st.Approval).To(BeNil(), "the approvals of the rejected revision are withdrawn")
	g.Expect(st.Rejections).To(HaveLen(1))
	g.Expect(st.Rejections[0].Revision).To(Equal("2"))
	g.Expect(st.Rejections[0].By).To(Equal(bobName))
	g.Expect(st.Rejections[0].Reason).To(Equal("CVE-2026-1234 in the base image"))
	g.Expect(st.WaitingApproval).NotTo(BeNil(), "the controller's part of the status is left to it")
	g.Expect(r.nextEvent(t)).To(Equal("Warning " + v1alpha1.EventRevisionRejected + " " + bobName +
		" rejected 2 for prod: CVE-2026-1234 in the base image (the approvals of " + aliceName + " are withdrawn)"))

	a = r.approve(t, as(req, alice))
	g.Expect(a.code).To(Equal(http.StatusConflict))
	g.Expect(a.msg).To(ContainSubstring(`revision 2 was rejected for environment "prod" by ` + bobName))
	a = r.reject(t, as(req, alice), "me too")
	g.Expect(a.code).To(Equal(http.StatusConflict))
	g.Expect(a.msg).To(ContainSubstring("already"))

	// Revision 3 is not there yet: rejected ahead, signed. The rejections keep both; the
	// signature is recorded, and refused again.
	signed := req
	signed.Revision, signed.Key = "3", key
	signedAt := time.Now()
	signed.Now = func() time.Time { return signedAt }
	a = r.reject(t, signed, "the canary failed")
	g.Expect(a.code).To(Equal(http.StatusOK), a.msg)
	g.Expect(a.rejected.By).To(Equal("hmac:approvals"))
	st = prodStatus(t, p)
	g.Expect(st.Rejections).To(HaveLen(2))
	g.Expect(st.Rejections[1].Revision).To(Equal("3"))
	g.Expect(st.Approval).NotTo(BeNil())
	g.Expect(st.Approval.UsedSignatures).To(HaveLen(1))
	g.Expect(st.Approval.Approvers).To(BeEmpty())
	g.Expect(st.Approval.Revision).To(BeEmpty(), "a record of used signatures only is of no revision: nothing reads it as an approval")
	a = r.reject(t, signed, "the canary failed")
	g.Expect(a.code).To(Equal(http.StatusConflict))
	g.Expect(a.msg).To(HavePrefix(`revision 3 was rejected for environment "prod" already, by hmac:approvals at `))
	g.Expect(a.msg).To(HaveSuffix("(the canary failed); this request repeats that one: this signature was used already"))
	// The rejection of 2 stays in force, and its approval record did not come back.
	g.Expect(st.Rejections[0].Revision).To(Equal("2"))

	entries := r.entries(t)
	g.Expect(entries).To(HaveLen(3))
	g.Expect(entries[1]).To(Equal("rejection 2 " + bobName + ": pipeline " + p.Namespace + "/web: " + bobName +
		" rejected 2 for prod: CVE-2026-1234 in the base image (the approvals of " + aliceName + " are withdrawn)"))
	g.Expect(entries[2]).To(Equal("rejection 3 hmac:approvals: pipeline " + p.Namespace + "/web: hmac:approvals rejected 3 for prod: the canary failed"))
}

// A rejection's body is one JSON object with a reason and nothing else.
func TestRejectionBody(t *testing.T) {
	g := NewWithT(t)
	p := setup(t, []byte("unused"), "2", func(p *v1alpha1.Pipeline) { p.Spec.Environments[1].Approval = &v1alpha1.Approval{} })
	bob := approverToken(t, p.Namespace, "bob", p.Namespace)
	r := startRoute(t)
	post := func(body string) (int, string) {
		hr, err := http.NewRequest(http.MethodPost, r.URL+"/pipelines/"+p.Namespace+"/web/prod/2/reject", strings.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		hr.Header.Set("Authorization", "Bearer "+bob)
		resp, err := http.DefaultClient.Do(hr)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		var msg strings.Builder
		_, _ = io.Copy(&msg, resp.Body)
		return resp.StatusCode, msg.String()
	}
	var code int
	var msg string
	g.Eventually(func() int { code, msg = post(""); return code }).WithTimeout(waitTimeout).ShouldNot(Equal(http.StatusNotFound))
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(msg).To(ContainSubstring(`a rejection's body is {"reason": "..."}`))
	for _, body := range []string{`{"reason": "x", "by": "alice"}`, `{"reason": "x"} {}`, `"x"`} {
		code, msg = post(body)
		g.Expect(code).To(Equal(http.StatusBadRequest), "%s: %s", body, msg)
	}
	code, msg = post(`{"reason": "` + strings.Repeat("x", approval.MaxReasonLength+1) + `"}`)
	g.Expect(code).To(Equal(http.StatusBadRequest))
	g.Expect(msg).To(ContainSubstring("more than the 1024 a rejection keeps"))
	g.Expect(prodStatus(t, p).Rejections).To(BeEmpty())
}
