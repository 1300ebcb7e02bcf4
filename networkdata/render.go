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

package networkdata

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Compile checks the whole template against the host and resolves every
// host-dependent value, once per host: Pools then tells the caller which
// IPPools to claim addresses from, and Render, given them, produces the
// document. Errors match ErrInvalidInput, so a template Render would reject
// claims no address. A nil template yields empty lists, as CAPM3 does for a
// template whose networkData has no links, networks or services.
func Compile(nd *capm3.NetworkData, host Host, opts ...Option) (*Plan, error) {
	o := newOptions(opts)
	var links []linkSpec
	var nets []networkSpec
	if nd != nil {
		links, nets = linkSpecs(nd.Links), networkSpecs(nd.Networks)
	}
	ids, err := checkLinks(links)
	if err != nil {
		return nil, err
	}
	if err = checkNetworks(nets, ids); err != nil {
		return nil, err
	}
	if errs := bondParamErrors(o.bondParams, links, true); len(errs) > 0 {
		return nil, errs[0]
	}
	p := &Plan{pools: map[string]Pool{}}
	c := &compiler{host: host, plan: p, bondParams: o.bondParams}
	if p.links, err = c.links(links); err != nil {
		return nil, err
	}
	if p.networks, err = c.networks(nets); err != nil {
		return nil, err
	}
	if nd != nil && nd.Services != nil {
		dns := make([]string, len(nd.Services.DNS))
		for i, a := range nd.Services.DNS {
			dns[i] = string(a)
		}
		if p.services, err = c.dns(dns, nd.Services.DNSFromIPPool, root+".services", eitherFamily); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Render compiles the template and renders it with the addresses, for a
// caller that knows them already.
func Render(nd *capm3.NetworkData, host Host, addresses map[string]Address, opts ...Option) ([]byte, error) {
	p, err := Compile(nd, host, opts...)
	if err != nil {
		return nil, err
	}
	return p.Render(addresses)
}

// Plan is a template compiled against one host: everything but the
// addresses.
type Plan struct {
	links    []any
	networks []networkPlan
	services dnsPlan
	pools    map[string]Pool
}

// Pools returns the sorted, de-duplicated names of every Metal3 IPAM IPPool
// the network data refers to: network addresses (ipAddressFromIPPool,
// fromPoolRef, fromPoolAnnotation), route gateways and DNS servers.
func (p *Plan) Pools() []string {
	names := make([]string, 0, len(p.pools))
	for name, pool := range p.pools {
		if pool.Metal3() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// ClusterAPIPools returns, sorted by name, every Cluster API IPAM pool the
// network data refers to (fromPoolRef of network addresses and route
// gateways).
func (p *Plan) ClusterAPIPools() []Pool {
	var pools []Pool
	for _, pool := range p.pools {
		if !pool.Metal3() {
			pools = append(pools, pool)
		}
	}
	slices.SortFunc(pools, func(a, b Pool) int { return strings.Compare(a.Name, b.Name) })
	return pools
}

// Render returns the network_data document as JSON, valid under Ironic's
// network_data schema. Keys are sorted and list order follows the template,
// so the same input always yields the same bytes. addresses is keyed by pool
// name and must hold every pool Pools and ClusterAPIPools return.
func (p *Plan) Render(addresses map[string]Address) ([]byte, error) {
	doc, err := p.document(addresses)
	if err != nil {
		return nil, err
	}
	return encode(doc)
}

// compiler carries the host and the plan while the template is resolved.
type compiler struct {
	host       Host
	plan       *Plan
	bondParams map[string]map[string]intstr.IntOrString
	// bootMACLink is the field of the one ethernet link whose
	// fromHostInterface may use the host's bootMACAddress; see mac.go.
	bootMACLink string
	// hostInterfaceLinks names the links using fromHostInterface, for errors.
	hostInterfaceLinks []string
}

// document fills the plan with the addresses.
func (p *Plan) document(addresses map[string]Address) (map[string]any, error) {
	networks := make([]any, 0, len(p.networks))
	for i := range p.networks {
		n, err := p.networks[i].render(addresses)
		if err != nil {
			return nil, err
		}
		networks = append(networks, n)
	}
	services, err := p.services.render(addresses)
	if err != nil {
		return nil, err
	}
	return map[string]any{"links": p.links, "networks": networks, "services": services}, nil
}

func lookup(addresses map[string]Address, pool, field string) (Address, error) {
	a, ok := addresses[pool]
	if !ok {
		return Address{}, &MissingAddressError{Pool: pool, Field: field}
	}
	return a, nil
}

// encode marshals with sorted map keys and without HTML escaping, so the
// bytes are stable and addresses read as written.
func encode(doc map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encoding network data: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
