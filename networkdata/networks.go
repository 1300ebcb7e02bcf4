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
	"strconv"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	ipamv1 "github.com/metal3-io/ip-address-manager/api/v1alpha1"
)

// networkSpec is one network of any type, so the five template lists share
// one code path. Static networks (ipv4, ipv6) also carry an address source.
type networkSpec struct {
	field    string
	list     string // the template list it is in, e.g. ipv4DHCP
	kind     string // the rendered "type"
	ipv4     bool
	static   bool
	id, link string
	ipPool   string
	poolRef  capm3.IPPoolReference
	poolAnn  capm3.FromPoolAnnotation
	routes   []routeSpec
}

// routeSpec is one IPv4 or IPv6 route.
type routeSpec struct {
	network    string
	prefix     *int32
	gwString   *string
	gwFromPool string
	gwRef      capm3.IPPoolReference
	gwAnn      capm3.FromPoolAnnotation
	dns        []string
	dnsPool    string
}

// networkSpecs lists the networks in CAPM3's order: ipv4, ipv6, ipv4_dhcp,
// ipv6_dhcp, ipv6_slaac.
func networkSpecs(n *capm3.NetworkDataNetwork) []networkSpec {
	if n == nil {
		return nil
	}
	out := make([]networkSpec, 0, len(n.IPv4)+len(n.IPv6)+len(n.IPv4DHCP)+len(n.IPv6DHCP)+len(n.IPv6SLAAC))
	for i, s := range n.IPv4 {
		out = append(out, networkSpec{
			field: item(root+".networks.ipv4", i, s.ID), list: "ipv4", kind: "ipv4", ipv4: true, static: true,
			id: s.ID, link: s.Link, ipPool: s.IPAddressFromIPPool, poolRef: s.FromPoolRef, poolAnn: s.FromPoolAnnotation,
			routes: routesV4(s.Routes),
		})
	}
	for i, s := range n.IPv6 {
		out = append(out, networkSpec{
			field: item(root+".networks.ipv6", i, s.ID), list: "ipv6", kind: "ipv6", static: true,
			id: s.ID, link: s.Link, ipPool: s.IPAddressFromIPPool, poolRef: s.FromPoolRef, poolAnn: s.FromPoolAnnotation,
			routes: routesV6(s.Routes),
		})
	}
	for i, s := range n.IPv4DHCP {
		out = append(out, networkSpec{
			field: item(root+".networks.ipv4DHCP", i, s.ID), list: "ipv4DHCP", kind: "ipv4_dhcp", ipv4: true,
			id: s.ID, link: s.Link, routes: routesV4(s.Routes),
		})
	}
	for i, s := range n.IPv6DHCP {
		out = append(out, networkSpec{
			field: item(root+".networks.ipv6DHCP", i, s.ID), list: "ipv6DHCP", kind: "ipv6_dhcp",
			id: s.ID, link: s.Link, routes: routesV6(s.Routes),
		})
	}
	for i, s := range n.IPv6SLAAC {
		out = append(out, networkSpec{
			field: item(root+".networks.ipv6SLAAC", i, s.ID), list: "ipv6SLAAC", kind: "ipv6_slaac",
			id: s.ID, link: s.Link, routes: routesV6(s.Routes),
		})
	}
	return out
}

func routesV4(rs []capm3.NetworkDataRoutev4) []routeSpec {
	out := make([]routeSpec, len(rs))
	for i, r := range rs {
		var dns []ipamv1.IPAddressv4Str
		var dnsPool string
		if r.Services != nil {
			dns, dnsPool = r.Services.DNS, r.Services.DNSFromIPPool
		}
		out[i] = routeSpecOf(r.Network, r.Prefix, r.Gateway.String, r.Gateway.FromIPPool, r.Gateway.FromPoolRef,
			r.Gateway.FromPoolAnnotation, dns, dnsPool)
	}
	return out
}

func routesV6(rs []capm3.NetworkDataRoutev6) []routeSpec {
	out := make([]routeSpec, len(rs))
	for i, r := range rs {
		var dns []ipamv1.IPAddressv6Str
		var dnsPool string
		if r.Services != nil {
			dns, dnsPool = r.Services.DNS, r.Services.DNSFromIPPool
		}
		out[i] = routeSpecOf(r.Network, r.Prefix, r.Gateway.String, r.Gateway.FromIPPool, r.Gateway.FromPoolRef,
			r.Gateway.FromPoolAnnotation, dns, dnsPool)
	}
	return out
}

// routeSpecOf is a route of either family (A is the family's address type)
// with its addresses as strings: the one reading of CAPM3's route, which
// its IPv4 and IPv6 types spell twice.
func routeSpecOf[A ~string](network A, prefix *int32, gateway *A, gwFromPool string, gwRef capm3.IPPoolReference,
	gwAnn capm3.FromPoolAnnotation, dns []A, dnsPool string,
) routeSpec {
	spec := routeSpec{network: string(network), prefix: prefix, gwFromPool: gwFromPool, gwRef: gwRef, gwAnn: gwAnn, dnsPool: dnsPool}
	if gateway != nil {
		gw := string(*gateway)
		spec.gwString = &gw
	}
	for _, address := range dns {
		spec.dns = append(spec.dns, string(address))
	}
	return spec
}

// networkPlan is a network with every source resolved to a pool name.
type networkPlan struct {
	field       string
	kind        string
	id, link    string
	ipv4        bool
	addressPool Pool // static networks only
	routes      []routePlan
}

type routePlan struct {
	network, netmask string
	ipv4             bool
	gateway          string
	gatewayPool      Pool // when set, the gateway is the pool's gateway
	gatewayField     string
	services         dnsPlan
}

// dnsPlan is a list of DNS servers, followed by those of a pool if set, all
// of the family (see family, or eitherFamily).
type dnsPlan struct {
	addresses []string
	pool      string
	field     string
	family    string
}

func (c *compiler) networks(specs []networkSpec) ([]networkPlan, error) {
	out := make([]networkPlan, 0, len(specs))
	for _, s := range specs {
		n := networkPlan{field: s.field, kind: s.kind, id: s.id, link: s.link, ipv4: s.ipv4}
		if s.static {
			pool, err := c.addressPool(s)
			if err != nil {
				return nil, err
			}
			n.addressPool = pool
		}
		n.routes = make([]routePlan, 0, len(s.routes))
		for i, r := range s.routes {
			rp, err := c.route(r, item(s.field+".routes", i, ""), s)
			if err != nil {
				return nil, err
			}
			n.routes = append(n.routes, rp)
		}
		out = append(out, n)
	}
	return out, nil
}

// addressPool picks the pool of a static network in CAPM3's order:
// fromPoolAnnotation, then fromPoolRef, then ipAddressFromIPPool.
func (c *compiler) addressPool(s networkSpec) (Pool, error) {
	switch {
	case s.poolAnn != (capm3.FromPoolAnnotation{}):
		return c.poolFromAnnotation(s.poolAnn, s.field+".fromPoolAnnotation", "ipAddressFromIPPool or fromPoolRef")
	case s.poolRef.Name != "":
		return c.poolFromRef(s.poolRef, s.field+".fromPoolRef")
	case s.ipPool != "":
		return c.usePool(metal3Pool(s.ipPool), s.field+".ipAddressFromIPPool")
	}
	return Pool{}, inputErr(s.field, "has no address source; set ipAddressFromIPPool, fromPoolRef or fromPoolAnnotation to a Metal3 IPPool, or use an ipv4DHCP, ipv6DHCP or ipv6SLAAC network")
}

// route resolves one route of network s. Ironic's network_data schema
// requires a network address, a netmask and a gateway of the route's family.
func (c *compiler) route(r routeSpec, field string, s networkSpec) (routePlan, error) {
	prefix := 0 // CAPM3 renders a route without prefix as a zero-length mask
	if r.prefix != nil {
		prefix = int(*r.prefix)
	}
	mask, ok := netmask(prefix, s.ipv4)
	if !ok {
		return routePlan{}, inputErr(field+".prefix", "%d is not a valid %s prefix length; use %s", prefix, family(s.ipv4), prefixRange(s.ipv4))
	}
	if mask == ironicRefusedMask {
		return routePlan{}, inputErr(field+".prefix", "32 renders netmask %s, which Ironic's network_data schema refuses, so no /32 route can reach the host; use a shorter prefix or drop the route", mask)
	}
	if _, err := parseAddress(field+".network", r.network, family(s.ipv4)); err != nil {
		return routePlan{}, err
	}
	rp := routePlan{network: r.network, netmask: mask, ipv4: s.ipv4, gatewayField: field + ".gateway"}
	gw := field + ".gateway"
	var err error
	// CAPM3's order: string, fromPoolAnnotation, fromPoolRef, fromIPPool.
	switch {
	case r.gwString != nil:
		_, err = parseAddress(gw+".string", *r.gwString, family(s.ipv4))
		rp.gateway = *r.gwString
	case r.gwAnn != (capm3.FromPoolAnnotation{}) && !s.static:
		// CAPM3's getReferencedPools claims no address from an annotation's
		// pool on these networks, and its getRoutesv4/v6 then fail.
		err = inputErr(gw+".fromPoolAnnotation", "is not supported on a route of an %s network: CAPM3 claims no address from that pool there, "+
			"so the host's Metal3Data fails at provisioning; use fromIPPool, fromPoolRef or string", s.list)
	case r.gwAnn != (capm3.FromPoolAnnotation{}):
		rp.gatewayPool, err = c.poolFromAnnotation(r.gwAnn, gw+".fromPoolAnnotation", "string, fromIPPool or fromPoolRef")
	case r.gwRef.Name != "":
		rp.gatewayPool, err = c.poolFromRef(r.gwRef, gw+".fromPoolRef")
	case r.gwFromPool != "":
		rp.gatewayPool, err = c.usePool(metal3Pool(r.gwFromPool), gw+".fromIPPool")
	default:
		err = inputErr(gw, "has no source; set string, fromIPPool or fromPoolRef: Ironic's network_data schema requires a gateway on every route")
	}
	if err != nil {
		return routePlan{}, err
	}
	rp.services, err = c.dns(r.dns, r.dnsPool, field+".services", family(s.ipv4))
	return rp, err
}

// dns plans a list of DNS services of the family: the addresses the
// template spells out, then those of a pool. field is the services path.
func (c *compiler) dns(addresses []string, pool, field, fam string) (dnsPlan, error) {
	for i, a := range addresses {
		if _, err := parseAddress(field+".dns["+strconv.Itoa(i)+"]", a, fam); err != nil {
			return dnsPlan{}, err
		}
	}
	if pool != "" {
		if _, err := c.usePool(metal3Pool(pool), field+".dnsFromIPPool"); err != nil {
			return dnsPlan{}, err
		}
	}
	return dnsPlan{addresses: addresses, pool: pool, field: field + ".dnsFromIPPool", family: fam}, nil
}

func (n *networkPlan) render(addresses map[string]Address) (map[string]any, error) {
	routes := make([]any, 0, len(n.routes))
	for i := range n.routes {
		r, err := n.routes[i].render(addresses)
		if err != nil {
			return nil, err
		}
		routes = append(routes, r)
	}
	// network_id is what Ironic's schema requires and CAPM3 leaves out; the
	// network's id is unique in the document, so it is a sound value.
	entry := map[string]any{"type": n.kind, "id": n.id, "network_id": n.id, "link": n.link, "routes": routes}
	if n.addressPool.Name == "" {
		return entry, nil
	}
	a, err := lookup(addresses, n.addressPool.Name, n.field)
	if err != nil {
		return nil, err
	}
	if problem, _ := addressProblem(a.IP, family(n.ipv4)); problem != "" {
		return nil, inputErr(n.field, "%s gave address %s, which %s; use a pool of the network's family", n.addressPool, quote(a.IP), problem)
	}
	mask, ok := netmask(a.Prefix, n.ipv4)
	if !ok {
		return nil, inputErr(n.field, "%s gave prefix %d, which is not a valid %s prefix length (%s); fix the prefix of the pool", n.addressPool, a.Prefix, family(n.ipv4), prefixRange(n.ipv4))
	}
	if mask == ironicRefusedMask {
		return nil, inputErr(n.field, "%s gave prefix 32, whose netmask %s Ironic's network_data schema refuses; give the pool a shorter prefix", n.addressPool, mask)
	}
	entry["ip_address"] = a.IP
	entry["netmask"] = mask
	return entry, nil
}

func (r *routePlan) render(addresses map[string]Address) (map[string]any, error) {
	gateway := r.gateway
	if r.gatewayPool.Name != "" {
		a, err := lookup(addresses, r.gatewayPool.Name, r.gatewayField)
		if err != nil {
			return nil, err
		}
		if a.Gateway == "" {
			return nil, inputErr(r.gatewayField, "%s has no gateway, and Ironic's network_data schema requires one on every route; set the pool's spec.gateway, or give the route a gateway string", r.gatewayPool)
		}
		if problem, _ := addressProblem(a.Gateway, family(r.ipv4)); problem != "" {
			return nil, inputErr(r.gatewayField, "%s gave gateway %s, which %s; use a pool of the route's family", r.gatewayPool, quote(a.Gateway), problem)
		}
		gateway = a.Gateway
	}
	services, err := r.services.render(addresses)
	if err != nil {
		return nil, err
	}
	return map[string]any{"network": r.network, "netmask": r.netmask, "gateway": gateway, "services": services}, nil
}

// render lists the DNS services; CAPM3 emits an empty list, never null.
func (d *dnsPlan) render(addresses map[string]Address) ([]any, error) {
	out := make([]any, 0, len(d.addresses))
	for _, a := range d.addresses {
		out = append(out, dnsService(a))
	}
	if d.pool == "" {
		return out, nil
	}
	a, err := lookup(addresses, d.pool, d.field)
	if err != nil {
		return nil, err
	}
	for _, s := range a.DNSServers {
		if problem, _ := addressProblem(s, d.family); problem != "" {
			return nil, inputErr(d.field, "IPPool %s lists DNS server %s, which %s; list only %s DNS servers on the IPPool, or write them in services.dns",
				quote(d.pool), quote(s), problem, d.family)
		}
		out = append(out, dnsService(s))
	}
	return out, nil
}

func dnsService(address string) map[string]any {
	return map[string]any{"type": "dns", "address": address}
}
