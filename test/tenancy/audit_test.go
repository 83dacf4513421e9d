//go:build !unit

package tenancy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// auditEvent is what the test reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Stage          string    `json:"stage"`
	RequestURI     string    `json:"requestURI"`
	Verb           string    `json:"verb"`
	StageTimestamp time.Time `json:"stageTimestamp"`
	User           struct {
		Username string `json:"username"`
	} `json:"user"`
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

func (e auditEvent) code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

func (e auditEvent) String() string {
	as := ""
	if e.ImpersonatedUser != nil {
		as = " as " + e.ImpersonatedUser.Username
	}
	return fmt.Sprintf("%s%s %s %s -> %d", e.User.Username, as, e.Verb, e.RequestURI, e.code())
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

// writes are the verbs that change something.
var writes = []string{"create", "update", "patch", "delete", "deletecollection"}

// reviews are created but change nothing: the api's and the API server's own questions.
var reviews = []string{"tokenreviews", "subjectaccessreviews", "selfsubjectaccessreviews", "localsubjectaccessreviews"}

// apiServerUser is the API server's own identity (its lease in kube-system, say).
const apiServerUser = "system:apiserver"

// outsideWrites returns the successful writes of events, answered at or after since, whose
// object lies outside the namespaces allowed (namespace "" is a cluster-scoped object), reviews
// and the API server's own writes aside. It is pure.
func outsideWrites(events []auditEvent, since time.Time, allowed []string) []string {
	var out []string
	for _, e := range events {
		if e.Stage != "ResponseComplete" || e.StageTimestamp.Before(since) || !slices.Contains(writes, e.Verb) || e.User.Username == apiServerUser ||
			e.code() < 200 || e.code() > 299 || e.ObjectRef == nil || slices.Contains(reviews, e.ObjectRef.Resource) {
			continue
		}
		if !slices.Contains(allowed, e.ObjectRef.Namespace) {
			out = append(out, e.String())
		}
	}
	return out
}

// checkNothingOutside fails the test for every write anyone made since the given time outside tenant
// a's namespaces, the release log's (entries a's flows add) and the controller's own (its
// Lease and Events): nothing a did, or made the controller or the api do, reached another
// tenant or the cluster.
func checkNothingOutside(t *testing.T, since time.Time, a *tenant) {
	t.Helper()
	events, err := readAudit(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range outsideWrites(events, since, []string{a.namespace, a.prod, logNamespace, systemNamespace}) {
		t.Errorf("written outside tenant %s's namespaces: %s", a.name, w)
	}
}

// TestOutsideWrites picks the successful writes outside the allowed namespaces since a time.
func TestOutsideWrites(t *testing.T) {
	since := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ev := func(verb, resource, namespace string, code int, at time.Time) auditEvent {
		var e auditEvent
		e.Stage, e.Verb, e.StageTimestamp, e.RequestURI = "ResponseComplete", verb, at, "/"+namespace+"/"+resource
		e.User.Username = "someone"
		e.ObjectRef = &struct {
			Resource    string `json:"resource"`
			Namespace   string `json:"namespace"`
			Name        string `json:"name"`
			APIGroup    string `json:"apiGroup"`
			Subresource string `json:"subresource"`
		}{Resource: resource, Namespace: namespace}
		e.ResponseStatus = &struct {
			Code int `json:"code"`
		}{Code: code}
		return e
	}
	later := since.Add(time.Second)
	events := []auditEvent{
		ev("patch", "deployments", "b", 200, later),                   // written in another namespace
		ev("create", "clusterroles", "", 201, later),                  // cluster-scoped
		ev("patch", "deployments", "b", 403, later),                   // refused: nothing changed
		ev("get", "secrets", "b", 200, later),                         // a read
		ev("patch", "deployments", "b", 200, since.Add(-time.Second)), // before
		ev("patch", "deployments", "a", 200, later),                   // allowed
		ev("create", "subjectaccessreviews", "", 201, later),          // a review changes nothing
	}
	got := outsideWrites(events, since, []string{"a"})
	want := []string{"someone patch /b/deployments -> 200", "someone create //clusterroles -> 201"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
