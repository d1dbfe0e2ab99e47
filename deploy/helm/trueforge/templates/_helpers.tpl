{{/* The chart's name, or nameOverride. */}}
{{- define "trueforge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, used for every object (63 characters at most, a DNS label). */}}
{{- define "trueforge.fullname" -}}
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

{{- define "trueforge.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "trueforge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "trueforge.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "trueforge.labels" -}}
helm.sh/chart: {{ include "trueforge.chart" . }}
{{ include "trueforge.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "trueforge.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "trueforge.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "trueforge.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The Secret holding TRUEFORGE_SECRET_KEY: required, never generated. */}}
{{- define "trueforge.secretName" -}}
{{- required "secrets.existingSecret is required: create a Secret with TRUEFORGE_SECRET_KEY (openssl rand -base64 32), DATABASE_URL and REDIS_URL (see values.yaml)" .Values.secrets.existingSecret }}
{{- end }}

{{/*
PUBLIC_BASE_URL: config.publicBaseUrl, else the first Ingress host (https when the Ingress has TLS).
*/}}
{{- define "trueforge.publicBaseUrl" -}}
{{- if .Values.config.publicBaseUrl }}
{{- .Values.config.publicBaseUrl | trimSuffix "/" }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := (first .Values.ingress.hosts).host }}
{{- printf "%s://%s" (ternary "https" "http" (gt (len .Values.ingress.tls) 0)) $host }}
{{- end }}
{{- end }}

{{/*
TRUEFORGE_ALLOWED_HOSTS: config.allowedHosts, the Ingress hosts and the Service's DNS names. The server
refuses other Host headers (403); loopback names, IP addresses and PUBLIC_BASE_URL's host need no entry.
*/}}
{{- define "trueforge.allowedHosts" -}}
{{- $hosts := list }}
{{- range .Values.config.allowedHosts }}
{{- $hosts = append $hosts . }}
{{- end }}
{{- if .Values.ingress.enabled }}
{{- range .Values.ingress.hosts }}
{{- /* A wildcard Ingress host (*.example.com) is the server's suffix form (.example.com). */}}
{{- $hosts = append $hosts (regexReplaceAll "^\\*\\." .host ".") }}
{{- end }}
{{- end }}
{{- if .Values.config.allowServiceHostnames }}
{{- $svc := include "trueforge.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- $hosts = concat $hosts (list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.config.clusterDomain)) }}
{{- end }}
{{- $hosts | uniq | join "," }}
{{- end }}
