{{/* Names and labels shared by every template. */}}
{{- define "gantry.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{ else }}{{ printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}{{ end }}
{{- end }}

{{- define "gantry.operatorName" -}}
{{ include "gantry.fullname" . | trunc 54 | trimSuffix "-" }}-operator
{{- end }}

{{- define "gantry.gatewayName" -}}
{{ include "gantry.fullname" . | trunc 55 | trimSuffix "-" }}-gateway
{{- end }}

{{- define "gantry.brokerName" -}}
{{ include "gantry.fullname" . | trunc 56 | trimSuffix "-" }}-broker
{{- end }}

{{- define "gantry.brokerSelectorLabels" -}}
app.kubernetes.io/name: gantry
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: broker
{{- end }}

{{- define "gantry.gatewaySelectorLabels" -}}
app.kubernetes.io/name: gantry
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end }}

{{/*
The gateway's base URL as users reach it: operator.config.gatewayUrl, else the Ingress host or the HTTPRoute host when
enabled, else the chart's gateway Service.
*/}}
{{- define "gantry.gatewayUrl" -}}
{{- $g := .Values.gateway -}}
{{- if .Values.operator.config.gatewayUrl }}{{ .Values.operator.config.gatewayUrl }}
{{- else if and $g.ingress.enabled $g.ingress.host }}{{ ternary "https" "http" $g.ingress.tls.enabled }}://{{ $g.ingress.host }}
{{- else if and $g.httpRoute.enabled $g.httpRoute.host }}{{ ternary "https" "http" $g.httpRoute.https }}://{{ $g.httpRoute.host }}
{{- else }}http://{{ include "gantry.gatewayName" . }}.{{ .Release.Namespace }}.svc{{ if ne (int $g.service.port) 80 }}:{{ $g.service.port }}{{ end }}
{{- end }}
{{- end }}

{{/* Pod-level settings shared by the chart's Deployments: pull secrets, placement. Argument: the component's values. */}}
{{- define "gantry.podPlacement" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "gantry.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "gantry.labels" -}}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: gantry
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gantry.operatorSelectorLabels" -}}
app.kubernetes.io/name: gantry
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The operator's config file (operator/config.ts): operator.config plus what the chart decides. */}}
{{- define "gantry.operatorConfig" -}}
{{- $c := omit .Values.operator.config "gatewayUrl" "hubUrl" "watchNamespace" -}}
{{- with .Values.operator.config.hubUrl }}
{{- $_ := set $c "hubUrl" . }}
{{- end }}
{{- with .Values.operator.config.watchNamespace }}
{{- $_ := set $c "watchNamespace" . }}
{{- end }}
{{- $_ := set $c "gatewayUrl" (include "gantry.gatewayUrl" .) }}
{{- $_ := set $c "image" (include "gantry.image" .) }}
{{- $_ := set $c "imagePullPolicy" .Values.image.pullPolicy }}
{{- $_ := set $c "listen" "0.0.0.0:8080" }}
{{- $_ := set $c "leaderElection" (dict "enabled" true "namespace" .Release.Namespace "name" (include "gantry.operatorName" .)) }}
{{- $_ := set $c "loadReports" (dict "serviceAccounts" (list (printf "%s/%s" .Release.Namespace (include "gantry.gatewayName" .)))) }}
{{- toYaml $c }}
{{- end }}

{{/* The gateway's config file (server/gateway/config.ts). */}}
{{- define "gantry.gatewayConfig" -}}
listen: "0.0.0.0:8080"
# /metrics (org, app and key ids) on its own port, which the Service names but the Ingress and route never publish.
metricsListen: "0.0.0.0:9090"
operatorUrls: [{{ printf "http://%s.%s.svc:8080" (include "gantry.operatorName" .) .Release.Namespace | quote }}]
publicUrl: {{ include "gantry.gatewayUrl" . | quote }}
{{- with .Values.operator.config.watchNamespace }}
watchNamespace: {{ . | quote }}
{{- end }}
{{- $config := deepCopy .Values.gateway.config }}
{{- if .Values.broker.enabled }}
{{- /* The chart's broker is the queue's, unless gateway.config.queue.redisUrl names another. */}}
{{- $queue := get $config "queue" | default dict }}
{{- if not (get $queue "redisUrl") }}
{{- $_ := set $queue "redisUrl" (printf "redis://%s.%s.svc:6379" (include "gantry.brokerName" .) .Release.Namespace) }}
{{- $_ := set $config "queue" $queue }}
{{- end }}
{{- end }}
{{- with $config }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Where the operator's and the gateway's permissions apply: with operator.config.watchNamespace set, a Role and RoleBinding
in that namespace (they touch nothing else); otherwise a ClusterRole and ClusterRoleBinding. Call with (list . "name").
*/}}
{{- define "gantry.scopedRoleKind" -}}
{{- if .Values.operator.config.watchNamespace }}Role{{ else }}ClusterRole{{ end }}
{{- end }}

{{- define "gantry.scopedRoleMetadata" -}}
{{- $root := index . 0 -}}
name: {{ index . 1 }}
{{- with $root.Values.operator.config.watchNamespace }}
namespace: {{ . | quote }}
{{- end }}
{{- end }}
