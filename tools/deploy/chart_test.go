package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// component is what the test expects of one process: the port its HTTP server (and so its
// probes) listens on, per docker-compose.yml and internal/config's listen variables, and whether
// it is an API tier (Service, CPU autoscaling) and opens the object store (S3 credentials).
type component struct {
	port      int32
	api, s3   bool
	taskQueue string
}

var components = map[string]component{
	"gateway":      {port: 8080, api: true},
	"user":         {port: 8081, api: true},
	"scene":        {port: 8082, api: true, s3: true},
	"session":      {port: 8083, api: true},
	"worker":       {port: 8084, s3: true, taskQueue: "splathost"},
	"media-worker": {port: 8085, s3: true, taskQueue: "splathost-media"},
}

// secretVars are the variables that hold a secret (internal/config): each must come from a
// secretKeyRef, never from a value or the ConfigMap.
var secretVars = []string{
	"SPLATHOST_POSTGRES_URL", "SPLATHOST_ADMIN_TOKEN", "SPLATHOST_INTERNAL_SECRET",
	"SPLATHOST_SESSION_KEYS", "SPLATHOST_WEBHOOK_KEY", "SPLATHOST_S3_ACCESS_KEY", "SPLATHOST_S3_SECRET_KEY",
}

func TestChartDefaults(t *testing.T) {
	r := render(t, nil)
	deployments := all[appsv1.Deployment](r)
	if len(deployments) != len(components) {
		t.Fatalf("%d Deployments, want one per process (%d)", len(deployments), len(components))
	}
	cm := byName[corev1.ConfigMap](r, "prod-splathost-config")
	if cm == nil {
		t.Fatal("no ConfigMap prod-splathost-config")
	}
	for name, want := range components {
		d := byName[appsv1.Deployment](r, "prod-splathost-"+name)
		if d == nil {
			t.Errorf("no Deployment for %s", name)
			continue
		}
		checkDeployment(t, name, want, d, cm)
	}
	checkConfigMap(t, r, cm)
	checkMigrateJob(t, r)

	for name, want := range components {
		pdb := byName[policyv1.PodDisruptionBudget](r, "prod-splathost-"+name)
		if pdb == nil {
			t.Errorf("no PodDisruptionBudget for %s", name)
		} else {
			checkSelects(t, "PDB "+name, pdb.Spec.Selector.MatchLabels, byName[appsv1.Deployment](r, "prod-splathost-"+name))
		}
		hpa := byName[autoscalingv2.HorizontalPodAutoscaler](r, "prod-splathost-"+name)
		if !want.api {
			// The workers' HPA needs a metrics adapter: off by default.
			if hpa != nil {
				t.Errorf("%s: an HPA by default; the backlog metric needs an adapter, so it is opt-in", name)
			}
			continue
		}
		if hpa == nil {
			t.Errorf("no HPA for API tier %s", name)
			continue
		}
		if hpa.Spec.ScaleTargetRef.Kind != "Deployment" || hpa.Spec.ScaleTargetRef.Name != "prod-splathost-"+name {
			t.Errorf("%s: HPA targets %+v", name, hpa.Spec.ScaleTargetRef)
		}
		if len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource == nil || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU ||
			hpa.Spec.Metrics[0].Resource.Target.AverageUtilization == nil {
			t.Errorf("%s: HPA metrics %+v, want CPU utilization", name, hpa.Spec.Metrics)
		}
		if d := byName[appsv1.Deployment](r, "prod-splathost-"+name); d != nil && d.Spec.Replicas != nil {
			t.Errorf("%s: Deployment sets replicas under an HPA (an upgrade would reset the HPA's count)", name)
		}
	}
}

// checkDeployment checks one process's Deployment: image command, probes on the right
// paths and port, resources, and that every secret comes from a secretKeyRef.
func checkDeployment(t *testing.T, name string, want component, d *appsv1.Deployment, cm *corev1.ConfigMap) {
	t.Helper()
	checkSelects(t, "Deployment "+name, d.Spec.Selector.MatchLabels, d)
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Command, []string{name}) {
		t.Errorf("%s: command %v, want the cmd/%s binary", name, c.Command, name)
	}
	if name == "media-worker" && !strings.Contains(c.Image, "splathost-media") {
		t.Errorf("media-worker: image %s, want the media image (Node.js and splat-transform)", c.Image)
	}
	for _, p := range []struct {
		kind, path string
		probe      *corev1.Probe
	}{{"readiness", "/readyz", c.ReadinessProbe}, {"liveness", "/healthz", c.LivenessProbe}} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s: no HTTP %s probe", name, p.kind)
			continue
		}
		if p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s: %s probe on %s, want %s", name, p.kind, p.probe.HTTPGet.Path, p.path)
		}
		if port := probePort(c, p.probe); port != want.port {
			t.Errorf("%s: %s probe on port %d, want %d", name, p.kind, port, want.port)
		}
	}
	// The process listens where the probes knock: its listen variable names the same port.
	listen := map[string]string{"gateway": "SPLATHOST_GATEWAY_ADDR", "user": "SPLATHOST_USER_ADDR", "scene": "SPLATHOST_SCENE_ADDR",
		"session": "SPLATHOST_SESSION_ADDR", "worker": "SPLATHOST_WORKER_HEALTH_ADDR", "media-worker": "SPLATHOST_MEDIA_HEALTH_ADDR"}[name]
	if got, wantAddr := cm.Data[listen], "0.0.0.0:"+itoa(want.port); got != wantAddr {
		t.Errorf("%s: %s is %q, want %q", name, listen, got, wantAddr)
	}
	req, lim := c.Resources.Requests, c.Resources.Limits
	if req.Cpu().IsZero() || req.Memory().IsZero() {
		t.Errorf("%s: resource requests %v, want cpu and memory", name, req)
	}
	if lim.Memory().IsZero() || lim.Memory().Cmp(*req.Memory()) < 0 {
		t.Errorf("%s: memory limit %v below request %v", name, lim.Memory(), req.Memory())
	}
	checkEnv(t, name, c, want)
}

// checkEnv: every secret variable from a secretKeyRef (never a value), the ones the process
// needs present, the S3 credentials only where the object store is opened, and nothing but the
// ConfigMap as envFrom.
func checkEnv(t *testing.T, name string, c corev1.Container, want component) {
	t.Helper()
	for _, from := range c.EnvFrom {
		if from.SecretRef != nil || from.ConfigMapRef == nil || from.ConfigMapRef.Name != "prod-splathost-config" {
			t.Errorf("%s: envFrom %+v, want only the ConfigMap", name, from)
		}
	}
	got := map[string]bool{}
	for _, e := range c.Env {
		if !slices.Contains(secretVars, e.Name) {
			continue
		}
		got[e.Name] = true
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil || e.ValueFrom.SecretKeyRef.Name == "" || e.ValueFrom.SecretKeyRef.Key == "" {
			t.Errorf("%s: %s is not from a secretKeyRef: %+v", name, e.Name, e)
		}
	}
	for _, v := range []string{"SPLATHOST_POSTGRES_URL", "SPLATHOST_ADMIN_TOKEN", "SPLATHOST_INTERNAL_SECRET", "SPLATHOST_SESSION_KEYS", "SPLATHOST_WEBHOOK_KEY"} {
		if !got[v] {
			t.Errorf("%s: no %s", name, v)
		}
	}
	for _, v := range []string{"SPLATHOST_S3_ACCESS_KEY", "SPLATHOST_S3_SECRET_KEY"} {
		if got[v] != want.s3 {
			t.Errorf("%s: has %s = %v, want %v (only processes that open the object store)", name, v, got[v], want.s3)
		}
	}
}

// checkConfigMap: no secret in it, and the gateway's upstream URLs name the services' Services
// on their ports (how the processes find each other).
func checkConfigMap(t *testing.T, r rendered, cm *corev1.ConfigMap) {
	t.Helper()
	for _, v := range secretVars {
		if _, ok := cm.Data[v]; ok {
			t.Errorf("ConfigMap holds secret %s", v)
		}
	}
	for svc, v := range map[string]string{"user": "SPLATHOST_USER_URL", "scene": "SPLATHOST_SCENE_URL", "session": "SPLATHOST_SESSION_URL"} {
		s := byName[corev1.Service](r, "prod-splathost-"+svc)
		if s == nil {
			t.Errorf("no Service for %s", svc)
			continue
		}
		want := "http://prod-splathost-" + svc + ":" + itoa(s.Spec.Ports[0].Port)
		if cm.Data[v] != want {
			t.Errorf("%s = %q, want %q (the %s Service)", v, cm.Data[v], want, svc)
		}
		if s.Spec.Ports[0].Port != components[svc].port {
			t.Errorf("Service %s on %d, want %d", svc, s.Spec.Ports[0].Port, components[svc].port)
		}
		checkSelects(t, "Service "+svc, s.Spec.Selector, byName[appsv1.Deployment](r, "prod-splathost-"+svc))
	}
	if byName[corev1.Service](r, "prod-splathost-gateway") == nil {
		t.Error("no gateway Service")
	}
	for _, w := range []string{"worker", "media-worker"} {
		if byName[corev1.Service](r, "prod-splathost-"+w) != nil {
			t.Errorf("a Service for %s, which serves no API", w)
		}
	}
}

// checkMigrateJob: `splathost migrate` as a pre-install and pre-upgrade hook, with the database
// URL from a Secret and the ClickHouse settings inlined (the ConfigMap does not exist yet when a
// pre-install hook runs).
func checkMigrateJob(t *testing.T, r rendered) {
	t.Helper()
	j := byName[batchv1.Job](r, "prod-splathost-migrate")
	if j == nil {
		t.Fatal("no migrate Job")
	}
	hooks := strings.Split(j.Annotations["helm.sh/hook"], ",")
	if !slices.Contains(hooks, "pre-install") || !slices.Contains(hooks, "pre-upgrade") {
		t.Errorf("migrate Job hooks %q, want pre-install and pre-upgrade", j.Annotations["helm.sh/hook"])
	}
	if !strings.Contains(j.Annotations["helm.sh/hook-delete-policy"], "before-hook-creation") {
		t.Errorf("migrate Job delete policy %q: a second upgrade would find the old Job", j.Annotations["helm.sh/hook-delete-policy"])
	}
	c := j.Spec.Template.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"splathost", "migrate"}) {
		t.Errorf("migrate command %v", c.Command)
	}
	if len(c.EnvFrom) != 0 {
		t.Errorf("migrate Job reads envFrom %+v, which a pre-install hook cannot rely on", c.EnvFrom)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["SPLATHOST_POSTGRES_URL"]; e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
		t.Errorf("migrate Job: SPLATHOST_POSTGRES_URL not from a Secret: %+v", e)
	}
	if env["SPLATHOST_CLICKHOUSE_ADDR"].Value == "" {
		t.Error("migrate Job: no SPLATHOST_CLICKHOUSE_ADDR")
	}
	for _, v := range secretVars[1:] {
		if _, ok := env[v]; ok {
			t.Errorf("migrate Job gets %s, which it does not need", v)
		}
	}
	if c.Resources.Requests.Memory().IsZero() {
		t.Error("migrate Job: no memory request")
	}
}

// checkSelects fails unless selector selects the Deployment's pods.
func checkSelects(t *testing.T, what string, selector map[string]string, d *appsv1.Deployment) {
	t.Helper()
	if d == nil {
		t.Errorf("%s: no Deployment to select", what)
		return
	}
	if len(selector) == 0 || !labels.SelectorFromSet(selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("%s: selector %v does not select %s's pods %v", what, selector, d.Name, d.Spec.Template.Labels)
	}
}

// probePort resolves a probe's port (a name or a number) to the container's port number.
func probePort(c corev1.Container, p *corev1.Probe) int32 {
	port := p.HTTPGet.Port
	if port.StrVal == "" {
		return port.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == port.StrVal {
			return cp.ContainerPort
		}
	}
	return -1
}

// itoa formats a port.
func itoa(n int32) string { return strconv.Itoa(int(n)) }
