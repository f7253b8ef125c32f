package localec2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// eksAccess is what the front keeps of one EKS cluster's access: moto
// 5.x answers every access entry call "Not yet implemented" and drops
// accessConfig, so the front holds them (imitated: the calls' shapes are
// EKS's, the judgement of who may do what is not modelled).
type eksAccess struct {
	mode    string
	entries []accessEntry
}

// accessEntry is an EKS access entry as the API answers it.
type accessEntry struct {
	ClusterName      string   `json:"clusterName"`
	PrincipalARN     string   `json:"principalArn"`
	KubernetesGroups []string `json:"kubernetesGroups,omitempty"`
	AccessEntryARN   string   `json:"accessEntryArn"`
	CreatedAt        float64  `json:"createdAt"`
	ModifiedAt       float64  `json:"modifiedAt"`
	Username         string   `json:"username"`
	Type             string   `json:"type"`
}

// eksState is the front's EKS access state, by cluster name.
type eksState struct {
	mu       sync.Mutex
	clusters map[string]*eksAccess
}

func (s *eksState) cluster(name string) *eksAccess {
	if s.clusters == nil {
		s.clusters = map[string]*eksAccess{}
	}
	if s.clusters[name] == nil {
		s.clusters[name] = &eksAccess{}
	}
	return s.clusters[name]
}

// eks serves the EKS requests moto lacks: access entries (create, list,
// describe, delete) and the cluster's authenticationMode (set by
// CreateCluster or UpdateClusterConfig, answered in DescribeCluster). It
// returns nil for requests it leaves to moto.
func (f *Front) eks(req *http.Request) (*http.Response, error) {
	parts := strings.Split(strings.Trim(req.URL.EscapedPath(), "/"), "/")
	if len(parts) == 0 || parts[0] != "clusters" {
		return nil, nil
	}
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	switch {
	case len(parts) == 1 && req.Method == http.MethodPost:
		var in struct {
			Name         string `json:"name"`
			AccessConfig struct {
				AuthenticationMode string `json:"authenticationMode"`
			} `json:"accessConfig"`
		}
		if json.Unmarshal(body, &in) == nil && in.AccessConfig.AuthenticationMode != "" {
			f.eksState.mu.Lock()
			f.eksState.cluster(in.Name).mode = in.AccessConfig.AuthenticationMode
			f.eksState.mu.Unlock()
		}
		return f.Next.RoundTrip(req)
	case len(parts) == 2 && req.Method == http.MethodGet:
		return f.describeCluster(req, parts[1])
	case len(parts) == 3 && parts[2] == "update-config" && req.Method == http.MethodPost:
		return f.updateClusterConfig(req, parts[1], body)
	case len(parts) >= 3 && parts[2] == "access-entries":
		return f.accessEntries(req, parts, body)
	}
	return nil, nil
}

// describeCluster adds the cluster's authenticationMode to moto's answer.
func (f *Front) describeCluster(req *http.Request, name string) (*http.Response, error) {
	resp, err := f.Next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	f.eksState.mu.Lock()
	mode := ""
	if a := f.eksState.clusters[name]; a != nil {
		mode = a.mode
	}
	f.eksState.mu.Unlock()
	if mode == "" {
		return resp, nil
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return passThrough(resp, b), nil
	}
	if c, ok := out["cluster"].(map[string]any); ok {
		c["accessConfig"] = map[string]any{"authenticationMode": mode}
	}
	if b, err = json.Marshal(out); err != nil {
		return nil, err
	}
	return passThrough(resp, b), nil
}

// updateClusterConfig records an accessConfig change, which EKS applies
// one way only (CONFIG_MAP to API_AND_CONFIG_MAP to API); other changes go
// to moto.
func (f *Front) updateClusterConfig(req *http.Request, name string, body []byte) (*http.Response, error) {
	var in struct {
		AccessConfig *struct {
			AuthenticationMode string `json:"authenticationMode"`
		} `json:"accessConfig"`
	}
	if json.Unmarshal(body, &in) != nil || in.AccessConfig == nil || in.AccessConfig.AuthenticationMode == "" {
		return f.Next.RoundTrip(req)
	}
	order := []string{string(ekstypes.AuthenticationModeConfigMap), string(ekstypes.AuthenticationModeApiAndConfigMap), string(ekstypes.AuthenticationModeApi)}
	to := slices.Index(order, in.AccessConfig.AuthenticationMode)
	if to < 0 {
		return eksError(req, http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf("Unsupported authentication mode %s", in.AccessConfig.AuthenticationMode)), nil
	}
	f.eksState.mu.Lock()
	a := f.eksState.cluster(name)
	from := slices.Index(order, a.mode)
	if from > to {
		f.eksState.mu.Unlock()
		return eksError(req, http.StatusBadRequest, "InvalidParameterException", fmt.Sprintf("Unsupported authentication mode update from %s to %s", a.mode, order[to])), nil
	}
	a.mode = order[to]
	f.eksState.mu.Unlock()
	now := float64(time.Now().Unix())
	return jsonResponse(req, http.StatusOK, map[string]any{"update": map[string]any{
		"id": fmt.Sprintf("local-front-%d", time.Now().UnixNano()), "status": "Successful", "type": "AccessConfigUpdate", "createdAt": now,
		"params": []map[string]string{{"type": "AuthenticationMode", "value": order[to]}},
	}})
}

// accessEntries serves /clusters/{name}/access-entries[/{principalArn}].
func (f *Front) accessEntries(req *http.Request, parts []string, body []byte) (*http.Response, error) {
	name := parts[1]
	if resp, err := f.clusterExists(req, name); resp != nil || err != nil {
		return resp, err
	}
	f.eksState.mu.Lock()
	defer f.eksState.mu.Unlock()
	a := f.eksState.cluster(name)
	if len(parts) == 3 {
		switch req.Method {
		case http.MethodGet:
			arns := make([]string, 0, len(a.entries))
			for _, e := range a.entries {
				arns = append(arns, e.PrincipalARN)
			}
			return jsonResponse(req, http.StatusOK, map[string]any{"accessEntries": arns})
		case http.MethodPost:
			var e accessEntry
			if err := json.Unmarshal(body, &e); err != nil || e.PrincipalARN == "" {
				return eksError(req, http.StatusBadRequest, "InvalidParameterException", "principalArn is required"), nil
			}
			if slices.ContainsFunc(a.entries, func(o accessEntry) bool { return o.PrincipalARN == e.PrincipalARN }) {
				return eksError(req, http.StatusConflict, "ResourceInUseException", fmt.Sprintf("The specified access entry resource is already in use on this cluster: %s", e.PrincipalARN)), nil
			}
			if e.Type == "" {
				e.Type = "STANDARD"
			}
			if e.Username == "" {
				e.Username = e.PrincipalARN
				if strings.HasPrefix(e.Type, "EC2_") {
					e.Username = "system:node:{{EC2PrivateDNSName}}"
				}
			}
			now := float64(time.Now().Unix())
			e.ClusterName, e.CreatedAt, e.ModifiedAt = name, now, now
			e.AccessEntryARN = fmt.Sprintf("arn:aws:eks:%s:123456789012:access-entry/%s/%s", Region, name, e.PrincipalARN)
			a.entries = append(a.entries, e)
			return jsonResponse(req, http.StatusOK, map[string]any{"accessEntry": e})
		}
		return eksError(req, http.StatusMethodNotAllowed, "InvalidRequestException", "unsupported method"), nil
	}
	principal, err := url.PathUnescape(strings.Join(parts[3:], "/"))
	if err != nil {
		return eksError(req, http.StatusBadRequest, "InvalidParameterException", err.Error()), nil
	}
	i := slices.IndexFunc(a.entries, func(o accessEntry) bool { return o.PrincipalARN == principal })
	if i < 0 {
		return eksError(req, http.StatusNotFound, "ResourceNotFoundException", "The specified principalArn could not be found. You can view your available access entries with 'list-access-entries'."), nil
	}
	switch req.Method {
	case http.MethodGet:
		return jsonResponse(req, http.StatusOK, map[string]any{"accessEntry": a.entries[i]})
	case http.MethodDelete:
		a.entries = slices.Delete(a.entries, i, i+1)
		return jsonResponse(req, http.StatusOK, map[string]any{})
	}
	return eksError(req, http.StatusMethodNotAllowed, "InvalidRequestException", "unsupported method"), nil
}

// clusterExists answers EKS's ResourceNotFoundException when moto does not
// know the cluster; nil when it does.
func (f *Front) clusterExists(req *http.Request, name string) (*http.Response, error) {
	get := req.Clone(req.Context())
	get.Method, get.Body, get.ContentLength = http.MethodGet, nil, 0
	get.URL.Path, get.URL.RawPath = "/clusters/"+name, ""
	get.URL.RawQuery = ""
	resp, err := f.Next.RoundTrip(get)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return nil, nil
	}
	return eksError(req, http.StatusNotFound, "ResourceNotFoundException", fmt.Sprintf("No cluster found for name: %s.", name)), nil
}

func jsonResponse(req *http.Request, status int, v any) (*http.Response, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(bytes.NewReader(b)),
		ContentLength: int64(len(b)), Request: req, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

// eksError is an EKS REST error: its type in X-Amzn-Errortype, the
// message in the body.
func eksError(req *http.Request, status int, code, msg string) *http.Response {
	resp, _ := jsonResponse(req, status, map[string]string{"message": msg})
	resp.Header.Set("X-Amzn-Errortype", code)
	return resp
}
