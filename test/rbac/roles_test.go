package rbac

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// roleFile holds what config/rbac/<component>/role.yaml ships: the component's ClusterRole and
// any Roles (the controller's leader election).
type roleFile struct {
	ClusterRoles []rbacv1.ClusterRole
	Roles        []rbacv1.Role
}

// readRoleFile reads config/rbac/<component>/role.yaml from the module's root.
func readRoleFile(component string) (roleFile, error) {
	path, err := filepath.Abs(filepath.Join("..", "..", "config", "rbac", component, "role.yaml"))
	if err != nil {
		return roleFile{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return roleFile{}, fmt.Errorf("reading the generated role of %s (make generate writes it): %w", component, err)
	}
	var f roleFile
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw runtime.RawExtension
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return roleFile{}, fmt.Errorf("%s: %w", path, err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 {
			continue
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(raw.Raw, &meta); err != nil {
			return roleFile{}, fmt.Errorf("%s: %w", path, err)
		}
		switch meta.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := yaml.UnmarshalStrict(raw.Raw, &r); err != nil {
				return roleFile{}, fmt.Errorf("%s: %w", path, err)
			}
			f.ClusterRoles = append(f.ClusterRoles, r)
		case "Role":
			var r rbacv1.Role
			if err := yaml.UnmarshalStrict(raw.Raw, &r); err != nil {
				return roleFile{}, fmt.Errorf("%s: %w", path, err)
			}
			f.Roles = append(f.Roles, r)
		default:
			return roleFile{}, fmt.Errorf("%s: unexpected kind %q", path, meta.Kind)
		}
	}
	return f, nil
}

// access is one thing RBAC allows: a verb on a resource (with its subresource) of an API group.
type access struct {
	Group, Resource, Verb string
}

func (a access) String() string {
	if a.Group == "" {
		return a.Verb + " " + a.Resource
	}
	// As kubectl names them: resource.group, e.g. leases.coordination.k8s.io.
	resource, sub, _ := strings.Cut(a.Resource, "/")
	s := a.Verb + " " + resource + "." + a.Group
	if sub != "" {
		s += "/" + sub
	}
	return s
}

// grants lists the accesses of rules (resource names aside: a rule limited to names still
// grants the verb).
func grants(rules []rbacv1.PolicyRule) []access {
	var out []access
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, access{Group: g, Resource: res, Verb: v})
				}
			}
		}
	}
	return out
}

// auditEvent is what the test reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	// ImpersonatedUser is who the request acted as, when User impersonated someone.
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// impersonation is the grant a request made as someone else used: impersonate on the
// ServiceAccount (or user) it acted as.
func (e auditEvent) impersonation() (access, bool) {
	if e.ImpersonatedUser == nil {
		return access{}, false
	}
	if strings.HasPrefix(e.ImpersonatedUser.Username, "system:serviceaccount:") {
		return access{Resource: "serviceaccounts", Verb: "impersonate"}, true
	}
	return access{Resource: "users", Verb: "impersonate"}, true
}

func (e auditEvent) access() (access, bool) {
	if e.ObjectRef == nil || e.ObjectRef.Resource == "" {
		return access{}, false // a non-resource request (discovery, /version)
	}
	resource := e.ObjectRef.Resource
	if e.ObjectRef.Subresource != "" {
		resource += "/" + e.ObjectRef.Subresource
	}
	return access{Group: e.ObjectRef.APIGroup, Resource: resource, Verb: e.Verb}, true
}

// listsToo reports whether the request is an informer's list made as a watch: client-go's
// reflectors stream their initial list as a watch with sendInitialEvents=true (watch-list)
// where the API server supports it, and list with the list verb where it does not.
func (e auditEvent) listsToo() bool {
	u, err := url.Parse(e.RequestURI)
	return err == nil && e.Verb == "watch" && u.Query().Get("sendInitialEvents") == "true"
}

func (e auditEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

func (e auditEvent) String() string {
	return fmt.Sprintf("%s %s %s -> %d", e.User.Username, e.Verb, e.RequestURI, e.code())
}

// readAudit reads the audit log.
func readAudit(path string) ([]auditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []auditEvent
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		events = append(events, e)
	}
	return events, scanner.Err()
}

// unusedGrants returns, sorted, what granted allows that used never did.
func unusedGrants(granted []access, used map[access]bool) []string {
	var unused []string
	for _, a := range granted {
		if !used[a] {
			unused = append(unused, a.String())
		}
	}
	slices.Sort(unused)
	return slices.Compact(unused)
}
