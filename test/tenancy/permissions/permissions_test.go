//go:build !unit

// Package permissions checks docs/security.md's "Permissions of each Deployment" against the
// shipped RBAC, both ways, so the page cannot drift from what an install grants.
package permissions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/release-controller/release-controller/internal/testenv"
)

// The section of docs/security.md that lists every permission of each Deployment.
const permissionsSection = "## Permissions of each Deployment"

// Where a grant applies, as docs/security.md's table says it.
const (
	scopeCluster      = "cluster"       // a ClusterRole bound by a ClusterRoleBinding
	scopeOwnNamespace = "own namespace" // a Role, in the namespace the component runs in
	scopePerNamespace = "where bound"   // a ClusterRole bound by RoleBindings, namespace by namespace
	coreGroup         = "core"          // the table's name of the API group ""
	shippedRBACDirs   = "config/rbac, config/components"
)

// A grant is one verb on one resource of one group, through one role bound to one account in
// one scope: a row of the table is one or more of them.
type grant struct {
	Account, Role, Scope, Group, Resource, Verb string
}

func (g grant) String() string {
	group := g.Group
	if group == "" {
		group = coreGroup
	}
	return fmt.Sprintf("%s: %s %s/%s (role %s, %s)", g.Account, g.Verb, group, g.Resource, g.Role, g.Scope)
}

// rbacObjects is what the shipped manifests hold of RBAC.
type rbacObjects struct {
	ClusterRoles        map[string]rbacv1.ClusterRole
	Roles               map[string]rbacv1.Role
	ClusterRoleBindings []rbacv1.ClusterRoleBinding
	RoleBindings        []rbacv1.RoleBinding
}

// readShippedRBAC reads every Role, ClusterRole and binding of the YAML files under the
// module's config/rbac and config/components (what kustomize installs and the chart copies).
func readShippedRBAC(root string) (rbacObjects, error) {
	objs := rbacObjects{ClusterRoles: map[string]rbacv1.ClusterRole{}, Roles: map[string]rbacv1.Role{}}
	for _, dir := range []string{"config/rbac", "config/components"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return decodeRBAC(data, &objs)
		})
		if err != nil {
			return objs, err
		}
	}
	return objs, nil
}

// decodeRBAC adds the RBAC objects of a multi-document YAML file to objs.
func decodeRBAC(data []byte, objs *rbacObjects) error {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw runtime.RawExtension
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(raw.Raw, &meta); err != nil {
			return err
		}
		if !strings.HasPrefix(meta.APIVersion, rbacv1.GroupName+"/") {
			continue
		}
		var err error
		switch meta.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			err = yaml.UnmarshalStrict(raw.Raw, &r)
			objs.ClusterRoles[r.Name] = r
		case "Role":
			var r rbacv1.Role
			err = yaml.UnmarshalStrict(raw.Raw, &r)
			objs.Roles[r.Name] = r
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			err = yaml.UnmarshalStrict(raw.Raw, &b)
			objs.ClusterRoleBindings = append(objs.ClusterRoleBindings, b)
		case "RoleBinding":
			var b rbacv1.RoleBinding
			err = yaml.UnmarshalStrict(raw.Raw, &b)
			objs.RoleBindings = append(objs.RoleBindings, b)
		}
		if err != nil {
			return err
		}
	}
}

// shippedGrants lists what the shipped bindings give each ServiceAccount, and the roles no
// binding uses.
func shippedGrants(objs rbacObjects) (grants []grant, unbound []string, err error) {
	bound := map[string]bool{}
	add := func(subjects []rbacv1.Subject, role, scope string, rules []rbacv1.PolicyRule) {
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				continue
			}
			for _, r := range rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						for _, v := range r.Verbs {
							grants = append(grants, grant{Account: s.Name, Role: role, Scope: scope, Group: g, Resource: res, Verb: v})
						}
					}
				}
			}
		}
	}
	for _, b := range objs.ClusterRoleBindings {
		r, ok := objs.ClusterRoles[b.RoleRef.Name]
		if b.RoleRef.Kind != "ClusterRole" || !ok {
			return nil, nil, fmt.Errorf("ClusterRoleBinding %s binds %s %s, which %s do not hold", b.Name, b.RoleRef.Kind, b.RoleRef.Name, shippedRBACDirs)
		}
		bound["ClusterRole "+r.Name] = true
		add(b.Subjects, r.Name, scopeCluster, r.Rules)
	}
	for _, b := range objs.RoleBindings {
		switch b.RoleRef.Kind {
		case "ClusterRole":
			r, ok := objs.ClusterRoles[b.RoleRef.Name]
			if !ok {
				return nil, nil, fmt.Errorf("RoleBinding %s binds ClusterRole %s, which %s do not hold", b.Name, b.RoleRef.Name, shippedRBACDirs)
			}
			bound["ClusterRole "+r.Name] = true
			add(b.Subjects, r.Name, scopePerNamespace, r.Rules)
		case "Role":
			r, ok := objs.Roles[b.RoleRef.Name]
			if !ok {
				return nil, nil, fmt.Errorf("RoleBinding %s binds Role %s, which %s do not hold", b.Name, b.RoleRef.Name, shippedRBACDirs)
			}
			bound["Role "+r.Name] = true
			add(b.Subjects, r.Name, scopeOwnNamespace, r.Rules)
		}
	}
	for name := range objs.ClusterRoles {
		if !bound["ClusterRole "+name] {
			unbound = append(unbound, "ClusterRole "+name)
		}
	}
	for name := range objs.Roles {
		if !bound["Role "+name] {
			unbound = append(unbound, "Role "+name)
		}
	}
	slices.Sort(unbound)
	return grants, unbound, nil
}

// documentedGrants reads the permission tables of docs/security.md's section
// permissionsSection: under each "### " heading naming a ServiceAccount in backquotes, a table
// whose rows are | role | scope | API group | resources | verbs | why |, resources and verbs
// separated by commas, the group `core` for "". A row without a reason is an error: the
// table is there to say why.
func documentedGrants(doc string) ([]grant, error) {
	start := strings.Index(doc, "\n"+permissionsSection+"\n")
	if start < 0 {
		return nil, fmt.Errorf("no section %q", permissionsSection)
	}
	section := doc[start+len(permissionsSection)+2:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var grants []grant
	account := ""
	for i, line := range strings.Split(section, "\n") {
		where := fmt.Sprintf("%s, line %d of the section", permissionsSection, i+1)
		switch {
		case strings.HasPrefix(line, "### "):
			names := backquoted(line)
			if len(names) == 0 {
				return nil, fmt.Errorf("%s: the heading %q names no ServiceAccount in backquotes", where, line)
			}
			account = names[0]
		case strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			if len(cells) != 6 {
				return nil, fmt.Errorf("%s: want 6 cells (role, scope, API group, resources, verbs, why), have %d: %s", where, len(cells), line)
			}
			if cells[0] == "role" || strings.HasPrefix(cells[0], "---") {
				continue // the header and its rule
			}
			if account == "" {
				return nil, fmt.Errorf("%s: a row before any ### heading naming its ServiceAccount", where)
			}
			role := backquoted(cells[0])
			if len(role) != 1 {
				return nil, fmt.Errorf("%s: the role cell names %d roles in backquotes, want 1: %s", where, len(role), line)
			}
			scope := cells[1]
			if scope != scopeCluster && scope != scopeOwnNamespace && scope != scopePerNamespace {
				return nil, fmt.Errorf("%s: scope %q is none of %q, %q, %q", where, scope, scopeCluster, scopeOwnNamespace, scopePerNamespace)
			}
			group := strings.Trim(cells[2], "`")
			if group == coreGroup {
				group = ""
			}
			resources := backquoted(cells[3])
			verbs := strings.Split(strings.ReplaceAll(cells[4], "`", ""), ",")
			if len(resources) == 0 || cells[5] == "" {
				return nil, fmt.Errorf("%s: a row needs resources in backquotes and a reason: %s", where, line)
			}
			for _, res := range resources {
				for _, v := range verbs {
					grants = append(grants, grant{Account: account, Role: role[0], Scope: scope, Group: group, Resource: res, Verb: strings.TrimSpace(v)})
				}
			}
		}
	}
	return grants, nil
}

// backquoted returns the `quoted` words of s, in order.
func backquoted(s string) []string {
	parts := strings.Split(s, "`")
	var out []string
	for i := 1; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}

// diffGrants returns, sorted, the grants of a that b lacks.
func diffGrants(a, b []grant) []string {
	in := map[grant]bool{}
	for _, g := range b {
		in[g] = true
	}
	var out []string
	for _, g := range a {
		if !in[g] {
			out = append(out, g.String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestPermissionsAreDocumented checks docs/security.md's permission tables against the shipped
// RBAC (the generated roles under config/rbac, the hand-written bindings, and the optional
// components' roles): every verb each ServiceAccount is granted has its row, and every row is
// granted, so the page cannot drift from what is installed. It also checks the rules of
// issue 33 the tables show: no role binds without a reason, and the api's ClusterRole reads
// no Secret.
func TestPermissionsAreDocumented(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := readShippedRBAC(root)
	if err != nil {
		t.Fatal(err)
	}
	shipped, unbound, err := shippedGrants(objs)
	if err != nil {
		t.Fatal(err)
	}
	// The metrics reader is for Prometheus' account, which the administrator binds.
	if unbound = slices.DeleteFunc(unbound, func(r string) bool { return r == "ClusterRole release-controller-metrics-reader" }); len(unbound) > 0 {
		t.Errorf("roles no shipped binding uses (a role nobody holds, or a binding missing): %v", unbound)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented, err := documentedGrants(string(doc))
	if err != nil {
		t.Fatalf("docs/security.md: %v", err)
	}
	if missing := diffGrants(shipped, documented); len(missing) > 0 {
		t.Errorf("granted by %s but not in docs/security.md's %q (add a row saying why):\n  %s", shippedRBACDirs, permissionsSection, strings.Join(missing, "\n  "))
	}
	if stale := diffGrants(documented, shipped); len(stale) > 0 {
		t.Errorf("in docs/security.md's %q but granted by nothing in %s (remove the row):\n  %s", permissionsSection, shippedRBACDirs, strings.Join(stale, "\n  "))
	}
	for _, g := range shipped {
		if g.Account == "release-controller-api" && g.Group == "" && g.Resource == "secrets" && g.Scope != scopeOwnNamespace {
			t.Errorf("the api may read Secrets beyond its own namespace: %s", g)
		}
	}
}

// TestDocumentedGrants reads the permission tables as docs/security.md writes them.
func TestDocumentedGrants(t *testing.T) {
	const head = "# Security\n\n" + permissionsSection + "\n\nintro\n\n"
	const header = "| role | scope | API group | resources | verbs | why |\n|---|---|---|---|---|---|\n"
	tests := []struct {
		name, doc string
		want      []grant
		err       string
	}{
		{
			name: "rows under their account, core and other groups, the section ends at the next",
			doc: head + "### The api (`api-sa`)\n\n" + header +
				"| `r` | cluster | core | `secrets`, `configmaps` | get, list | why |\n" +
				"| `r2` | own namespace | `apps` | `deployments` | patch | why |\n" +
				"\n## Next\n\n| `x` | cluster | core | `pods` | get | not read |\n",
			want: []grant{
				{Account: "api-sa", Role: "r", Scope: scopeCluster, Resource: "secrets", Verb: "get"},
				{Account: "api-sa", Role: "r", Scope: scopeCluster, Resource: "secrets", Verb: "list"},
				{Account: "api-sa", Role: "r", Scope: scopeCluster, Resource: "configmaps", Verb: "get"},
				{Account: "api-sa", Role: "r", Scope: scopeCluster, Resource: "configmaps", Verb: "list"},
				{Account: "api-sa", Role: "r2", Scope: scopeOwnNamespace, Group: "apps", Resource: "deployments", Verb: "patch"},
			},
		},
		{name: "no section", doc: "# Security\n", err: "no section"},
		{name: "a row before any account", doc: head + header + "| `r` | cluster | core | `pods` | get | why |\n", err: "before any ### heading"},
		{name: "a row without a reason", doc: head + "### `sa`\n" + header + "| `r` | cluster | core | `pods` | get |  |\n", err: "a reason"},
		{name: "an unknown scope", doc: head + "### `sa`\n" + header + "| `r` | everywhere | core | `pods` | get | why |\n", err: `scope "everywhere"`},
		{name: "a cell missing", doc: head + "### `sa`\n" + header + "| `r` | cluster | `pods` | get | why |\n", err: "want 6 cells"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := documentedGrants(tt.doc)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestShippedGrants gives each binding's accounts its role's rules, in the binding's scope.
func TestShippedGrants(t *testing.T) {
	rule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}
	sa := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "sa", Namespace: "ns"}, {Kind: rbacv1.GroupKind, Name: "people"}}
	objs := rbacObjects{
		ClusterRoles: map[string]rbacv1.ClusterRole{
			"cr":     {ObjectMeta: metav1.ObjectMeta{Name: "cr"}, Rules: []rbacv1.PolicyRule{rule}},
			"perns":  {ObjectMeta: metav1.ObjectMeta{Name: "perns"}, Rules: []rbacv1.PolicyRule{rule}},
			"unused": {ObjectMeta: metav1.ObjectMeta{Name: "unused"}},
		},
		Roles:               map[string]rbacv1.Role{"r": {ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: []rbacv1.PolicyRule{rule}}},
		ClusterRoleBindings: []rbacv1.ClusterRoleBinding{{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "cr"}, Subjects: sa}},
		RoleBindings: []rbacv1.RoleBinding{
			{RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "perns"}, Subjects: sa},
			{RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: sa},
		},
	}
	got, unbound, err := shippedGrants(objs)
	if err != nil {
		t.Fatal(err)
	}
	want := []grant{
		{Account: "sa", Role: "cr", Scope: scopeCluster, Resource: "secrets", Verb: "get"},
		{Account: "sa", Role: "perns", Scope: scopePerNamespace, Resource: "secrets", Verb: "get"},
		{Account: "sa", Role: "r", Scope: scopeOwnNamespace, Resource: "secrets", Verb: "get"},
	}
	if !slices.Equal(got, want) || !slices.Equal(unbound, []string{"ClusterRole unused"}) {
		t.Errorf("got %+v, unbound %v\nwant %+v, unbound [ClusterRole unused]", got, unbound, want)
	}
	objs.RoleBindings = append(objs.RoleBindings, rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dangling"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "gone"}})
	if _, _, err := shippedGrants(objs); err == nil || !strings.Contains(err.Error(), "RoleBinding dangling binds Role gone") {
		t.Errorf("a binding of a missing role: error %v", err)
	}
}
