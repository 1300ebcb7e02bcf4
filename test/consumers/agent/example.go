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

package agent

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// ExampleHost is one BareMetalHost of an example, with what the project
// renders for it from one of the example's templates and an address of each
// IPPool the template names.
type ExampleHost struct {
	Name, Namespace, BootMACAddress string
	// Template is the example's Metal3PreprovisioningTemplate.
	Template *preprovv1.Metal3PreprovisioningTemplate
	// Addresses are the host's addresses, by pool name.
	Addresses map[string]networkdata.Address
	// Routers are the pools' gateways with their prefix (192.168.111.1/24):
	// the provisioning network's side, read from the pools, never from a
	// rendered document.
	Routers []string
}

// ExampleIPPool is the part of an example's Metal3 IPPool the test reads.
type ExampleIPPool struct {
	Pools []struct {
		Start string `json:"start"`
	} `json:"pools"`
	Prefix     int      `json:"prefix"`
	Gateway    string   `json:"gateway"`
	DNSServers []string `json:"dnsServers"`
}

// LoadExampleHost reads examples/<example> and returns the host named
// host, served by the template named template, as the order-th host (from
// 0) to get an address of each pool: IPAM hands a range out in order.
func LoadExampleHost(example, host, template string, order int) (*ExampleHost, error) {
	objects, err := exampleObjects(example)
	if err != nil {
		return nil, err
	}
	h := &ExampleHost{Name: host, Addresses: map[string]networkdata.Address{}}
	pools := map[string]ExampleIPPool{}
	for _, object := range objects {
		switch name := object.GetName(); {
		case object.GetKind() == "BareMetalHost" && name == host:
			h.Namespace = object.GetNamespace()
			h.BootMACAddress, _, err = unstructured.NestedString(object.Object, "spec", "bootMACAddress")
		case object.GetKind() == "Metal3PreprovisioningTemplate" && name == template:
			h.Template = &preprovv1.Metal3PreprovisioningTemplate{}
			err = convert(object.Object, h.Template)
		case object.GetKind() == "IPPool":
			var pool ExampleIPPool
			err = convert(object.Object["spec"], &pool)
			pools[name] = pool
		}
		if err != nil {
			return nil, fmt.Errorf("examples/%s: %s %s: %w", example, object.GetKind(), object.GetName(), err)
		}
	}
	if h.BootMACAddress == "" || h.Template == nil {
		return nil, fmt.Errorf("examples/%s has no BareMetalHost %s with a bootMACAddress or no Metal3PreprovisioningTemplate %s", example, host, template)
	}
	plan, err := networkdata.Compile(h.Template.Spec.NetworkData, h.RendererHost())
	if err != nil {
		return nil, fmt.Errorf("examples/%s: %s: %w", example, host, err)
	}
	for _, name := range plan.Pools() {
		pool, ok := pools[name]
		if !ok || len(pool.Pools) == 0 {
			return nil, fmt.Errorf("examples/%s has no IPPool %s with a range", example, name)
		}
		start, err := netip.ParseAddr(pool.Pools[0].Start)
		if err != nil {
			return nil, fmt.Errorf("examples/%s: IPPool %s: %w", example, name, err)
		}
		for range order {
			start = start.Next()
		}
		h.Addresses[name] = networkdata.Address{IP: start.String(), Prefix: pool.Prefix, Gateway: pool.Gateway, DNSServers: pool.DNSServers}
		h.Routers = append(h.Routers, pool.Router())
	}
	return h, nil
}

// Router is the pool's gateway with its prefix (192.168.111.1/24).
func (p ExampleIPPool) Router() string {
	return p.Gateway + "/" + strconv.Itoa(p.Prefix)
}

// ExampleRouters are the routers of every IPPool of examples/<example>
// that has a gateway, sorted: the provisioning network's side of the
// example's hosts, read from its pools, never from a rendered document.
func ExampleRouters(example string) ([]string, error) {
	objects, err := exampleObjects(example)
	if err != nil {
		return nil, err
	}
	var routers []string
	for _, object := range objects {
		if object.GetKind() != "IPPool" {
			continue
		}
		var pool ExampleIPPool
		if err := convert(object.Object["spec"], &pool); err != nil {
			return nil, fmt.Errorf("examples/%s: IPPool %s: %w", example, object.GetName(), err)
		}
		if pool.Gateway != "" {
			routers = append(routers, pool.Router())
		}
	}
	slices.Sort(routers)
	return routers, nil
}

// RendererHost is the host as the renderer sees it before inspection.
func (h *ExampleHost) RendererHost() networkdata.Host {
	return networkdata.Host{Name: h.Name, Namespace: h.Namespace, BootMACAddress: h.BootMACAddress}
}

// IPs are the host's addresses, sorted.
func (h *ExampleHost) IPs() []string {
	ips := make([]string, 0, len(h.Addresses))
	for _, address := range h.Addresses {
		ips = append(ips, address.IP)
	}
	slices.Sort(ips)
	return ips
}

// Render renders the template for the host with the addresses.
func (h *ExampleHost) Render(host networkdata.Host, addresses map[string]networkdata.Address) ([]byte, error) {
	return networkdata.Render(h.Template.Spec.NetworkData, host, addresses)
}

func exampleObjects(example string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(framework.RepoRoot(), "examples", example, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("examples/%s: %w", example, os.ErrNotExist)
	}
	var objects []*unstructured.Unstructured
	for _, file := range files {
		read, err := framework.ReadObjects(file)
		if err != nil {
			return nil, err
		}
		objects = append(objects, read...)
	}
	return objects, nil
}

// convert decodes a part of an unstructured object into a typed one.
func convert(from, to any) error {
	data, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, to)
}
