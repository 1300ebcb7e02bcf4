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
	"errors"
	"slices"
	"strconv"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// ValidateTemplate returns every problem of a network data template that no
// BareMetalHost can fix, in template order: what Compile and Render refuse
// whatever the host (and so whatever Ironic's network_data schema refuses),
// plus route destinations the ramdisk cannot use. Problems that depend on the
// host (annotation values, NIC names, the bootMACAddress fallback) are left
// to Compile, and those of the addresses to Render. Fields are paths under
// spec. A nil nd is network data not known here (a dataTemplateRef, for the
// webhook): only the options are checked, as far as they can be without it.
func ValidateTemplate(nd *capm3.NetworkData, opts ...Option) []*InputError {
	o := newOptions(opts)
	v := &templateValidator{}
	if nd == nil {
		v.add(bondParamErrors(o.bondParams, nil, false)...)
		return v.errs
	}
	links, nets := linkSpecs(nd.Links), networkSpecs(nd.Networks)
	v.host = stubHost(links, nets)
	v.pools = v.compiler()
	ids, errs := linkErrors(links)
	v.add(errs...)
	v.add(networkErrors(nets, ids)...)
	v.links(links)
	for _, s := range nets {
		v.network(s)
	}
	if nd.Services != nil {
		for i, a := range nd.Services.DNS {
			_, err := parseAddress(root+".services.dns["+strconv.Itoa(i)+"]", string(a), eitherFamily)
			v.add(err)
		}
		_, err := v.pools.dns(nil, nd.Services.DNSFromIPPool, root+".services", eitherFamily)
		v.add(err)
	}
	v.add(bondParamErrors(o.bondParams, links, true)...)
	return v.errs
}

// templateValidator runs Render's own checks one link, network and route at a
// time against a stub host, so that every problem is reported, not only the
// first one, and each once.
type templateValidator struct {
	host Host
	// pools is the one compiler of the checks that take addresses from
	// pools, so that two pools of one name and different kinds are found
	// across the template.
	pools *compiler
	errs  []*InputError
}

// add keeps the problems among errs that it has not seen, and skips nil;
// every check here returns *InputError.
func (v *templateValidator) add(errs ...error) {
	for _, err := range errs {
		var inputErr *InputError
		if errors.As(err, &inputErr) && !slices.ContainsFunc(v.errs, func(seen *InputError) bool { return *seen == *inputErr }) {
			v.errs = append(v.errs, inputErr)
		}
	}
}

// compiler is a fresh compiler for one check, so no check sees another's state.
func (v *templateValidator) compiler() *compiler {
	return &compiler{host: v.host, plan: &Plan{pools: map[string]Pool{}}}
}

// links checks each link alone (MAC source, vlanID, bond parameters). A link
// without an id is only reported for that.
func (v *templateValidator) links(links []linkSpec) {
	for _, l := range links {
		if l.id != "" {
			_, err := v.compiler().links([]linkSpec{l})
			v.add(err)
		}
	}
}

// network checks the address source of a static network and each route; a
// route's addresses are checked one by one, so a route reports them all.
func (v *templateValidator) network(s networkSpec) {
	if s.static {
		_, err := v.pools.addressPool(s)
		v.add(err)
	}
	for i, r := range s.routes {
		field := item(s.field+".routes", i, "")
		v.routeAddresses(r, field, s.ipv4)
		_, err := v.pools.route(r, field, s)
		v.add(err)
	}
}

// routeAddresses checks the addresses a route spells out, and that its
// destination is a network address.
func (v *templateValidator) routeAddresses(r routeSpec, field string, ipv4 bool) {
	v.add(networkAddressErr(r, field, ipv4))
	if r.gwString != nil {
		_, err := parseAddress(field+".gateway.string", *r.gwString, family(ipv4))
		v.add(err)
	}
	for i, a := range r.dns {
		_, err := parseAddress(field+".services.dns["+strconv.Itoa(i)+"]", a, family(ipv4))
		v.add(err)
	}
}

// networkAddressErr refuses a route destination that is not the network
// address of its prefix (10.0.0.1/24), which ip route refuses. An unset
// prefix renders as 0, so "10.0.0.0" without a prefix is refused too.
// Render passes it as written: Ironic's schema takes it.
func networkAddressErr(r routeSpec, field string, ipv4 bool) error {
	addr, err := parseAddress(field+".network", r.network, family(ipv4))
	if err != nil {
		return err
	}
	prefix, prefixText := 0, "0 (prefix is unset)"
	if r.prefix != nil {
		prefix, prefixText = int(*r.prefix), strconv.Itoa(int(*r.prefix))
	}
	network, err := addr.Prefix(prefix)
	if err != nil || network.Addr() == addr {
		return nil //nolint:nilerr // a prefix out of range is reported on prefix
	}
	return inputErr(field+".network", "%s has host bits set for prefix %s; use the network address %s, or fix prefix",
		quote(r.network), prefixText, quote(network.Addr().String()))
}

// stubMAC is both a MAC address and a pool name, so one stub annotation
// satisfies every reader.
const stubMAC = "02:00:00:00:00:00"

// stubHost has whatever the template asks of a host: every annotation it
// reads and every interface it names. Checked against it, only the problems
// no BareMetalHost can fix remain.
func stubHost(links []linkSpec, nets []networkSpec) Host {
	host := Host{Annotations: map[string]string{}}
	stubAnnotation := func(key string) {
		if key != "" { // no object can carry an empty annotation key
			host.Annotations[key] = stubMAC
		}
	}
	for _, l := range links {
		if l.mac == nil {
			continue
		}
		stubAnnotation(l.mac.FromAnnotation.Annotation)
		if l.mac.FromHostInterface != "" {
			host.NICs = append(host.NICs, NIC{Name: l.mac.FromHostInterface, MAC: stubMAC})
		}
	}
	for _, s := range nets {
		stubAnnotation(s.poolAnn.Annotation)
		for _, r := range s.routes {
			stubAnnotation(r.gwAnn.Annotation)
		}
	}
	return host
}
