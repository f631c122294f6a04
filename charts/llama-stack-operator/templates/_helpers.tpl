{{/* The labels of every object: the kustomize install's, and Helm's own. */}}
{{- define "llso.labels" -}}
app.kubernetes.io/name: llama-stack-operator
app.kubernetes.io/part-of: llama-stack-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The operator's image: pinned by digest when one is given. */}}
{{- define "llso.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* The operator's ServiceAccount, as a binding's subject. */}}
{{- define "llso.subject" -}}
- kind: ServiceAccount
  name: llama-stack-operator
  namespace: {{ .Release.Namespace }}
{{- end }}

{{/* The certificate mode, checked. */}}
{{- define "llso.certMode" -}}
{{- $mode := .Values.certificates.mode -}}
{{- if not (has $mode (list "self-managed" "cert-manager" "openshift")) -}}
{{- fail (printf "certificates.mode must be self-managed, cert-manager or openshift, not %q" $mode) -}}
{{- end -}}
{{- $mode -}}
{{- end }}

{{/* Annotations that have the webhook's CA injected (CRD and ValidatingWebhookConfiguration). */}}
{{- define "llso.caInjection" -}}
{{- $mode := include "llso.certMode" . -}}
{{- if eq $mode "cert-manager" -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/llama-stack-operator-webhook
{{- else if eq $mode "openshift" -}}
service.beta.openshift.io/inject-cabundle: "true"
{{- end -}}
{{- end }}
