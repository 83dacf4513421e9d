// Package monitoring reads the shipped monitoring — the Prometheus alerting rules and the
// Grafana dashboard of config/components/alerts, copied into the chart — for the tests that
// check them: the rules must pass Prometheus' own rule-file validation (what promtool check
// rules runs), and every metric the rules and the dashboard name must be one the
// release-controller binary serves (its tests, and test/demo against a running dev).
package monitoring

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"sigs.k8s.io/yaml"
)

// Paths of the shipped files, from the module's root.
var (
	ComponentDir  = filepath.Join("config", "components", "alerts")
	ComponentRule = filepath.Join(ComponentDir, "prometheusrule.yaml")
	Dashboard     = filepath.Join(ComponentDir, "dashboard.json")
	ChartDir      = filepath.Join("charts", "release-controller")
	ChartRules    = filepath.Join(ChartDir, "files", "rules.yaml")
	ChartBoard    = filepath.Join(ChartDir, "files", "dashboard.json")
)

// ParseRules validates a rule file as Prometheus loads one: its structure, every expression,
// and the templates of labels and annotations.
func ParseRules(data []byte) (*rulefmt.RuleGroups, error) {
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		return nil, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	if groups == nil || len(groups.Groups) == 0 {
		return nil, fmt.Errorf("no rule groups")
	}
	return groups, nil
}

// GroupsOf reads the rule groups of a PrometheusRule manifest, as a rule file.
func GroupsOf(manifest []byte) ([]byte, error) {
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(manifest, &obj); err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(obj.Spec)
}

// grafanaVariables are the dashboard's variables and Grafana's own, with values that make
// its queries PromQL.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__range", "1d", "$__interval", "1m", "$namespace", ".*", "$stream", ".*")

// labelValues is a Grafana variable's query label_values(SELECTOR, label).
var labelValues = regexp.MustCompile(`^label_values\((.*), *[a-z_]+\)$`)

// Dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
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

// Expressions are the PromQL expressions of the shipped rules (the chart's copy) and of the
// dashboard's panels and variables, read from the module at root. A panel without a query
// is an error.
func Expressions(root string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(root, ChartRules))
	if err != nil {
		return nil, err
	}
	groups, err := ParseRules(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ChartRules, err)
	}
	var exprs []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	data, err = os.ReadFile(filepath.Join(root, Dashboard))
	if err != nil {
		return nil, err
	}
	var board dashboard
	if err := json.Unmarshal(data, &board); err != nil {
		return nil, fmt.Errorf("%s: %w", Dashboard, err)
	}
	for _, p := range board.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			return nil, fmt.Errorf("%s: panel %q has no query", Dashboard, p.Title)
		}
		for _, target := range p.Targets {
			exprs = append(exprs, grafanaVariables.Replace(target.Expr))
		}
	}
	for _, v := range board.Templating.List {
		if m := labelValues.FindStringSubmatch(v.Definition); m != nil {
			exprs = append(exprs, grafanaVariables.Replace(m[1]))
		}
	}
	return exprs, nil
}

// MetricNames are the metrics the expressions select, sorted, each once. An expression that
// does not parse, or selects series without naming their metric, is an error.
func MetricNames(exprs []string) ([]string, error) {
	var names []string
	p := parser.NewParser(parser.Options{})
	for _, expr := range exprs {
		e, err := p.ParseExpr(expr)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", strings.TrimSpace(expr), err)
		}
		var unnamed bool
		parser.Inspect(e, func(node parser.Node, _ []parser.Node) error {
			if vs, ok := node.(*parser.VectorSelector); ok {
				names = append(names, vs.Name)
				unnamed = unnamed || vs.Name == ""
			}
			return nil
		})
		if unnamed {
			return nil, fmt.Errorf("%s selects series without naming a metric", strings.TrimSpace(expr))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Family is the metric family a series name belongs to: a histogram's _bucket, _sum and
// _count series belong to the histogram (a counter's _total is its own name).
func Family(name string, known func(string) bool) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && known(base) {
			return base
		}
	}
	return name
}
