{{/* The chart's name, at most 63 characters. */}}
{{- define "release-controller.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: the release's name, or <release>-<chart> when the release's
name does not hold the chart's. Objects are <fullname>-controller, <fullname>-api and
<fullname>-build, so it stays short enough for them.
*/}}
{{- define "release-controller.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Labels on every object. */}}
{{- define "release-controller.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "release-controller.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: release-controller
{{- end }}

{{/* Selector labels of a component: include with (dict "ctx" . "component" "controller"). */}}
{{- define "release-controller.selectorLabels" -}}
app.kubernetes.io/name: {{ include "release-controller.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The image reference: repository@digest, else repository:tag (tag: the appVersion). */}}
{{- define "release-controller.image" -}}
{{- if not .Values.image.repository }}
{{- fail "image.repository is required: the registry and repository `make image IMAGE=...` pushed to, e.g. --set image.repository=registry.example.com/release-controller" }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The namespace of the release log. */}}
{{- define "release-controller.logNamespace" -}}
{{- default .Release.Namespace .Values.releaseLog.namespace }}
{{- end }}

{{/* The namespaces where the build service account is created: the release's, the watched and the extra ones. */}}
{{- define "release-controller.buildNamespaces" -}}
{{- $namespaces := list .Release.Namespace }}
{{- range concat .Values.watchNamespaces .Values.build.extraNamespaces }}
{{- $namespaces = append $namespaces . }}
{{- end }}
{{- toJson (uniq $namespaces) }}
{{- end }}

{{/* The restricted Pod Security Standard: the pod's part. */}}
{{- define "release-controller.podSecurityContext" -}}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* The restricted Pod Security Standard: the container's part, with a read-only root. */}}
{{- define "release-controller.securityContext" -}}
allowPrivilegeEscalation: false
capabilities:
  drop:
  - ALL
readOnlyRootFilesystem: true
{{- end }}

{{/*
The signature store of both commands: signing.store, else the file:// store on
signing.claimName.
*/}}
{{- define "release-controller.signatureStore" -}}
{{- if .Values.signing.store -}}
{{ .Values.signing.store }}
{{- else if .Values.signing.claimName -}}
file:///var/lib/release-controller/signatures
{{- end -}}
{{- end }}

{{/*
Image pull secrets of both pods: imagePullSecrets and registryAuth.secretName.
*/}}
{{- define "release-controller.imagePullSecrets" -}}
{{- $secrets := .Values.imagePullSecrets | default list -}}
{{- with .Values.registryAuth.secretName }}
{{- $secrets = append $secrets (dict "name" .) -}}
{{- end }}
{{- with $secrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The registry credentials and signature store mounts of both pods' container, and their volumes.
*/}}
{{- define "release-controller.sharedMounts" -}}
{{- if .Values.registryAuth.secretName }}
- name: registry-auth
  mountPath: /var/run/secrets/release-controller.dev/registry
  readOnly: true
{{- end }}
{{- if .Values.signing.claimName }}
- name: signatures
  mountPath: /var/lib/release-controller/signatures
{{- end }}
{{- end }}

{{- define "release-controller.sharedVolumes" -}}
{{- with .Values.registryAuth.secretName }}
- name: registry-auth
  projected:
    sources:
    - secret:
        name: {{ . }}
        items: [{key: .dockerconfigjson, path: config.json}]
    - secret:
        name: {{ . }}
        items: [{key: ca.crt, path: ca.crt}]
        optional: true
{{- end }}
{{- with .Values.signing.claimName }}
- name: signatures
  persistentVolumeClaim:
    claimName: {{ . }}
{{- end }}
{{- end }}

{{- define "release-controller.registryEnv" -}}
{{- if .Values.registryAuth.secretName }}
- name: DOCKER_CONFIG
  value: /var/run/secrets/release-controller.dev/registry
- name: SSL_CERT_DIR
  value: /var/run/secrets/release-controller.dev/registry
{{- end }}
{{- end }}
