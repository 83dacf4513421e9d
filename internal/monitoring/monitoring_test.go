package monitoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	// The packages that register the binary's metrics: its controllers (through the
	// manager, with controller-runtime's reconcile, work queue and client metrics) and its
	// API server (the HTTP metrics, and the catalog's gauges).
	_ "github.com/release-controller/release-controller/internal/manager"
	_ "github.com/release-controller/release-controller/internal/payload"
	_ "github.com/release-controller/release-controller/internal/pipeline"
	_ "github.com/release-controller/release-controller/internal/releaselog/logcontroller"
	_ "github.com/release-controller/release-controller/internal/server"
	_ "github.com/release-controller/release-controller/internal/server/catalog"
	_ "github.com/release-controller/release-controller/internal/stream"
)

var (
	root          = filepath.Join("..", "..")
	componentDir  = filepath.Join(root, "config", "components", "alerts")
	chartDir      = filepath.Join(root, "charts", "release-controller")
	chartRules    = filepath.Join(chartDir, "files", "rules.yaml")
	chartBoard    = filepath.Join(chartDir, "files", "dashboard.json")
	componentRule = filepath.Join(componentDir, "prometheusrule.yaml")
	componentBoard = filepath.Join(componentDir, "dashboard.json")
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// groupsOf reads the rule groups of a PrometheusRule manifest, as a rule file.
func groupsOf(t *testing.T, manifest []byte) []byte {
	t.Helper()
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &obj); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.JSONToYAML(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// parseRules validates a rule file as Prometheus loads one (promtool check rules): its
// structure, every expression, and the templates of labels and annotations.
func parseRules(t *testing.T, name string, data []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("%s: %v", name, err)
	}
	if groups == nil || len(groups.Groups) == 0 {
		t.Fatalf("%s: no rule groups", name)
	}
	return groups
}

func TestRulesAreValid(t *testing.T) {
	chart := parseRules(t, chartRules, read(t, chartRules))
	component := parseRules(t, componentRule, groupsOf(t, read(t, componentRule)))
	if !reflect.DeepEqual(chart.Groups, component.Groups) {
		t.Errorf("%s and the groups of %s differ", chartRules, componentRule)
	}
	var alerts []string
	for _, g := range chart.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if !strings.HasSuffix(r.Annotations["runbook_url"], "docs/alerts.md#"+strings.ToLower(r.Alert)) {
				t.Errorf("alert %s: runbook_url %q does not point at its runbook", r.Alert, r.Annotations["runbook_url"])
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %s has no severity or summary", r.Alert)
			}
		}
	}
	// Every alert has its runbook.
	doc := string(read(t, filepath.Join(root, "docs", "alerts.md")))
	for _, a := range alerts {
		if !strings.Contains(doc, "\n## "+a+"\n") {
			t.Errorf("docs/alerts.md has no section ## %s", a)
		}
	}
	want := []string{"ReleaseStreamNoAcceptedPayload", "ReleaseVerificationFailureRateHigh", "ReleaseControllerNotReconciling", "ReleaseSigningFailing", "ReleasePipelineApprovalWaiting"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}

func TestCopiesAgree(t *testing.T) {
	if !bytes.Equal(read(t, chartBoard), read(t, componentBoard)) {
		t.Errorf("%s and %s differ", chartBoard, componentBoard)
	}
}

// grafanaVariables are the dashboard's variables and Grafana's own, with values that make
// its queries PromQL.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__range", "1d", "$__interval", "1m", "$namespace", ".*", "$stream", ".*")

// dashboardExprs are the PromQL queries of the dashboard's panels and variables.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	var board struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(read(t, componentBoard), &board); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range board.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			exprs = append(exprs, grafanaVariables.Replace(target.Expr))
		}
	}
	// label_values(SELECTOR, label) names the metric of SELECTOR.
	labelValues := regexp.MustCompile(`^label_values\((.*), *[a-z_]+\)$`)
	for _, v := range board.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			exprs = append(exprs, grafanaVariables.Replace(m[1]))
		}
	}
	return exprs
}

// metricNames are the metrics an expression selects.
func metricNames(t *testing.T, expr string) []string {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Errorf("%s: %v", expr, err)
		return nil
	}
	var names []string
	parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// registered reports whether the binary's registry (controller-runtime's, which both /metrics
// endpoints serve) has a metric of that name, with samples or not yet: a probe of that name
// is refused only when the name is taken. The series of a histogram are its name with
// _bucket, _sum and _count.
func registered(name string) bool {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && registered(base) {
			return true
		}
	}
	probe := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: "a probe of whether " + name + " is registered"})
	if err := metrics.Registry.Register(probe); err != nil {
		var already prometheus.AlreadyRegisteredError
		return errors.As(err, &already) || strings.Contains(err.Error(), "previously registered descriptor with the same fully-qualified name")
	}
	metrics.Registry.Unregister(probe)
	return false
}

func TestMetricsExist(t *testing.T) {
	if !registered("release_controller_payloads") || registered("release_controller_no_such_metric") {
		t.Fatal("the probe of the registry does not tell registered metrics from others")
	}
	var exprs []string
	for _, g := range parseRules(t, chartRules, read(t, chartRules)).Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	exprs = append(exprs, dashboardExprs(t)...)
	seen := map[string]bool{}
	for _, expr := range exprs {
		for _, name := range metricNames(t, expr) {
			if name == "" {
				t.Errorf("%s selects series without naming a metric", expr)
				continue
			}
			if !seen[name] && !registered(name) {
				t.Errorf("%s names %s, which the binary does not register", strings.TrimSpace(expr), name)
			}
			seen[name] = true
		}
	}
	if len(seen) < 10 {
		t.Errorf("only %d metrics named: %v", len(seen), seen)
	}
}

// TestChartRenders renders the chart with both enabled, as helm template does: the
// PrometheusRule holds files/rules.yaml and the ConfigMap the dashboard, unchanged.
func TestChartRenders(t *testing.T) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"image":            map[string]any{"repository": "release-controller"},
		"prometheusRule":   map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "grafana"},
	}
	vals, err := util.ToRenderValues(chrt, values, common.ReleaseOptions{Name: "rc", Namespace: "rc-system", Revision: 1, IsInstall: true}, common.DefaultCapabilities.Copy())
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := engine.Engine{Strict: true}.RenderWithContext(context.Background(), chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string            `json:"name"`
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	ruleYAML := []byte(rendered["release-controller/templates/prometheusrule.yaml"])
	if err := yaml.Unmarshal(ruleYAML, &rule); err != nil {
		t.Fatal(err)
	}
	if rule.Kind != "PrometheusRule" || rule.Metadata.Name != "rc-release-controller" || rule.Metadata.Namespace != "rc-system" || rule.Metadata.Labels["release"] != "prometheus" {
		t.Errorf("PrometheusRule %+v", rule)
	}
	got := parseRules(t, "the chart's PrometheusRule", groupsOf(t, ruleYAML))
	if want := parseRules(t, chartRules, read(t, chartRules)); !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Errorf("the rendered PrometheusRule's groups differ from %s", chartRules)
	}

	var cm struct {
		Metadata struct {
			Namespace string            `json:"namespace"`
			Labels    map[string]string `json:"labels"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal([]byte(rendered["release-controller/templates/grafana-dashboard.yaml"]), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Metadata.Namespace != "grafana" || cm.Metadata.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap metadata %+v", cm.Metadata)
	}
	if strings.TrimSpace(cm.Data["release-controller.json"]) != strings.TrimSpace(string(read(t, chartBoard))) {
		t.Errorf("the dashboard ConfigMap does not hold %s", chartBoard)
	}

	// Off by default.
	vals, err = util.ToRenderValues(chrt, map[string]any{"image": map[string]any{"repository": "release-controller"}},
		common.ReleaseOptions{Name: "rc", Namespace: "rc-system", Revision: 1, IsInstall: true}, common.DefaultCapabilities.Copy())
	if err != nil {
		t.Fatal(err)
	}
	rendered, err = engine.Engine{Strict: true}.RenderWithContext(context.Background(), chrt, vals)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"prometheusrule.yaml", "grafana-dashboard.yaml"} {
		if s := strings.TrimSpace(rendered["release-controller/templates/"+name]); s != "" {
			t.Errorf("%s renders by default:\n%s", name, s)
		}
	}
}

// TestComponentBuilds builds an overlay with the kustomize component, as kubectl kustomize
// does: the PrometheusRule as written, and the dashboard ConfigMap for Grafana's sidecar.
func TestComponentBuilds(t *testing.T) {
	abs, err := filepath.Abs(componentDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := "namespace: monitoring\ncomponents:\n- " + filepath.ToSlash(rel) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o600); err != nil {
		t.Fatal(err)
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	var kinds []string
	for _, r := range m.Resources() {
		kinds = append(kinds, r.GetKind()+" "+r.GetNamespace()+"/"+r.GetName())
		switch r.GetKind() {
		case "ConfigMap":
			data := r.GetDataMap()["release-controller.json"]
			if strings.TrimSpace(data) != strings.TrimSpace(string(read(t, componentBoard))) || r.GetLabels()["grafana_dashboard"] != "1" {
				t.Errorf("the dashboard ConfigMap: labels %v, %d bytes of data", r.GetLabels(), len(data))
			}
		case "PrometheusRule":
			data, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			parseRules(t, "the component's PrometheusRule", groupsOf(t, data))
		}
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap monitoring/release-controller-dashboard", "PrometheusRule monitoring/release-controller"}; !slices.Equal(kinds, want) {
		t.Errorf("the component makes %v, want %v", kinds, want)
	}
}
