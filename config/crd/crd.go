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

// Package crd embeds the CustomResourceDefinitions of the kinds a host's
// network data is rendered from, so that kubectl preprov, rendering from
// files, defaults them as the API server would (a link's mtu, a pool
// reference's kind and apiGroup).
package crd

import "embed"

// Rendered holds our CRD and the upstream CRDs of the templates, hosts and
// pools a host's network data is rendered from.
//
//go:embed bases/infrastructure.cluster.x-k8s.io_metal3preprovisioningtemplates.yaml
//go:embed upstream/infrastructure.cluster.x-k8s.io_metal3datatemplates.yaml
//go:embed upstream/infrastructure.cluster.x-k8s.io_metal3machinetemplates.yaml
//go:embed upstream/metal3.io_baremetalhosts.yaml
//go:embed upstream/ipam.metal3.io_ippools.yaml
var Rendered embed.FS
