package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test, from this package's directory (tools/deploy).
var chartDir = filepath.Join("..", "..", "deploy", "helm", "splathost")

// kinds maps every apiVersion/kind the chart may render to the k8s.io/api type it must decode
// into. A kind outside it fails the test: a new kind needs its type here first.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"batch/v1/Job":                           func() any { return &batchv1.Job{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
}

// rendered is the chart's output for one values set: the raw text of every document and each
// object decoded into its k8s.io/api type.
type rendered struct {
	text    string
	objects []object
}

// object is one rendered document.
type object struct {
	source, kind, name string
	value              any
}

// loadChart loads the chart once per test (the loader reads a few files: microseconds).
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// renderErr renders the chart as `helm install --dry-run` would for an install of release
// "prod" in namespace "splat", with vals over the chart's values.yaml.
func renderErr(t *testing.T, vals map[string]any) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	if err := chartutil.ValidateAgainstSchema(c, vals); err != nil {
		return nil, err
	}
	top, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{
		Name: "prod", Namespace: "splat", Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		return nil, err
	}
	return engine.Render(c, top)
}

// render renders and decodes every document strictly: unknown fields, duplicate keys, a kind
// without a type or a document without a name fail the test.
func render(t *testing.T, vals map[string]any) rendered {
	t.Helper()
	files, err := renderErr(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	var r rendered
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	sep := regexp.MustCompile(`(?m)^---[ \t]*$`)
	for _, n := range names {
		r.text += files[n]
		for i, doc := range sep.Split(files[n], -1) {
			if isEmptyDoc(doc) {
				continue
			}
			r.objects = append(r.objects, decode(t, fmt.Sprintf("%s#%d", n, i), doc))
		}
	}
	if len(r.objects) == 0 {
		t.Fatal("the chart rendered no object")
	}
	return r
}

// isEmptyDoc reports a document of only blank and comment lines (what a disabled template
// leaves).
func isEmptyDoc(doc string) bool {
	for _, line := range strings.Split(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// decode turns one YAML document into its typed object, refusing duplicate keys (YAMLToJSON
// strict) and fields the type does not have (DisallowUnknownFields).
func decode(t *testing.T, source, doc string) object {
	t.Helper()
	js, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		t.Fatalf("%s: not strict YAML: %v\n%s", source, err, doc)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		t.Fatalf("%s: %v", source, err)
	}
	newType, ok := kinds[head.APIVersion+"/"+head.Kind]
	if !ok {
		t.Fatalf("%s: %s %s has no k8s.io/api type in this test", source, head.APIVersion, head.Kind)
	}
	if head.Metadata.Name == "" {
		t.Fatalf("%s: %s without a name", source, head.Kind)
	}
	v := newType()
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %s %s does not decode strictly into %T: %v\n%s", source, head.Kind, head.Metadata.Name, v, err, doc)
	}
	return object{source: source, kind: head.Kind, name: head.Metadata.Name, value: v}
}

// all returns every rendered object of type T.
func all[T any](r rendered) []*T {
	var out []*T
	for _, o := range r.objects {
		if v, ok := o.value.(*T); ok {
			out = append(out, v)
		}
	}
	return out
}

// byName returns the object of type T named name, or nil.
func byName[T any](r rendered, name string) *T {
	for _, o := range r.objects {
		if v, ok := o.value.(*T); ok && o.name == name {
			return v
		}
	}
	return nil
}

// values builds a values map from YAML, the way `-f values.yaml` gives it to Helm.
func values(t *testing.T, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("test values: %v", err)
	}
	return m
}
