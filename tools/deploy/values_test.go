package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
)

// TestChartFixedReplicas: with autoscaling off the Deployments carry the replica counts given,
// no HPA is rendered, and the PDBs stay.
func TestChartFixedReplicas(t *testing.T) {
	r := render(t, values(t, `
gateway: {replicas: 5, autoscaling: {enabled: false}, upstreams: {scene: "http://scene-0:8082,http://scene-1:8082"}}
user: {replicas: 3, autoscaling: {enabled: false}}
scene: {replicas: 4, autoscaling: {enabled: false}}
session: {replicas: 2, autoscaling: {enabled: false}}
worker: {replicas: 6}
mediaWorker: {replicas: 1}
`))
	want := map[string]int32{"gateway": 5, "user": 3, "scene": 4, "session": 2, "worker": 6, "media-worker": 1}
	for name, n := range want {
		d := byName[appsv1.Deployment](r, "prod-splathost-"+name)
		if d == nil || d.Spec.Replicas == nil || *d.Spec.Replicas != n {
			t.Errorf("%s: replicas %v, want %d", name, d.Spec.Replicas, n)
		}
	}
	if hpas := all[autoscalingv2.HorizontalPodAutoscaler](r); len(hpas) != 0 {
		t.Errorf("%d HPAs with autoscaling off", len(hpas))
	}
	if pdbs := all[policyv1.PodDisruptionBudget](r); len(pdbs) != len(components) {
		t.Errorf("%d PDBs, want %d", len(pdbs), len(components))
	}
	// Per-replica upstreams (the gateway's affinity) replace the Service URL of that tier only.
	cm := byName[corev1.ConfigMap](r, "prod-splathost-config")
	if cm.Data["SPLATHOST_SCENE_URL"] != "http://scene-0:8082,http://scene-1:8082" || cm.Data["SPLATHOST_USER_URL"] != "http://prod-splathost-user:8081" {
		t.Errorf("upstreams: scene %q, user %q", cm.Data["SPLATHOST_SCENE_URL"], cm.Data["SPLATHOST_USER_URL"])
	}
}

// TestChartWorkerBacklogHPA: the workers' opt-in HPA scales on the External backlog metric of
// their own task queue (and CPU beside it when asked), per replica.
func TestChartWorkerBacklogHPA(t *testing.T) {
	r := render(t, values(t, `
temporal: {namespace: prod-ns, taskQueue: q-main, mediaTaskQueue: q-media}
worker:
  autoscaling:
    enabled: true
    minReplicas: 2
    maxReplicas: 9
    targetCPUUtilizationPercentage: 80
    backlog: {metricName: temporal_task_queue_backlog, targetPerReplica: 40, matchLabels: {task_type: Activity}}
mediaWorker:
  autoscaling: {enabled: true, minReplicas: 1, maxReplicas: 3}
`))
	for _, tc := range []struct {
		name, queue string
		perReplica  string
		cpu         bool
	}{{"worker", "q-main", "40", true}, {"media-worker", "q-media", "2", false}} {
		hpa := byName[autoscalingv2.HorizontalPodAutoscaler](r, "prod-splathost-"+tc.name)
		if hpa == nil {
			t.Errorf("%s: no HPA", tc.name)
			continue
		}
		var ext *autoscalingv2.ExternalMetricSource
		cpu := false
		for _, m := range hpa.Spec.Metrics {
			switch {
			case m.External != nil:
				ext = m.External
			case m.Resource != nil && m.Resource.Name == corev1.ResourceCPU:
				cpu = true
			}
		}
		if ext == nil {
			t.Errorf("%s: no External backlog metric: %+v", tc.name, hpa.Spec.Metrics)
			continue
		}
		if cpu != tc.cpu {
			t.Errorf("%s: CPU metric %v, want %v", tc.name, cpu, tc.cpu)
		}
		sel := ext.Metric.Selector.MatchLabels
		if ext.Metric.Name != "temporal_task_queue_backlog" || sel["taskqueue"] != tc.queue || sel["namespace"] != "prod-ns" {
			t.Errorf("%s: metric %s %v, want the backlog of %s in prod-ns", tc.name, ext.Metric.Name, sel, tc.queue)
		}
		if ext.Target.Type != autoscalingv2.AverageValueMetricType || ext.Target.AverageValue == nil || ext.Target.AverageValue.String() != tc.perReplica {
			t.Errorf("%s: target %+v, want an average of %s a replica", tc.name, ext.Target, tc.perReplica)
		}
		if d := byName[appsv1.Deployment](r, "prod-splathost-"+tc.name); d == nil || d.Spec.Replicas != nil {
			t.Errorf("%s: Deployment sets replicas under an HPA", tc.name)
		}
	}
	if sel := byName[autoscalingv2.HorizontalPodAutoscaler](r, "prod-splathost-worker").Spec.Metrics; sel == nil {
		t.Fatal("worker HPA lost")
	}
	if got := byName[autoscalingv2.HorizontalPodAutoscaler](r, "prod-splathost-worker"); got.Spec.MaxReplicas != 9 {
		t.Errorf("worker maxReplicas %d, want 9", got.Spec.MaxReplicas)
	}
}

// TestChartNoSecretValue: secret values an operator might try to hand the chart (under keys it
// has no use for) never reach the rendered output; the rendered objects still name the
// operator's Secrets.
func TestChartNoSecretValue(t *testing.T) {
	sentinels := []string{
		"admin-token-SENTINEL-4f1c", "internal-secret-SENTINEL-77aa", "k1:session-key-SENTINEL-0123456789abcdef0123",
		"db-password-SENTINEL-9e2d", "s3-access-SENTINEL-51b0", "s3-secret-SENTINEL-c3d4",
	}
	r := render(t, values(t, `
secrets:
  existingSecret: prod-splathost-secrets
  adminToken: admin-token-SENTINEL-4f1c
  internalSecret: internal-secret-SENTINEL-77aa
  sessionKeys: "k1:session-key-SENTINEL-0123456789abcdef0123"
postgres:
  existingSecret: prod-db-app
  password: db-password-SENTINEL-9e2d
  url: postgres://splathost:db-password-SENTINEL-9e2d@db:5432/splathost
s3:
  existingSecret: prod-s3
  accessKey: s3-access-SENTINEL-51b0
  secretKey: s3-secret-SENTINEL-c3d4
`))
	for _, s := range sentinels {
		if strings.Contains(r.text, s) {
			t.Errorf("rendered output contains the secret value %q", s)
		}
	}
	for _, name := range []string{"prod-splathost-secrets", "prod-db-app", "prod-s3"} {
		if !strings.Contains(r.text, name) {
			t.Errorf("rendered output never references Secret %s", name)
		}
	}
}

// TestChartRefusesSecretAsValue: a secret variable set through the plain-text settings (the
// ConfigMap's config, a Deployment's env) fails the render instead of being written out.
func TestChartRefusesSecretAsValue(t *testing.T) {
	for _, tc := range []struct{ name, vals, mention string }{
		{"config", `config: {SPLATHOST_ADMIN_TOKEN: admin-token-SENTINEL-4f1c}`, "config.SPLATHOST_ADMIN_TOKEN"},
		{"env", `scene: {env: {SPLATHOST_S3_SECRET_KEY: s3-secret-SENTINEL-c3d4}}`, "scene.env.SPLATHOST_S3_SECRET_KEY"},
		{"postgres url", `worker: {env: {SPLATHOST_POSTGRES_URL: "postgres://u:pw@db/x"}}`, "worker.env.SPLATHOST_POSTGRES_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderErr(t, values(t, tc.vals))
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("render error %v, want one naming %s", err, tc.mention)
			}
		})
	}
	// A harmless setting passes through, as the process parses it (Helm reads a values file's
	// numbers as float64: 1048576 must not become 1.048576e+06).
	r := render(t, values(t, `
config: {SPLATHOST_BODY_LIMIT: 1048576}
scene: {env: {SPLATHOST_CLONE_CONCURRENCY: 64}}
`))
	if cm := byName[corev1.ConfigMap](r, "prod-splathost-config"); cm == nil || cm.Data["SPLATHOST_BODY_LIMIT"] != "1048576" {
		t.Errorf("config setting not in the ConfigMap as 1048576: %v", cm.Data)
	}
	d := byName[appsv1.Deployment](r, "prod-splathost-scene")
	if env := d.Spec.Template.Spec.Containers[0].Env; !slices.ContainsFunc(env, func(e corev1.EnvVar) bool {
		return e.Name == "SPLATHOST_CLONE_CONCURRENCY" && e.Value == "64"
	}) {
		t.Errorf("scene env %v, want SPLATHOST_CLONE_CONCURRENCY=64", env)
	}
}

// TestChartAutoscalingNeedsAMetric: an HPA with no metric is refused at render time, not left
// for the API server to reject at install.
func TestChartAutoscalingNeedsAMetric(t *testing.T) {
	_, err := renderErr(t, values(t, `worker: {autoscaling: {enabled: true, backlog: {metricName: ""}}}`))
	if err == nil || !strings.Contains(err.Error(), "worker.autoscaling") {
		t.Fatalf("render error %v, want one about worker.autoscaling", err)
	}
}

// TestChartLongNames: a long name prefix is cut so that every name, the longest component's
// included, stays a valid DNS label (63 characters), and the upstream URLs still name the
// Services.
func TestChartLongNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	r := render(t, map[string]any{"fullnameOverride": long})
	for _, o := range r.objects {
		if len(o.name) > 63 {
			t.Errorf("%s %s: name of %d characters", o.kind, o.name, len(o.name))
		}
	}
	cm := all[corev1.ConfigMap](r)[0]
	if svc := strings.Repeat("x", 50) + "-session"; byName[corev1.Service](r, svc) == nil || cm.Data["SPLATHOST_SESSION_URL"] != "http://"+svc+":8083" {
		t.Errorf("no Service %s behind SPLATHOST_SESSION_URL %q", svc, cm.Data["SPLATHOST_SESSION_URL"])
	}
}
