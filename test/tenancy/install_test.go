//go:build !unit

package tenancy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/release-controller/release-controller/internal/devenv/jobrunner"
	"github.com/release-controller/release-controller/internal/manager"
	"github.com/release-controller/release-controller/internal/testbinary"
	"github.com/release-controller/release-controller/internal/testenv"
)

const (
	// systemNamespace is where config/rbac's ServiceAccounts and Roles live (config/default's).
	systemNamespace = "release-controller-system"
	// logNamespace holds the release log: the binaries' default --log-namespace, which
	// config/samples/tenant's release-log writer Role names.
	logNamespace = "release-controller"
	// teamAccount is each tenant's credential: a ServiceAccount of its namespace whose token
	// the tenant (a person or its CI) uses for the API server and the release controller's.
	teamAccount = "team"
	// tenantSamples holds the Roles an administrator grants a tenant (docs/security.md).
	tenantSamples = "config/samples/tenant"
)

// tenant is one team: its namespaces, its credential and a client acting with it.
type tenant struct {
	name string
	// namespace holds the team's streams and pipelines; prod is a second namespace of the
	// team, which its pipeline's prod environment targets.
	namespace, prod string
	token           string
	tokenFile       string
	// client acts as the team (its ServiceAccount's token), never as the administrator.
	client client.Client
	config *rest.Config
}

func (t *tenant) username() string {
	return "system:serviceaccount:" + t.namespace + ":" + teamAccount
}

// install is the running release controller and its two tenants.
type install struct {
	root       string
	server     string // the api's URL
	controller *testbinary.Process
	api        *testbinary.Process
	apiArgs    []string
	apiToken   string
	stopRunner func() error
	a, b       *tenant
	// ready is when the set-up's own writes ended: the audit checks look at what follows.
	ready time.Time
}

// startInstall installs the shipped RBAC and the tenants, runs the job runner (the kubelet of
// this API server) and starts the controller and the api as their ServiceAccounts.
func startInstall(ctx context.Context) (*install, error) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		return nil, err
	}
	in := &install{root: root}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		return in, err
	}
	for _, ns := range []string{systemNamespace, logNamespace} {
		if err := createObject(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return in, err
		}
	}
	// Kubernetes' edit ClusterRole, which the samples bind for a team's own Secrets and apps,
	// is aggregated by kube-controller-manager, which does not run here: the test does it.
	// (view first: edit aggregates it.)
	for _, name := range []string{"view", "edit"} {
		if err := aggregateClusterRole(ctx, name); err != nil {
			return in, err
		}
	}
	// config/rbac as kustomize installs it (config/default puts it in systemNamespace).
	if err := applyKustomization(ctx, filepath.Join(root, "config", "rbac"), systemNamespace); err != nil {
		return in, err
	}
	in.a, err = addTenant(ctx, cs, root, "a", true)
	if err != nil {
		return in, err
	}
	in.b, err = addTenant(ctx, cs, root, "b", false)
	if err != nil {
		return in, err
	}

	// The job runner plays kubelet: it runs the Jobs' and ProwJobs' commands, and gives a pod
	// that names a service account (and mounts its token) a token of it.
	logDir := filepath.Join(workDir, "jobs")
	if in.stopRunner, err = startJobRunner(jobrunner.Options{
		Executable: binary, LogDir: logDir, ServiceAccountAPIServer: env.Config,
		Env: []string{"PATH=" + filepath.Dir(binary) + ":" + os.Getenv("PATH"), "SCRATCH=" + workDir},
	}); err != nil {
		return in, err
	}

	controllerToken, err := token(ctx, cs, systemNamespace, "release-controller-controller")
	if err != nil {
		return in, err
	}
	if in.controller, err = startBinary("controller", controllerToken,
		"controller",
		"--leader-election-namespace", systemNamespace,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--build-image", "registry.example.com/release-controller:tenancy",
		"--build-service-account", "release-controller-build",
		"--log-namespace", logNamespace,
		// The repositories of the Jira test's changelogs, and no other local path.
		"--git-source-allow", "https://,file://"+filepath.Join(workDir, "git")+"/",
		"--import-interval", "1s", "--retry-backoff", "500ms", "--retry-backoff-max", "2s"); err != nil {
		return in, err
	}
	listen, err := testbinary.FreeAddr()
	if err != nil {
		return in, err
	}
	in.server = "http://" + listen
	if in.apiToken, err = token(ctx, cs, systemNamespace, "release-controller-api"); err != nil {
		return in, err
	}
	in.apiArgs = []string{"api", "--listen", listen, "--log-namespace", logNamespace,
		"--changelog-cache-dir", filepath.Join(workDir, "changelog-cache")}
	if err := in.startAPI(ctx); err != nil {
		return in, err
	}
	in.ready = time.Now()
	return in, nil
}

// startAPI starts the api (again) and waits until it serves.
func (in *install) startAPI(ctx context.Context) error {
	var err error
	if in.api, err = startBinary("api", in.apiToken, in.apiArgs...); err != nil {
		return err
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		_, err := testbinary.Get(ctx, in.server+"/")
		if err == nil {
			return nil
		}
		if !in.api.Running() || time.Now().After(deadline) {
			return fmt.Errorf("the api does not serve (%w): %s", err, in.api.Tail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// restartAPI stops the api as a rollout would and starts it again.
func (in *install) restartAPI(ctx context.Context) error {
	in.api.Stop(30 * time.Second)
	if status := in.api.ExitStatus(); status != "exit status 0" {
		return fmt.Errorf("the api ended with %s: %s", status, in.api.Tail(20))
	}
	return in.startAPI(ctx)
}

func (in *install) stop() error {
	if in == nil {
		return nil
	}
	var errs []error
	for _, p := range []*testbinary.Process{in.controller, in.api} {
		if p != nil {
			p.Stop(30 * time.Second)
		}
	}
	if in.stopRunner != nil {
		errs = append(errs, in.stopRunner())
	}
	return errors.Join(errs...)
}

// addTenant creates tenant name's namespaces (tenant-NAME and tenant-NAME-prod) and its
// ServiceAccount, and grants it what docs/security.md tells an administrator to grant a team:
// config/samples/tenant's Roles (Kubernetes' edit ClusterRole among them), bound to the
// team's account where the samples name an example team; with logWriter, the release log's
// writer Role too.
func addTenant(ctx context.Context, cs kubernetes.Interface, root, name string, logWriter bool) (*tenant, error) {
	t := &tenant{name: name, namespace: "tenant-" + name, prod: "tenant-" + name + "-prod"}
	for _, ns := range []string{t.namespace, t.prod} {
		if err := createObject(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return nil, err
		}
	}
	if err := createObject(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: t.namespace, Name: teamAccount}}); err != nil {
		return nil, err
	}
	team := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: t.namespace, Name: teamAccount}
	// The prod namespace is the team's too: it runs its app there (bindings.yaml binds edit
	// in its main namespace).
	err := createObject(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: t.prod, Name: "team-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{team},
	})
	if err != nil {
		return nil, err
	}
	if err := applyTenantSamples(ctx, root, t, team, logWriter); err != nil {
		return nil, err
	}
	if t.token, err = token(ctx, cs, t.namespace, teamAccount); err != nil {
		return nil, err
	}
	t.tokenFile = filepath.Join(workDir, "tenant-"+name+".token")
	if err := os.WriteFile(t.tokenFile, []byte(t.token), 0o600); err != nil {
		return nil, err
	}
	t.config = &rest.Config{Host: env.Config.Host, BearerToken: t.token, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	t.client, err = client.New(t.config, client.Options{Scheme: manager.NewScheme()})
	return t, err
}

// applyTenantSamples applies config/samples/tenant for t: an object without a namespace goes to
// t's namespace (as `kubectl apply -n` does), except that the files of t's other namespaces
// (prod.yaml) go to t.prod; releaselog-writer.yaml (in the log's namespace) only with
// logWriter. A binding's example subjects (a Group or User, or a ServiceAccount the samples
// do not create) become team, and a ServiceAccount subject the samples create gets t's
// namespace.
func applyTenantSamples(ctx context.Context, root string, t *tenant, team rbacv1.Subject, logWriter bool) error {
	dir := filepath.Join(root, tenantSamples)
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "releaselog-writer.yaml" && !logWriter {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		docs, err := decodeObjects(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		namespace := t.namespace
		if filepath.Base(f) == "prod.yaml" {
			namespace = t.prod
		}
		for _, o := range docs {
			if o.GetNamespace() == "" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
				o.SetNamespace(namespace)
			}
		}
		objs = append(objs, docs...)
	}
	accounts := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() == "ServiceAccount" {
			accounts[o.GetName()] = true
		}
	}
	for _, o := range objs {
		if o.GetKind() == "RoleBinding" {
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
				return err
			}
			for i, s := range b.Subjects {
				switch {
				case s.Kind == rbacv1.ServiceAccountKind && accounts[s.Name]:
					b.Subjects[i].Namespace = t.namespace
				default:
					b.Subjects[i] = team
				}
			}
			b.Subjects = slices.CompactFunc(b.Subjects, func(x, y rbacv1.Subject) bool { return x == y })
			if err := createObject(ctx, &b); err != nil {
				return err
			}
			continue
		}
		if err := createObject(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// applyKustomization creates the resources a kustomization.yaml lists (plain files only),
// namespaced objects without a namespace in namespace, as kustomize with `namespace:` would.
func applyKustomization(ctx context.Context, dir, namespace string) error {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return err
	}
	for _, r := range k.Resources {
		data, err := os.ReadFile(filepath.Join(dir, r))
		if err != nil {
			return err
		}
		objs, err := decodeObjects(data)
		if err != nil {
			return fmt.Errorf("%s: %w", r, err)
		}
		for _, o := range objs {
			if o.GetNamespace() == "" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
				o.SetNamespace(namespace)
			}
			if err := createObject(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeObjects reads the objects of a multi-document YAML file.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var o unstructured.Unstructured
		if err := decoder.Decode(&o.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, err
		}
		if len(o.Object) > 0 {
			objs = append(objs, &o)
		}
	}
}

func createObject(ctx context.Context, obj client.Object) error {
	if err := env.Client.Create(ctx, obj); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// token returns a token of the ServiceAccount from the TokenRequest API.
func token(ctx context.Context, cs kubernetes.Interface, namespace, name string) (string, error) {
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3 * 3600)}}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// startBinary starts `release-controller ARGS --kubeconfig K` with K holding only bearer, the
// API server's address and CA (not the test's administrator credentials), and its environment
// only PATH, HOME and POD_NAMESPACE.
func startBinary(name, bearer string, args ...string) (*testbinary.Process, error) {
	kubeconfig := filepath.Join(workDir, name+".kubeconfig")
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {Token: bearer}},
		Contexts:       map[string]*clientcmdapi.Context{name: {Cluster: "test", AuthInfo: name}},
		CurrentContext: name,
	}
	if err := clientcmd.WriteToFile(cfg, kubeconfig); err != nil {
		return nil, err
	}
	cmd := testbinary.Command(binary, append(args, "--kubeconfig", kubeconfig)...)
	// As in its pod: the downward API's namespace (where its Role and its Secrets are).
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + workDir, "POD_NAMESPACE=" + systemNamespace}
	return testbinary.StartCommand(cmd, filepath.Join(workDir, fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano())))
}

// startJobRunner runs the job runner with the administrator's credentials (it is the kubelet
// and job controller of this API server) until the returned stop is called.
func startJobRunner(opts jobrunner.Options) (stop func() error, err error) {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: manager.NewScheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		return nil, err
	}
	runner, err := jobrunner.New(opts)
	if err != nil {
		return nil, err
	}
	if err := runner.SetupWithManager(mgr); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error {
		cancel()
		return <-done
	}, nil
}

// runCLI runs the binary's CLI (log add, pipeline approve) with args and returns
// what it printed and its error.
func runCLI(args ...string) (string, error) {
	cmd := testbinary.Command(binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + workDir}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// aggregateClusterRole fills the rules of the aggregated ClusterRole name from the
// ClusterRoles its aggregationRule selects, as kube-controller-manager's clusterrole
// aggregation controller does.
func aggregateClusterRole(ctx context.Context, name string) error {
	var role rbacv1.ClusterRole
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &role); err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return fmt.Errorf("ClusterRole %s aggregates nothing", name)
	}
	var rules []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return err
		}
		var list rbacv1.ClusterRoleList
		if err := env.Client.List(ctx, &list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return err
		}
		for _, r := range list.Items {
			if r.Name != name {
				rules = append(rules, r.Rules...)
			}
		}
	}
	role.Rules = rules
	return env.Client.Update(ctx, &role)
}
