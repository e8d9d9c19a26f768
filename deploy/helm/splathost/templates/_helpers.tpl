{{/*
Names, labels and the shared pieces of every splathost workload.
*/}}

{{- define "splathost.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every resource name, cut to 50 characters so that "-media-worker" (13) still
leaves a Service or label value within the 63 that DNS names allow.
*/}}
{{- define "splathost.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains (include "splathost.name" .) .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "splathost.name" .) | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "splathost.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "splathost.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: pass (dict "root" $ "name" "gateway"). */}}
{{- define "splathost.selectorLabels" -}}
app.kubernetes.io/name: {{ include "splathost.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/*
The processes: binary (cmd/<binary>), the values key of its settings, the port of its HTTP
server (the API for the four API tiers, /healthz, /readyz and /metrics only for the workers),
whether it is an API tier (a Service, CPU autoscaling) and whether it opens the object store
(only those get the S3 credentials). The ports are the ones docker-compose.yml uses.
*/}}
{{- define "splathost.components" -}}
gateway: {key: gateway, binary: gateway, port: 8080, api: true, s3: false, media: false}
user: {key: user, binary: user, port: 8081, api: true, s3: false, media: false}
scene: {key: scene, binary: scene, port: 8082, api: true, s3: true, media: false}
session: {key: session, binary: session, port: 8083, api: true, s3: false, media: false}
worker: {key: worker, binary: worker, port: 8084, api: false, s3: true, media: false}
media-worker: {key: mediaWorker, binary: media-worker, port: 8085, api: false, s3: true, media: true}
{{- end -}}

{{/*
The non-secret settings every process reads (internal/config): the ConfigMap's data, and the
migrate hook's env (a pre-install hook runs before the ConfigMap exists). Each binary reads
only what it needs, as in docker-compose.yml's x-splathost-env.
*/}}
{{- define "splathost.config" -}}
{{- $f := include "splathost.fullname" . -}}
SPLATHOST_TEMPORAL_ADDR: {{ required "temporal.address is required" .Values.temporal.address | quote }}
SPLATHOST_TEMPORAL_NAMESPACE: {{ .Values.temporal.namespace | quote }}
SPLATHOST_TASK_QUEUE: {{ .Values.temporal.taskQueue | quote }}
SPLATHOST_MEDIA_TASK_QUEUE: {{ .Values.temporal.mediaTaskQueue | quote }}
SPLATHOST_CLICKHOUSE_ADDR: {{ required "clickhouse.address is required" .Values.clickhouse.address | quote }}
SPLATHOST_CLICKHOUSE_DB: {{ .Values.clickhouse.database | quote }}
{{- with .Values.clickhouse.cluster }}
SPLATHOST_CLICKHOUSE_CLUSTER: {{ . | quote }}
{{- end }}
SPLATHOST_S3_ENDPOINT: {{ required "s3.endpoint is required" .Values.s3.endpoint | quote }}
SPLATHOST_S3_REGION: {{ .Values.s3.region | quote }}
SPLATHOST_S3_BUCKET: {{ .Values.s3.bucket | quote }}
{{- with .Values.publicURL }}
SPLATHOST_PUBLIC_URL: {{ . | quote }}
{{- end }}
{{- with .Values.assetBaseURL }}
SPLATHOST_ASSET_BASE_URL: {{ . | quote }}
{{- end }}
SPLATHOST_GATEWAY_ADDR: "0.0.0.0:8080"
SPLATHOST_USER_ADDR: "0.0.0.0:8081"
SPLATHOST_SCENE_ADDR: "0.0.0.0:8082"
SPLATHOST_SESSION_ADDR: "0.0.0.0:8083"
SPLATHOST_WORKER_HEALTH_ADDR: "0.0.0.0:8084"
SPLATHOST_MEDIA_HEALTH_ADDR: "0.0.0.0:8085"
{{- $up := .Values.gateway.upstreams | default (dict) }}
SPLATHOST_USER_URL: {{ $up.user | default (printf "http://%s-user:8081" $f) | quote }}
SPLATHOST_SCENE_URL: {{ $up.scene | default (printf "http://%s-scene:8082" $f) | quote }}
SPLATHOST_SESSION_URL: {{ $up.session | default (printf "http://%s-session:8083" $f) | quote }}
SPLATHOST_LOG_LEVEL: {{ .Values.logLevel | quote }}
SPLATHOST_SHUTDOWN_TIMEOUT: {{ .Values.shutdownTimeout | quote }}
{{- with .Values.otlpEndpoint }}
SPLATHOST_OTLP_ENDPOINT: {{ . | quote }}
{{- end }}
{{- with .Values.trustedProxies }}
SPLATHOST_TRUSTED_PROXIES: {{ . | quote }}
{{- end }}
SPLATHOST_RENDITION_MAX_MEMORY: {{ .Values.mediaWorker.renditionMaxMemory | int64 | quote }}
SPLATHOST_RENDITION_CONCURRENCY: {{ .Values.mediaWorker.renditionConcurrency | int | quote }}
{{- range $k, $v := .Values.config }}
{{- include "splathost.notSecret" (dict "name" $k "where" "config") }}
{{ $k }}: {{ include "splathost.str" $v | quote }}
{{- end }}
{{- end -}}

{{/*
A setting's value as the process reads it. Helm reads every number of a values file as a
float64, which toString prints as 1.048576e+06; a whole number is printed as one.
*/}}
{{- define "splathost.str" -}}
{{- if and (kindIs "float64" .) (eq . (float64 (int64 .))) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end -}}

{{/*
The variables that hold a secret. They only ever come from a secretKeyRef: a chart value that
sets one (config, a component's env) fails the render rather than put it in plain text.
*/}}
{{- define "splathost.secretNames" -}}
SPLATHOST_POSTGRES_URL SPLATHOST_ADMIN_TOKEN SPLATHOST_INTERNAL_SECRET SPLATHOST_SESSION_KEYS SPLATHOST_WEBHOOK_KEY SPLATHOST_S3_ACCESS_KEY SPLATHOST_S3_SECRET_KEY
{{- end -}}

{{- define "splathost.notSecret" -}}
{{- if has .name (splitList " " (include "splathost.secretNames" .)) -}}
{{- fail (printf "%s.%s holds a secret: give it through the chart's existingSecret values, never as a value" .where .name) -}}
{{- end -}}
{{- end -}}

{{/*
Secret env of a process, every value a secretKeyRef into a Secret the operator created (never a
value of this chart): pass (dict "root" $ "s3" bool "app" bool). app: the four product secrets;
s3: the object store credentials. The Postgres URL carries the database password, so it comes
from a Secret too (CloudNativePG's <cluster>-app Secret has it under "uri").
*/}}
{{- define "splathost.secretEnv" -}}
{{- $v := .root.Values -}}
- name: SPLATHOST_POSTGRES_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "postgres.existingSecret is required" $v.postgres.existingSecret | quote }}
      key: {{ $v.postgres.urlKey | quote }}
{{- if .app }}
{{- $s := $v.secrets }}
{{- $name := required "secrets.existingSecret is required" $s.existingSecret }}
- name: SPLATHOST_ADMIN_TOKEN
  valueFrom:
    secretKeyRef: {name: {{ $name | quote }}, key: {{ $s.adminTokenKey | quote }}}
- name: SPLATHOST_INTERNAL_SECRET
  valueFrom:
    secretKeyRef: {name: {{ $name | quote }}, key: {{ $s.internalSecretKey | quote }}}
- name: SPLATHOST_SESSION_KEYS
  valueFrom:
    secretKeyRef: {name: {{ $name | quote }}, key: {{ $s.sessionKeysKey | quote }}}
{{- if $s.webhookKeyKey }}
- name: SPLATHOST_WEBHOOK_KEY
  valueFrom:
    secretKeyRef: {name: {{ $name | quote }}, key: {{ $s.webhookKeyKey | quote }}}
{{- end }}
{{- end }}
{{- if .s3 }}
{{- $name := required "s3.existingSecret is required" $v.s3.existingSecret }}
- name: SPLATHOST_S3_ACCESS_KEY
  valueFrom:
    secretKeyRef: {name: {{ $name | quote }}, key: {{ $v.s3.accessKeyKey | quote }}}
- name: SPLATHOST_S3_SECRET_KEY
  valueFrom:
    secretKeyRef: {name: {{ $name | quote }}, key: {{ $v.s3.secretKeyKey | quote }}}
{{- end }}
{{- end -}}

{{/* The image of a component: the media image for the media worker. */}}
{{- define "splathost.image" -}}
{{- $img := ternary .root.Values.mediaImage .root.Values.image .media -}}
{{- printf "%s:%s" $img.repository (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* Pod and container security: the image's unprivileged user (uid 10001, deploy/Dockerfile). */}}
{{- define "splathost.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "splathost.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end -}}
