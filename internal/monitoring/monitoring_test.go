package monitoring

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/rulefmt"
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

var root = filepath.Join("..", "..")

func read(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parse(t *testing.T, name string, data []byte) *rulefmt.RuleGroups {
	t.Helper()
	groups, err := ParseRules(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return groups
}

func groupsOf(t *testing.T, manifest []byte) []byte {
	t.Helper()
	data, err := GroupsOf(manifest)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRulesAreValid(t *testing.T) {
	chart := parse(t, ChartRules, read(t, ChartRules))
	component := parse(t, ComponentRule, groupsOf(t, read(t, ComponentRule)))
	if !reflect.DeepEqual(chart.Groups, component.Groups) {
		t.Errorf("%s and the groups of %s differ", ChartRules, ComponentRule)
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
	doc := string(read(t, filepath.Join("docs", "alerts.md")))
	for _, a := range alerts {
		if !strings.Contains(doc, "\n## "+a+"\n") {
			t.Errorf("docs/alerts.md has no section ## %s", a)
		}
	}
	want := []string{"ReleaseStreamNoAcceptedPayload", "ReleaseVerificationFailureRateHigh", "ReleaseControllerNotReconciling", "ReleaseSigningFailing", "ReleasePipelineApprovalWaiting"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
	// What promtool would refuse is refused.
	for _, bad := range []string{
		"groups:\n- name: g\n  rules:\n  - alert: A\n    expr: rate(x[5m]\n",
		"groups:\n- name: g\n  rules:\n  - alert: A\n    record: b\n    expr: x\n",
		"groups:\n- name: g\n  rules:\n  - alert: A\n    expr: x\n    annotations:\n      summary: '{{ .Nope'\n",
		"groups:\n- name: g\n  rules: []\n- name: g\n  rules: []\n",
	} {
		if _, err := ParseRules([]byte(bad)); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

func TestCopiesAgree(t *testing.T) {
	if !bytes.Equal(read(t, ChartBoard), read(t, Dashboard)) {
		t.Errorf("%s and %s differ", ChartBoard, Dashboard)
	}
}

// registered reports whether the binary's registry (controller-runtime's, which both /metrics
// endpoints serve) has a metric family of that name, with samples or not yet: a probe of that
// name is refused only when the name is taken.
func registered(name string) bool {
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
	exprs, err := Expressions(root)
	if err != nil {
		t.Fatal(err)
	}
	names, err := MetricNames(exprs)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !registered(Family(name, registered)) {
			t.Errorf("the rules or the dashboard name %s, which the binary does not register", name)
		}
	}
	if len(names) < 10 {
		t.Errorf("only %d metrics named: %v", len(names), names)
	}
}

func TestMetricNames(t *testing.T) {
	got, err := MetricNames([]string{
		`sum by (le) (rate(a_bucket{x="1"}[5m])) / on () b`,
		`time() - max(c)`,
		`label_replace(rate(a_bucket[1m]), "n", "$1", "c", "(.*)")`,
	})
	if want := []string{"a_bucket", "b", "c"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	if _, err := MetricNames([]string{`{job="x"}`}); err == nil {
		t.Error("a selector without a metric name is accepted")
	}
	if _, err := MetricNames([]string{`rate(x[5m]`}); err == nil {
		t.Error("an expression that does not parse is accepted")
	}
	known := func(n string) bool { return n == "h" }
	for name, want := range map[string]string{"h_bucket": "h", "h_count": "h", "c_total": "c_total", "x_sum": "x_sum"} {
		if got := Family(name, known); got != want {
			t.Errorf("Family(%s) = %s, want %s", name, got, want)
		}
	}
}

// TestChartRenders renders the chart with both enabled, as helm template does: the
// PrometheusRule holds files/rules.yaml and the ConfigMap the dashboard, unchanged; both are
// off by default.
func TestChartRenders(t *testing.T) {
	chrt, err := loader.Load(filepath.Join(root, ChartDir))
	if err != nil {
		t.Fatal(err)
	}
	render := func(values map[string]any) map[string]string {
		t.Helper()
		values["image"] = map[string]any{"repository": "release-controller"}
		vals, err := util.ToRenderValues(chrt, values, common.ReleaseOptions{Name: "rc", Namespace: "rc-system", Revision: 1, IsInstall: true}, common.DefaultCapabilities.Copy())
		if err != nil {
			t.Fatal(err)
		}
		rendered, err := engine.Engine{Strict: true}.RenderWithContext(context.Background(), chrt, vals)
		if err != nil {
			t.Fatal(err)
		}
		return rendered
	}
	rendered := render(map[string]any{
		"prometheusRule":   map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
		"grafanaDashboard": map[string]any{"enabled": true, "namespace": "grafana"},
	})
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
	got := parse(t, "the chart's PrometheusRule", groupsOf(t, ruleYAML))
	if want := parse(t, ChartRules, read(t, ChartRules)); !reflect.DeepEqual(got.Groups, want.Groups) {
		t.Errorf("the rendered PrometheusRule's groups differ from %s", ChartRules)
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
	if strings.TrimSpace(cm.Data["release-controller.json"]) != strings.TrimSpace(string(read(t, ChartBoard))) {
		t.Errorf("the dashboard ConfigMap does not hold %s", ChartBoard)
	}

	rendered = render(map[string]any{})
	for _, name := range []string{"prometheusrule.yaml", "grafana-dashboard.yaml"} {
		if s := strings.TrimSpace(rendered["release-controller/templates/"+name]); s != "" {
			t.Errorf("%s renders by default:\n%s", name, s)
		}
	}
}

// TestComponentBuilds builds an overlay with the kustomize component, as kubectl kustomize
// does: the PrometheusRule as written, and the dashboard ConfigMap for Grafana's sidecar.
func TestComponentBuilds(t *testing.T) {
	abs, err := filepath.Abs(filepath.Join(root, ComponentDir))
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
			if strings.TrimSpace(data) != strings.TrimSpace(string(read(t, Dashboard))) || r.GetLabels()["grafana_dashboard"] != "1" {
				t.Errorf("the dashboard ConfigMap: labels %v, %d bytes of data", r.GetLabels(), len(data))
			}
		case "PrometheusRule":
			data, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			parse(t, "the component's PrometheusRule", groupsOf(t, data))
		}
	}
	slices.Sort(kinds)
	if want := []string{"ConfigMap monitoring/release-controller-dashboard", "PrometheusRule monitoring/release-controller"}; !slices.Equal(kinds, want) {
		t.Errorf("the component makes %v, want %v", kinds, want)
	}
}
