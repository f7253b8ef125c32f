{{/* Chart name, overridable. */}}
{{- define "joiner.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: the release name when it already holds the chart's. */}}
{{- define "joiner.fullname" -}}
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

{{- define "joiner.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "joiner.labels" -}}
helm.sh/chart: {{ include "joiner.chart" . }}
{{ include "joiner.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector labels: the Deployment's, the Service's, the PDB's. */}}
{{- define "joiner.selectorLabels" -}}
app.kubernetes.io/name: {{ include "joiner.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "joiner.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "joiner.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller image: the digest wins over the tag; the tag defaults to appVersion. */}}
{{- define "joiner.controller.image" -}}
{{- $tag := .Values.controller.image.tag | default .Chart.AppVersion }}
{{- if .Values.controller.image.digest }}
{{- printf "%s:%s@%s" .Values.controller.image.repository $tag .Values.controller.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.controller.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
joiner.generatedRules returns, as YAML, the rules of the object of the given
kind in rbac/role.yaml (or the file named third): the copies `make generate`
keeps of config/rbac/role.yaml and config/rbac/sim/role.yaml, which
controller-gen writes from the code's +kubebuilder:rbac markers. The chart
never lists permissions by hand.
*/}}
{{- define "joiner.generatedRules" -}}
{{- $kind := index . 1 }}
{{- $file := "rbac/role.yaml" }}
{{- if gt (len .) 2 }}{{ $file = index . 2 }}{{ end }}
{{- $found := false }}
{{- range $doc := regexSplit "(?m)^---\\s*$" ((index . 0).Files.Get $file) -1 }}
{{- $obj := fromYaml $doc }}
{{- if and $obj (eq (get $obj "kind") $kind) }}
{{- $found = true }}
{{- toYaml (get $obj "rules") }}
{{- end }}
{{- end }}
{{- if not $found }}
{{- fail (printf "%s has no %s: run `make generate`" $file $kind) }}
{{- end }}
{{- end }}

{{/* Patch affinity: a pod (anti-)affinity term without a selector selects this release's pods. */}}
{{- define "joiner.patchAffinity" -}}
{{- if (hasKey .Values.affinity "podAffinity") }}
{{- include "joiner.patchPodAffinity" (merge (dict "podAffinity" .Values.affinity.podAffinity) .) }}
{{- end }}
{{- if (hasKey .Values.affinity "podAntiAffinity") }}
{{- include "joiner.patchPodAffinity" (merge (dict "podAffinity" .Values.affinity.podAntiAffinity) .) }}
{{- end }}
{{- end }}

{{- define "joiner.patchPodAffinity" -}}
{{- if (hasKey .podAffinity "requiredDuringSchedulingIgnoredDuringExecution") }}
{{- range $term := .podAffinity.requiredDuringSchedulingIgnoredDuringExecution }}
{{- include "joiner.patchLabelSelector" (merge (dict "_target" $term) $) }}
{{- end }}
{{- end }}
{{- if (hasKey .podAffinity "preferredDuringSchedulingIgnoredDuringExecution") }}
{{- range $weightedTerm := .podAffinity.preferredDuringSchedulingIgnoredDuringExecution }}
{{- include "joiner.patchLabelSelector" (merge (dict "_target" $weightedTerm.podAffinityTerm) $) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Patch topology spread constraints: one without a selector selects this release's pods. */}}
{{- define "joiner.patchTopologySpreadConstraints" -}}
{{- range $constraint := .Values.topologySpreadConstraints }}
{{- include "joiner.patchLabelSelector" (merge (dict "_target" $constraint) $) }}
{{- end }}
{{- end }}

{{- define "joiner.patchLabelSelector" -}}
{{- if not (hasKey ._target "labelSelector") }}
{{- $selectorLabels := (include "joiner.selectorLabels" .) | fromYaml }}
{{- $_ := set ._target "labelSelector" (dict "matchLabels" $selectorLabels) }}
{{- end }}
{{- end }}

{{/*
joiner.leaderElectionNamespace is where the Lease lives, and so where the
chart's Role grants it: leaderElection.namespace, or a
LEADER_ELECTION_NAMESPACE the user put in controller.env (to share
Karpenter's Lease from another namespace during a migration), else the
release namespace.
*/}}
{{- define "joiner.leaderElectionNamespace" -}}
{{- $ns := .Values.leaderElection.namespace | default "" }}
{{- range .Values.controller.env }}
{{- if and (eq .name "LEADER_ELECTION_NAMESPACE") .value }}
{{- $ns = .value }}
{{- end }}
{{- end }}
{{- $ns | default .Release.Namespace }}
{{- end }}

{{/* joiner.envSet reports "true" when controller.env sets the variable named by the argument. */}}
{{- define "joiner.envSet" -}}
{{- $name := index . 1 }}
{{- range (index . 0).Values.controller.env }}
{{- if eq .name $name }}true{{ end }}
{{- end }}
{{- end }}
