{{/* Names, labels and the pieces every Flamewatch Deployment shares. */}}

{{- define "flamewatch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "flamewatch.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "flamewatch.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flamewatch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "flamewatch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "flamewatch.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels of one component: (dict "root" $ "component" "ingester") */}}
{{- define "flamewatch.componentLabels" -}}
{{ include "flamewatch.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "flamewatch.componentSelector" -}}
{{ include "flamewatch.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "flamewatch.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "flamewatch.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "flamewatch.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Secrets: the chart's own unless an existing one is named. */}}
{{- define "flamewatch.postgresSecret" -}}
{{- if and (eq .Values.postgres.mode "external") .Values.postgres.external.existingSecret -}}
{{- .Values.postgres.external.existingSecret -}}
{{- else -}}
{{- printf "%s-postgres" (include "flamewatch.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "flamewatch.postgresSecretKey" -}}
{{- if and (eq .Values.postgres.mode "external") .Values.postgres.external.existingSecret -}}
{{- .Values.postgres.external.existingSecretPasswordKey -}}
{{- else -}}
password
{{- end -}}
{{- end -}}

{{- define "flamewatch.s3Secret" -}}
{{- if and (eq .Values.objectStorage.mode "external") .Values.objectStorage.external.existingSecret -}}
{{- .Values.objectStorage.external.existingSecret -}}
{{- else -}}
{{- printf "%s-s3" (include "flamewatch.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "flamewatch.s3AccessKeyKey" -}}
{{- if and (eq .Values.objectStorage.mode "external") .Values.objectStorage.external.existingSecret -}}
{{- .Values.objectStorage.external.existingSecretAccessKeyKey -}}
{{- else -}}
access-key
{{- end -}}
{{- end -}}

{{- define "flamewatch.s3SecretKeyKey" -}}
{{- if and (eq .Values.objectStorage.mode "external") .Values.objectStorage.external.existingSecret -}}
{{- .Values.objectStorage.external.existingSecretSecretKeyKey -}}
{{- else -}}
secret-key
{{- end -}}
{{- end -}}

{{/* A generated password that survives upgrades: the one already in the Secret, else a new one.
     (dict "root" $ "secret" NAME "key" KEY "value" FROM-VALUES) */}}
{{- define "flamewatch.password" -}}
{{- if .value -}}
{{- .value -}}
{{- else -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .secret -}}
{{- if and $existing (index $existing.data .key) -}}
{{- index $existing.data .key | b64dec -}}
{{- else -}}
{{- randAlphaNum 32 -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The Postgres DSN, without the password: libpq reads it from PGPASSWORD, so a password needs no
     URL escaping and never shows in the pod spec. */}}
{{- define "flamewatch.postgresDSN" -}}
{{- if eq .Values.postgres.mode "external" -}}
{{- $e := .Values.postgres.external -}}
{{- printf "postgresql://%s@%s:%d/%s?sslmode=%s" $e.user $e.host (int $e.port) $e.database $e.sslmode -}}
{{- else -}}
{{- printf "postgresql://flamewatch@%s-postgres:5432/flamewatch?sslmode=disable" (include "flamewatch.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "flamewatch.s3Endpoint" -}}
{{- if eq .Values.objectStorage.mode "external" -}}
{{- .Values.objectStorage.external.endpoint -}}
{{- else -}}
{{- printf "%s-minio:9000" (include "flamewatch.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* Environment of a service that records events: where it sends them as alerts, and the UI's URL the
     alerts link to (values alertmanager.url and externalUrl). */}}
{{- define "flamewatch.alertingEnv" -}}
{{- with .Values.alertmanager.url }}
- name: FLAMEWATCH_ALERTMANAGER_URL
  value: {{ . | quote }}
{{- with include "flamewatch.externalUrl" $ }}
- name: FLAMEWATCH_WEB_EXTERNAL_URL
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "flamewatch.externalUrl" -}}
{{- if .Values.externalUrl -}}
{{ .Values.externalUrl }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts -}}
{{ ternary "https" "http" (not (empty .Values.ingress.tls)) }}://{{ first .Values.ingress.hosts }}
{{- end -}}
{{- end -}}

{{/* Environment of a service that opens the storage: (dict "root" $ "postgres" true) */}}
{{- define "flamewatch.storageEnv" -}}
{{- $root := .root -}}
- name: FLAMEWATCH_DATA_DIR
  value: /var/lib/flamewatch
{{- if .postgres }}
- name: FLAMEWATCH_STORAGE_POSTGRES_DSN
  value: {{ include "flamewatch.postgresDSN" $root | quote }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "flamewatch.postgresSecret" $root }}
      key: {{ include "flamewatch.postgresSecretKey" $root }}
{{- end }}
- name: FLAMEWATCH_STORAGE_S3_BUCKET
  value: {{ $root.Values.objectStorage.bucket | quote }}
- name: FLAMEWATCH_STORAGE_S3_ENDPOINT
  value: {{ include "flamewatch.s3Endpoint" $root | quote }}
- name: FLAMEWATCH_STORAGE_S3_PREFIX
  value: {{ $root.Values.objectStorage.prefix | quote }}
- name: FLAMEWATCH_STORAGE_S3_INSECURE
  value: {{ if eq $root.Values.objectStorage.mode "bundled" }}"true"{{ else }}{{ $root.Values.objectStorage.external.insecure | toString | quote }}{{ end }}
{{- if and (eq $root.Values.objectStorage.mode "external") $root.Values.objectStorage.external.region }}
- name: FLAMEWATCH_STORAGE_S3_REGION
  value: {{ $root.Values.objectStorage.external.region | quote }}
{{- end }}
- name: FLAMEWATCH_STORAGE_S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "flamewatch.s3Secret" $root }}
      key: {{ include "flamewatch.s3AccessKeyKey" $root }}
- name: FLAMEWATCH_STORAGE_S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "flamewatch.s3Secret" $root }}
      key: {{ include "flamewatch.s3SecretKeyKey" $root }}
{{- end -}}

{{/* The pod spec parts shared by every Flamewatch service.
     (dict "root" $ "component" NAME "args" LIST "env" YAML-STRING "values" COMPONENT-VALUES
           "ports" (list (dict "name" "http" "port" 4100) ...) "volumes" YAML-STRING "mounts" YAML-STRING) */}}
{{- define "flamewatch.podSpec" -}}
{{- $root := .root -}}
serviceAccountName: {{ include "flamewatch.serviceAccountName" $root }}
automountServiceAccountToken: {{ .token | default false }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: {{ .component }}
    image: {{ include "flamewatch.image" $root }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    command: [flamewatch]
    args:
      - {{ .command | default .component }}
      {{- range concat .args .values.extraArgs }}
      - {{ . | quote }}
      {{- end }}
      {{- with $root.Values.security.existingSecret }}
      - {{ printf "--web.config.file=/etc/flamewatch/web/%s" $root.Values.security.webConfigKey | quote }}
      {{- end }}
    env:
      - name: FLAMEWATCH_LOG_LEVEL
        value: {{ $root.Values.logLevel | quote }}
      {{- with .env }}
      {{- . | nindent 6 }}
      {{- end }}
      {{- with .values.extraEnv }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    ports:
      {{- range .ports }}
      - name: {{ .name }}
        containerPort: {{ .port }}
        protocol: TCP
      {{- end }}
    startupProbe:
      httpGet: {path: /healthz, port: http{{ if $root.Values.security.tls }}, scheme: HTTPS{{ end }}}
      periodSeconds: 2
      failureThreshold: 60
    livenessProbe:
      httpGet: {path: /healthz, port: http{{ if $root.Values.security.tls }}, scheme: HTTPS{{ end }}}
      periodSeconds: 10
      timeoutSeconds: 5
      failureThreshold: 6
    readinessProbe:
      httpGet: {path: /readyz, port: http{{ if $root.Values.security.tls }}, scheme: HTTPS{{ end }}}
      periodSeconds: 5
      timeoutSeconds: 5
      failureThreshold: 3
    resources:
      {{- toYaml .values.resources | nindent 6 }}
    securityContext:
      {{- toYaml $root.Values.securityContext | nindent 6 }}
    volumeMounts:
      - name: tmp
        mountPath: /tmp
      - name: data
        mountPath: /var/lib/flamewatch
      {{- with .mounts }}
      {{- . | nindent 6 }}
      {{- end }}
      {{- if $root.Values.security.existingSecret }}
      - name: web-config
        mountPath: /etc/flamewatch/web
        readOnly: true
      {{- end }}
volumes:
  - name: tmp
    emptyDir: {}
  - name: data
    emptyDir: {}
  {{- with .volumes }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with $root.Values.security.existingSecret }}
  - name: web-config
    secret:
      secretName: {{ . }}
      defaultMode: 0440
  {{- end }}
{{- end -}}

{{/* http or https: how the services' HTTP ports are called (security.tls) */}}
{{- define "flamewatch.scheme" -}}
{{ if .Values.security.tls }}https{{ else }}http{{ end }}
{{- end -}}

{{/* A ClusterIP Service for a component: (dict "root" $ "component" NAME "ports" LIST "name" OBJECT-NAME
     "selector" EXTRA-SELECTOR-DICT "labels" EXTRA-LABELS-DICT "type" TYPE "clusterIP" IP
     "publishNotReadyAddresses" "true"|"false", a string so that "false" is written too) */}}
{{- define "flamewatch.service" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ .name }}
  labels:
    {{- include "flamewatch.componentLabels" . | nindent 4 }}
    {{- with .labels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  type: {{ .type | default "ClusterIP" }}
  {{- with .clusterIP }}
  clusterIP: {{ . }}
  {{- end }}
  {{- with .publishNotReadyAddresses }}
  publishNotReadyAddresses: {{ . }}
  {{- end }}
  selector:
    {{- include "flamewatch.componentSelector" . | nindent 4 }}
    {{- with .selector }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- range .ports }}
    - name: {{ .name }}
      port: {{ .servicePort | default .port }}
      targetPort: {{ .name }}
      protocol: TCP
    {{- end }}
{{- end -}}

{{/* The headless twin of a component's Service, gRPC port only: its DNS name resolves to the address of
     every ready pod of the component, for callers that spread their calls over the pods
     (`dns:///NAME:PORT`; a ClusterIP would pin a caller's one gRPC connection to one pod). Not-ready pods
     stay out, so no caller is handed a replica that cannot answer yet. Labelled `flamewatch.io/headless`:
     the ServiceMonitor leaves it out, as it reaches the pods the component's own Service does.
     (dict "root" $ "component" NAME "name" OBJECT-NAME "port" GRPC-PORT) */}}
{{- define "flamewatch.headlessService" -}}
{{ include "flamewatch.service" (dict "root" .root "component" .component "name" .name
  "ports" (list (dict "name" "grpc" "port" .port)) "clusterIP" "None" "publishNotReadyAddresses" "false"
  "labels" (dict "flamewatch.io/headless" "true")) }}
{{- end -}}

{{/* A PodDisruptionBudget: (dict "root" $ "component" NAME "name" OBJECT-NAME "values" COMPONENT-VALUES
     "selector" EXTRA-SELECTOR-DICT) */}}
{{- define "flamewatch.pdb" -}}
{{- if .values.podDisruptionBudget.enabled }}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ .name }}
  labels:
    {{- include "flamewatch.componentLabels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "flamewatch.componentSelector" . | nindent 6 }}
      {{- with .selector }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
{{- end }}
{{- end -}}

{{/* A HorizontalPodAutoscaler: (dict "root" $ "component" NAME "values" COMPONENT-VALUES) */}}
{{- define "flamewatch.hpa" -}}
{{- if .values.autoscaling.enabled }}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "flamewatch.fullname" .root }}-{{ .component }}
  labels:
    {{- include "flamewatch.componentLabels" . | nindent 4 }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "flamewatch.fullname" .root }}-{{ .component }}
  minReplicas: {{ .values.autoscaling.minReplicas }}
  maxReplicas: {{ .values.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .values.autoscaling.targetCPUUtilizationPercentage }}
{{- end }}
{{- end -}}

{{/* A Deployment of a Flamewatch service; takes the podSpec arguments plus "name", "replicas" (omitted
     when nil, for an autoscaler), "selector" (extra selector labels) and "annotations" (pod annotations). */}}
{{- define "flamewatch.deployment" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  labels:
    {{- include "flamewatch.componentLabels" . | nindent 4 }}
    {{- with .selector }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- if not (kindIs "invalid" .replicas) }}
  replicas: {{ .replicas }}
  {{- end }}
  {{- with .strategy }}
  strategy:
    type: {{ . }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "flamewatch.componentSelector" . | nindent 6 }}
      {{- with .selector }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
  template:
    metadata:
      labels:
        {{- include "flamewatch.componentLabels" . | nindent 8 }}
        {{- with .selector }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- $annotations := merge (dict) (.annotations | default dict) .root.Values.podAnnotations }}
      {{- with $annotations }}
      annotations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
    spec:
      {{- include "flamewatch.podSpec" . | nindent 6 }}
{{- end -}}

{{/* The collector's scrape configuration for one shard: (dict "root" $ "shard" N) */}}
{{- define "flamewatch.collectorConfig" -}}
{{- $root := .root -}}
{{- $v := $root.Values.collector -}}
{{- $full := include "flamewatch.fullname" $root -}}
{{- $jobs := list -}}
{{- if $v.selfScrape }}
{{- $services := list (list "ingester" 4100) (list "querier" 4200) (list "frontend" ($root.Values.frontend.service.port | int)) -}}
{{- if $root.Values.symbolizer.enabled }}
{{- $services = append $services (list "symbolizer" 4500) -}}
{{- end }}
{{- range $i := until ($v.shards | int) }}
{{- $services = append $services (list (printf "collector-%d" $i) 4300) -}}
{{- end }}
{{- $static := list -}}
{{- range $services }}
{{- $target := printf "%s-%s:%v" $full (index . 0) (index . 1) -}}
{{- $static = append $static (dict "targets" (list $target) "labels" (dict "service_name" (printf "flamewatch-%s" (regexReplaceAll "-[0-9]+$" (index . 0) "")))) -}}
{{- end }}
{{- if eq $root.Values.mode "single" }}
{{- /* one process: its Service is the frontend's */ -}}
{{- $static = list (dict "targets" (list (printf "%s-frontend:%v" $full $root.Values.frontend.service.port)) "labels" (dict "service_name" "flamewatch")) -}}
{{- end }}
{{- $off := dict "enabled" false -}}
{{- $pprof := dict "memory" $off "goroutine" $off "mutex" $off "block" $off -}}
{{- $job := dict "job_name" "flamewatch" "static_configs" $static "profiling_config" (dict "pprof_config" $pprof) -}}
{{- if $root.Values.security.tls }}{{- $_ := set $job "scheme" "https" -}}{{- end }}
{{- $jobs = append $jobs (merge $job (deepCopy $root.Values.security.selfScrape)) -}}
{{- end }}
{{- range (tpl (toYaml $v.scrapeConfigs) $root | fromYamlArray) }}
{{- $jobs = append $jobs . -}}
{{- end }}
{{- if $v.kubernetesDiscovery.enabled }}
{{- $sd := dict "role" "pod" -}}
{{- with $v.kubernetesDiscovery.namespaces }}
{{- $_ := set $sd "namespaces" (dict "names" .) -}}
{{- end }}
{{- /* One job per profile type, driven by the pod annotations Pyroscope and Grafana Alloy users know:
  profiles.grafana.com/<type>.scrape, .port or .port_name (a declared container port), .path, .scheme. */ -}}
{{- $names := dict "cpu" "process_cpu" "memory" "memory" "goroutine" "goroutine" "mutex" "mutex" "block" "block" -}}
{{- range $type := $v.kubernetesDiscovery.profileTypes }}
{{- $a := printf "__meta_kubernetes_pod_annotation_profiles_grafana_com_%s_" $type -}}
{{- $rules := list
  (dict "source_labels" (list (print $a "scrape")) "regex" "true" "action" "keep")
  (dict "source_labels" (list "__meta_kubernetes_pod_phase") "regex" "Pending|Succeeded|Failed|Unknown" "action" "drop")
  (dict "source_labels" (list (print $a "port") (print $a "port_name") "__meta_kubernetes_pod_container_port_number" "__meta_kubernetes_pod_container_port_name") "regex" "(\\d+);[^;]*;\\1;.*|;(.+);[^;]*;\\2" "action" "keep")
  (dict "source_labels" (list (print $a "scheme")) "regex" "(https?)" "target_label" "__scheme__" "action" "replace")
  (dict "source_labels" (list (print $a "path")) "regex" "(/.*)" "target_label" "__profile_path__" "action" "replace")
  (dict "source_labels" (list "__meta_kubernetes_namespace") "target_label" "namespace" "action" "replace")
  (dict "source_labels" (list "__meta_kubernetes_pod_name") "target_label" "pod" "action" "replace")
  (dict "source_labels" (list "__meta_kubernetes_pod_container_name") "target_label" "container" "action" "replace")
  (dict "source_labels" (list "__meta_kubernetes_namespace" "__meta_kubernetes_pod_container_name") "separator" "/" "target_label" "service_name" "action" "replace")
  (dict "source_labels" (list "__meta_kubernetes_pod_annotation_profiles_grafana_com_service_name") "regex" "(.+)" "target_label" "service_name" "action" "replace")
-}}
{{- $pprof := dict -}}
{{- range $other, $name := $names }}
{{- $_ := set $pprof $name (dict "enabled" (eq $other $type)) -}}
{{- end }}
{{- $jobs = append $jobs (dict "job_name" (printf "kubernetes-pods-%s" $type) "kubernetes_sd_configs" (list $sd) "relabel_configs" $rules "profiling_config" (dict "pprof_config" $pprof)) -}}
{{- end }}
{{- end }}
{{- $shards := $v.shards | int -}}
{{- if gt $shards 1 }}
{{- $sharded := list -}}
{{- range $jobs }}
{{- $job := deepCopy . -}}
{{- $hash := dict "source_labels" (list "__address__") "modulus" $shards "target_label" "__tmp_shard" "action" "hashmod" -}}
{{- $keep := dict "source_labels" (list "__tmp_shard") "regex" (toString $.shard) "action" "keep" -}}
{{- $_ := set $job "relabel_configs" (concat (get $job "relabel_configs" | default list) (list $hash $keep)) -}}
{{- $sharded = append $sharded $job -}}
{{- end }}
{{- $jobs = $sharded -}}
{{- end }}
{{- toYaml (dict "global" $v.global "scrape_configs" $jobs) -}}
{{- end -}}
