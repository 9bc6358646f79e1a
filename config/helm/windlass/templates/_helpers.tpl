{{/* Names and labels shared by every template. */}}

{{- define "windlass.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name: object names carry the release name so that two releases (even in different
namespaces) never collide on cluster-scoped objects such as the ClusterRole.
*/}}
{{- define "windlass.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "windlass.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "windlass.selectorLabels" -}}
app.kubernetes.io/name: {{ include "windlass.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "windlass.labels" -}}
helm.sh/chart: {{ include "windlass.chart" . }}
{{ include "windlass.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: manager
app.kubernetes.io/part-of: windlass
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "windlass.serviceAccountName" -}}
{{- default (include "windlass.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{- define "windlass.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The hub's pods are told apart from the manager's by name, so no selector matches both. */}}
{{- define "windlass.hubName" -}}
{{- printf "%s-hub" (include "windlass.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "windlass.hubSelectorLabels" -}}
app.kubernetes.io/name: {{ include "windlass.name" . }}-hub
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "windlass.hubLabels" -}}
helm.sh/chart: {{ include "windlass.chart" . }}
{{ include "windlass.hubSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: hub
app.kubernetes.io/part-of: windlass
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The ServiceAccounts the manager may impersonate, as a flow list: the install accounts
InstallPolicies name and the release account. Impersonating any other name is refused by the
API server.
*/}}
{{- define "windlass.impersonatedAccounts" -}}
{{- $names := concat .Values.impersonation.serviceAccountNames (list .Values.release.serviceAccount.name) | uniq }}
{{- toJson $names }}
{{- end }}
