//go:build !unit

package tenancy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/release-controller/release-controller/api/v1alpha1"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/releaselog"
	"github.com/release-controller/release-controller/internal/testbinary"
)

// directAccount is an account of tenant A that may write ReleaseLog objects directly, the grant
// docs/security.md says not to give a tenant; here it shows what such a writer still cannot do.
const directAccount = "direct-log-writer"

// TestAttackReleaseLog: tenant A's CI adds an entry through the API (AddRelease, which the
// samples' releaselog-writer Role allows): it is A's, verified. A second account of A's, one
// that may write ReleaseLog objects directly but lacks create on releaselogs/entries, then
// tries what issue 33 found: a day dated 2100 (and a day long past, a day that does not exist,
// an entry dated off its day), each refused at admission naming the field and the rule; an
// entry written directly today in the controller's name, admitted but shown on /releases and in
// ListReleases as "unverified: release-controller", never as the controller's; and AddRelease,
// refused with 403 naming the permission it lacks.
func TestAttackReleaseLog(t *testing.T) {
	ctx := context.Background()
	g := NewWithT(t)
	a := rc.a
	since := time.Now()

	// A's CI, through the API.
	out, err := runCLI("log", "add", "--server", rc.server, "--token-file", a.tokenFile,
		"--type", "hotfix", "--version", "tenant-a-hotfix-1", "--message", "added by tenant a's CI")
	g.Expect(err).NotTo(HaveOccurred(), "log add: %s", out)

	// The direct writer: the administrator gave it ReleaseLog objects, not entries.
	direct, directTokenFile := directWriter(t, a)

	today := time.Now().UTC()
	day := releaselog.DayOf(today)
	entry := func(version string, at time.Time) v1alpha1.ReleaseLogEntry {
		return v1alpha1.ReleaseLogEntry{Type: "release", Version: version, Origin: "release-controller", Author: "release-controller",
			Message: "written directly", Date: metav1.NewTime(at)}
	}
	for _, tc := range []struct {
		name  string
		entry v1alpha1.ReleaseLogEntry
		want  string
	}{
		{"release-2100-01-01", entry("forged-2100", time.Date(2100, 1, 1, 12, 0, 0, 0, time.UTC)),
			"metadata.name: release-2100-01-01 is a day in the future: a day may be created once it has begun"},
		{"release-9999-12-31", entry("forged-9999", time.Date(9999, 12, 31, 12, 0, 0, 0, time.UTC)),
			"metadata.name: release-9999-12-31 is a day in the future"},
		{"release-2000-01-01", entry("forged-2000", time.Date(2000, 1, 1, 12, 0, 0, 0, time.UTC)),
			"metadata.name: release-2000-01-01 is older than the release log keeps"},
		{"release-2026-02-30", entry("forged-feb-30", time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)),
			"metadata.name: release-2026-02-30 does not name a real UTC day"},
		// Yesterday's object (it may exist already: created, or appended to) with an entry
		// dated 2100.
		{releaselog.ObjectName(releaselog.DayOf(today.Add(-24 * time.Hour))), entry("forged-off-day", time.Date(2100, 1, 1, 12, 0, 0, 0, time.UTC)),
			"spec.entries[*].date: every entry of " + releaselog.ObjectName(releaselog.DayOf(today.Add(-24*time.Hour))) + " must be dated on"},
	} {
		err := writeEntry(ctx, direct, tc.name, tc.entry)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: written with %v, want it refused as invalid saying %q", tc.name, err, tc.want)
		}
	}

	// Today, in the controller's name: admitted, shown as unverified.
	g.Expect(writeEntry(ctx, direct, releaselog.ObjectName(day), entry("forged-today", time.Now().UTC()))).To(Succeed())
	g.Eventually(func(g Gomega) {
		releases := listReleases(g, day)
		g.Expect(releases).To(ContainElement(SatisfyAll(
			HaveField("Version", "forged-today"), HaveField("Author", "unverified: release-controller"), HaveField("Verified", false))))
		g.Expect(releases).To(ContainElement(SatisfyAll(
			HaveField("Version", "tenant-a-hotfix-1"), HaveField("Author", a.username()), HaveField("Verified", true))))
		page, err := testbinary.Get(ctx, rc.server+"/releases?day="+day)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(page).To(ContainSubstring("unverified: release-controller"))
	}).WithTimeout(waitTimeout).WithPolling(200 * time.Millisecond).Should(Succeed())

	// AddRelease without create on releaselogs/entries.
	out, err = runCLI("log", "add", "--server", rc.server, "--token-file", directTokenFile,
		"--type", "hotfix", "--version", "forged-api", "--message", "added without the permission")
	g.Expect(err).To(HaveOccurred(), "log add without create releaselogs/entries: %s", out)
	mustContainAll(t, "log add's refusal", out, "permission_denied", "create releaselogs/entries", logNamespace)
	checkNothingOutside(t, since, a)
}

// directWriter makes tenant A's account directAccount, lets it write ReleaseLog objects in the
// log's namespace (and nothing else), and returns a client acting as it and a file holding
// its token.
func directWriter(t *testing.T, a *tenant) (client.Client, string) {
	t.Helper()
	ctx := context.Background()
	g := NewWithT(t)
	g.Expect(createObject(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: a.namespace, Name: directAccount}})).To(Succeed())
	g.Expect(createObject(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: logNamespace, Name: directAccount},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"releaselogs"},
			Verbs: []string{"get", "create", "update", "patch"}}}})).To(Succeed())
	g.Expect(createObject(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: logNamespace, Name: directAccount},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: directAccount},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: a.namespace, Name: directAccount}}})).To(Succeed())
	cs, err := kubernetes.NewForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	tok, err := token(ctx, cs, a.namespace, directAccount)
	g.Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(workDir, directAccount+".token")
	g.Expect(os.WriteFile(file, []byte(tok), 0o600)).To(Succeed())
	c, err := client.New(&rest.Config{Host: env.Config.Host, BearerToken: tok, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}},
		client.Options{Scheme: manager.NewScheme()})
	g.Expect(err).NotTo(HaveOccurred())
	return c, file
}

// writeEntry appends e to the ReleaseLog name with c, creating the object when it is missing:
// a direct write, as kubectl would make it.
func writeEntry(ctx context.Context, c client.Client, name string, e v1alpha1.ReleaseLogEntry) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var l v1alpha1.ReleaseLog
		err := c.Get(ctx, types.NamespacedName{Namespace: logNamespace, Name: name}, &l)
		if apierrors.IsNotFound(err) {
			l = v1alpha1.ReleaseLog{ObjectMeta: metav1.ObjectMeta{Namespace: logNamespace, Name: name},
				Spec: v1alpha1.ReleaseLogSpec{Entries: []v1alpha1.ReleaseLogEntry{e}}}
			return c.Create(ctx, &l)
		}
		if err != nil {
			return err
		}
		l.Spec.Entries = append(l.Spec.Entries, e)
		return c.Update(ctx, &l)
	})
}

// listedRelease is what the test reads of ListReleases' entries (Connect's JSON).
type listedRelease struct {
	Version  string `json:"version"`
	Author   string `json:"author"`
	Verified bool   `json:"verified"`
}

// listReleases lists day's entries with the Connect API's JSON, as any client may.
func listReleases(g Gomega, day string) []listedRelease {
	body, err := json.Marshal(map[string]any{"day": day, "pageSize": 1000})
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.Post(rc.server+"/releasecontroller.v1.ReleaseService/ListReleases", "application/json", bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), "ListReleases: %s", data)
	var out struct {
		Releases []listedRelease `json:"releases"`
	}
	g.Expect(json.Unmarshal(data, &out)).To(Succeed(), fmt.Sprintf("ListReleases: %s", data))
	return out.Releases
}
