package pipeline

import (
	"strings"
	"testing"
)

func TestSetYAMLScalar(t *testing.T) {
	const helmRelease = `# The web app in staging.
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web   # the app
spec:
  chart:
    spec:
      chart: web
      version: "1.0.0"  # set by the release controller
      sourceRef: {kind: HelmRepository, name: charts}
  values:
    replicas: 2
`
	tests := []struct {
		name, in, path, value, want string
	}{
		{"double quoted, comment kept", helmRelease, "spec.chart.spec.version", "1.1.0",
			strings.Replace(helmRelease, `"1.0.0"  #`, `"1.1.0"  #`, 1)},
		{"plain with comment", helmRelease, "metadata.name", "api",
			strings.Replace(helmRelease, "name: web   #", "name: api   #", 1)},
		{"flow mapping", helmRelease, "spec.chart.spec.sourceRef.name", "other",
			strings.Replace(helmRelease, "name: charts}", "name: other}", 1)},
		{"plain number stays a number", helmRelease, "spec.values.replicas", "3",
			strings.Replace(helmRelease, "replicas: 2", "replicas: 3", 1)},
		{"plain string that would read as a number is quoted", "image:\n  tag: v1 # tag\n", "image.tag", "1.10",
			"image:\n  tag: \"1.10\" # tag\n"},
		{"plain string", "image:\n  tag: v1\n", "image.tag", "v1.2.3-rc.1+build.5",
			"image:\n  tag: v1.2.3-rc.1+build.5\n"},
		{"single quoted", "tag: 'v1'\n", "tag", "it's",
			"tag: 'it''s'\n"},
		{"kustomize image by name", "images:\n- name: registry.example.com/web\n  newTag: \"1\"\n- name: registry.example.com/api\n  newTag: \"1\"\n",
			"images[name=registry.example.com/api].newTag", "2",
			"images:\n- name: registry.example.com/web\n  newTag: \"1\"\n- name: registry.example.com/api\n  newTag: \"2\"\n"},
		{"sequence index", "containers:\n  - name: web\n    image: web:1\n  - name: proxy\n    image: proxy:1\n",
			"containers[1].image", "proxy:2",
			"containers:\n  - name: web\n    image: web:1\n  - name: proxy\n    image: proxy:2\n"},
		{"flow sequence", "tags: [a, b, c]\n", "tags[1]", "x", "tags: [a, x, c]\n"},
		{"second document", "kind: A\n---\nkind: B\nspec:\n  version: 1.0.0\n", "spec.version", "2.0.0",
			"kind: A\n---\nkind: B\nspec:\n  version: 2.0.0\n"},
		{"CRLF", "a:\r\n  b: x\r\n  c: y\r\n", "a.c", "z", "a:\r\n  b: x\r\n  c: z\r\n"},
		{"tagged", "v: !!str 1.0\n", "v", "2.0", "v: !!str 2.0\n"},
		{"already there", helmRelease, "spec.chart.spec.version", "1.0.0", helmRelease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetYAMLScalar([]byte(tt.in), tt.path, tt.value)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("no error; got %q", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("SetYAMLScalar: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestSetYAMLScalarMultibyteColumns(t *testing.T) {
	in := "labels: {owner: \"zoë\", version: \"1\"}\n"
	got, err := SetYAMLScalar([]byte(in), "labels.version", "2")
	if err != nil {
		t.Fatal(err)
	}
	if want := "labels: {owner: \"zoë\", version: \"2\"}\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSetYAMLScalarErrors(t *testing.T) {
	tests := []struct {
		name, in, path, want string
	}{
		{"missing key", "spec:\n  chart: {}\n", "spec.chart.spec.version", `spec.chart has no key "spec"`},
		{"missing root key", "kind: A\n", "spec.version", `the document's root has no key "spec"`},
		{"not a mapping", "spec: [1]\n", "spec.version", "spec is not a mapping"},
		{"index out of range", "a: [x]\n", "a[3]", "a has 1 items, no item 3"},
		{"no such item", "images:\n- name: web\n", "images[name=api].newTag", "images has no item with name=api"},
		{"in no document", "a: 1\n---\nb: 2\n", "c", "in any of the file's 2 documents"},
		{"a mapping, not a scalar", "spec:\n  chart: {a: b}\n", "spec.chart", "is not a scalar"},
		{"block scalar", "v: |\n  text\n", "v", "block scalar"},
		{"alias", "base: &v 1\nv: *v\n", "v", "an alias"},
		{"through an alias", "base: &b {v: 1}\nx: *b\n", "x.v", "is an alias"},
		{"multi-line plain", "v: one\n  two\n", "v", "spans lines"},
		{"not YAML", "a: [\n", "a", "parsing YAML"},
		{"empty file", "", "a", "no YAML document"},
		{"bad path", "a: 1\n", "a..b", "a key is expected"},
		{"bad selector", "a: 1\n", "a[x]", "neither [index] nor [key=value]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetYAMLScalar([]byte(tt.in), tt.path, "2")
			if err == nil {
				t.Fatalf("no error; got %q", got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestPromotionBranch(t *testing.T) {
	tests := []struct{ template, revision, want string }{
		{"promote/{pipeline}/{environment}/{revision}", "1.2.3", "promote/web/prod/1.2.3"},
		{"promote/{pipeline}/{environment}/{revision}", "main@sha1:0a1b2c", "promote/web/prod/main-sha1-0a1b2c"},
		{"promote/{pipeline}/{environment}/{revision}", "../x..y.lock", "promote/web/prod/x.y-lock"},
		{"release/{environment}", "1.2.3", "release/prod"},
	}
	for _, tt := range tests {
		got, err := PromotionBranch(tt.template, "web", "prod", tt.revision)
		if err != nil || got != tt.want {
			t.Errorf("PromotionBranch(%q, %q) = %q, %v; want %q", tt.template, tt.revision, got, err, tt.want)
		}
	}
	if _, err := PromotionBranch("promote/{app}", "web", "prod", "1"); err == nil {
		t.Error("an unknown placeholder gave a branch")
	}
}
