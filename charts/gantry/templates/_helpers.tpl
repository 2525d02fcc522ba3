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

{{- define "gantry.gatewaySelectorLabels" -}}
app.kubernetes.io/name: gantry
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: gateway
{{- end }}

{{/* The gateway's base URL: operator.config.gatewayUrl, else the chart's gateway Service. */}}
{{- define "gantry.gatewayUrl" -}}
{{- if .Values.operator.config.gatewayUrl }}{{ .Values.operator.config.gatewayUrl }}{{ else }}http://{{ include "gantry.gatewayName" . }}.{{ .Release.Namespace }}.svc{{ end }}
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

{{/* The operator's config file (operator/config.ts). */}}
{{- define "gantry.operatorConfig" -}}
{{- $c := .Values.operator.config -}}
image: {{ include "gantry.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
gatewayUrl: {{ include "gantry.gatewayUrl" . | quote }}
{{- with $c.hubUrl }}
hubUrl: {{ . | quote }}
{{- end }}
{{- with $c.watchNamespace }}
watchNamespace: {{ . | quote }}
{{- end }}
resourceProfiles: {{ $c.resourceProfiles | toJson }}
podLabels: {{ $c.podLabels | toJson }}
podAnnotations: {{ $c.podAnnotations | toJson }}
workers: {{ $c.workers }}
listen: "0.0.0.0:8080"
leaderElection:
  enabled: true
  namespace: {{ .Release.Namespace | quote }}
  name: {{ include "gantry.operatorName" . | quote }}
autoscaler: {{ $c.autoscaler | toJson }}
loadReports:
  serviceAccounts: [{{ printf "%s/%s" .Release.Namespace (include "gantry.gatewayName" .) | quote }}]
{{- end }}

{{/* The gateway's config file (server/gateway/config.ts). */}}
{{- define "gantry.gatewayConfig" -}}
listen: "0.0.0.0:8080"
operatorUrls: [{{ printf "http://%s.%s.svc:8080" (include "gantry.operatorName" .) .Release.Namespace | quote }}]
publicUrl: {{ include "gantry.gatewayUrl" . | quote }}
{{- with .Values.operator.config.watchNamespace }}
watchNamespace: {{ . | quote }}
{{- end }}
{{- with .Values.gateway.config }}
{{ toYaml . }}
{{- end }}
{{- end }}
