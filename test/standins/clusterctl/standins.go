/*
Copyright The capm3-preprov Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

// Package standins lays out, in a local clusterctl repository, stand-ins for
// the providers `clusterctl init --infrastructure metal3,metal3-preprov
// --ipam metal3` takes from the internet: Cluster API's core and kubeadm
// providers built from the cluster-api module's config as its release does,
// and Metal3 (CAPM3) and Metal3 IPAM made of their CRDs from
// config/crd/upstream and a manager of the shape clusterctl installs. No
// controller of theirs runs: their images (on the .invalid domain) are never
// pulled, as a test control plane has no kubelet.
package standins

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
)

// Versions of the stand-ins: those of the modules in go.mod.
const (
	CAPIVersion   = "v1.13.4"
	Metal3Version = "v1.13.2"
)

// Provider is a provider of the repository, as clusterctl's configuration
// names it.
type Provider struct {
	// Name and Type are clusterctl's: cluster-api and CoreProvider.
	Name, Type string
	// Components is the components YAML's path.
	Components string
}

// Config is a clusterctl configuration (clusterctl.yaml) with the providers.
func Config(providers ...Provider) string {
	var config strings.Builder
	config.WriteString("providers:\n")
	for _, p := range providers {
		fmt.Fprintf(&config, "  - name: %s\n    type: %s\n    url: file://%s\n", p.Name, p.Type, p.Components)
	}
	return config.String()
}

// Build lays out the stand-in providers under dir as clusterctl's local
// repository wants them ({dir}/{type-name}/{version}/ with the components
// YAML and metadata.yaml) and returns them. root is our repository,
// kustomize the kustomize binary, capiDir the cluster-api module.
func Build(ctx context.Context, root, kustomize, capiDir, dir string) ([]Provider, error) {
	metadata, err := os.ReadFile(filepath.Join(capiDir, "metadata.yaml"))
	if err != nil {
		return nil, err
	}
	var providers []Provider
	// Cluster API releases one metadata.yaml for its three providers.
	for _, capi := range []struct{ name, kind, label, config, file string }{
		{"cluster-api", "CoreProvider", "cluster-api", "config", "core-components.yaml"},
		{"kubeadm", "BootstrapProvider", "bootstrap-kubeadm", "bootstrap/kubeadm/config", "bootstrap-components.yaml"},
		{"kubeadm", "ControlPlaneProvider", "control-plane-kubeadm", "controlplane/kubeadm/config", "control-plane-components.yaml"},
	} {
		components, err := kustomizeBuild(ctx, kustomize, filepath.Join(capiDir, capi.config))
		if err != nil {
			return nil, err
		}
		provider, err := write(dir, capi.label, CAPIVersion, capi.file, components, metadata)
		if err != nil {
			return nil, err
		}
		provider.Name, provider.Type = capi.name, capi.kind
		providers = append(providers, provider)
	}

	for _, metal3 := range []struct {
		kind, label, file, crdPrefix string
		manager                      manager
	}{
		{"InfrastructureProvider", "infrastructure-metal3", "infrastructure-components.yaml", "infrastructure.cluster.x-k8s.io_metal3",
			manager{Namespace: "capm3-system", Prefix: "capm3", Image: "cluster-api-provider-metal3",
				Group: "infrastructure.cluster.x-k8s.io", Args: []string{
					// As CAPM3's release sets it from the clusterctl variable.
					"--enable-bmh-name-based-preallocation=${ENABLE_BMH_NAME_BASED_PREALLOCATION:=false}",
				}}},
		{"IPAMProvider", "ipam-metal3", "ipam-components.yaml", "ipam.metal3.io_",
			manager{Namespace: "metal3-ipam-system", Prefix: "ipam", Image: "ip-address-manager", Group: "ipam.metal3.io"}},
	} {
		crds, err := upstreamCRDs(root, metal3.crdPrefix)
		if err != nil {
			return nil, err
		}
		components := append(metal3.manager.components(), crds...)
		provider, err := write(dir, metal3.label, Metal3Version, metal3.file, components, []byte(metal3Metadata))
		if err != nil {
			return nil, err
		}
		provider.Name, provider.Type = "metal3", metal3.kind
		providers = append(providers, provider)
	}
	return providers, nil
}

// upstreamCRDs are the CRDs of config/crd/upstream whose files start with
// prefix, as one YAML stream.
func upstreamCRDs(root, prefix string) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "upstream", prefix+"*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no %s CRDs in config/crd/upstream", prefix)
	}
	var crds []byte
	for _, file := range files {
		crd, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if filepath.Base(file) == "infrastructure.cluster.x-k8s.io_metal3datas.yaml" {
			crd = skipCRDNameCheck(crd)
		}
		crds = append(crds, "---\n"...)
		crds = append(crds, crd...)
	}
	return crds, nil
}

// skipCRDNameCheck annotates Metal3Data's CRD so that clusterctl init does
// not refuse it: its name (metal3datas) is not the plural Cluster API's
// naming check derives (metal3data), and no core Cluster API CRD refers to
// it, which is what the annotation says.
func skipCRDNameCheck(crd []byte) []byte {
	return bytes.Replace(crd, []byte("\n  annotations:\n"),
		[]byte("\n  annotations:\n    "+clusterctlv1.SkipCRDNamePreflightCheckAnnotation+": \"true\"\n"), 1)
}

// metal3Metadata maps the stand-ins' release series to the contract
// clusterctl CAPIVersion installs.
const metal3Metadata = `apiVersion: clusterctl.cluster.x-k8s.io/v1alpha3
kind: Metadata
releaseSeries:
  - major: 1
    minor: 13
    contract: v1beta2
`

// manager is a provider's controller as clusterctl installs it: its
// namespace, service account, cluster role and binding, and Deployment.
type manager struct {
	Namespace, Prefix, Image, Group string
	Args                            []string
}

func (m manager) components() []byte {
	var args strings.Builder
	for _, arg := range m.Args {
		fmt.Fprintf(&args, "        - %q\n", arg)
	}
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[2]s-manager
  namespace: %[1]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: %[2]s-manager-role
rules:
  - apiGroups: [%[4]s]
    resources: ["*"]
    verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %[2]s-manager-rolebinding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: %[2]s-manager-role
subjects:
  - kind: ServiceAccount
    name: %[2]s-manager
    namespace: %[1]s
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[2]s-controller-manager
  namespace: %[1]s
spec:
  selector:
    matchLabels:
      control-plane: controller-manager
  template:
    metadata:
      labels:
        control-plane: controller-manager
    spec:
      serviceAccountName: %[2]s-manager
      containers:
      - name: manager
        image: stand-in.invalid/%[3]s:%[5]s
        args:
%[6]s`, m.Namespace, m.Prefix, m.Image, m.Group, Metal3Version, args.String()))
}

// kustomizeBuild builds config's default on a copy: the module cache is
// read-only and kustomize needs nothing outside config.
func kustomizeBuild(ctx context.Context, kustomize, config string) ([]byte, error) {
	work, err := os.MkdirTemp("", "capi-config-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(work) }() // a copy left behind fails no test
	if err = os.CopyFS(work, os.DirFS(config)); err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kustomize, "build", filepath.Join(work, "default"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w\n%s", config, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// write writes a provider's version folder and returns it with the path of
// its components YAML.
func write(dir, label, version, file string, components, metadata []byte) (Provider, error) {
	versionDir := filepath.Join(dir, label, version)
	if err := os.MkdirAll(versionDir, 0o755); err != nil {
		return Provider{}, err
	}
	if err := os.WriteFile(filepath.Join(versionDir, "metadata.yaml"), metadata, 0o644); err != nil {
		return Provider{}, err
	}
	path := filepath.Join(versionDir, file)
	return Provider{Components: path}, os.WriteFile(path, components, 0o644)
}
