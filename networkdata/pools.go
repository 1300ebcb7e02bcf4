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
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

const (
	metal3IPAMGroup = "ipam.metal3.io"
	metal3PoolKind  = "IPPool"
)

// poolFromRef accepts only Metal3 IPAM IPPools; an empty apiGroup or kind
// defaults to them, as in CAPM3. CAPI IPAM pools are not served here.
func (c *compiler) poolFromRef(ref capm3.IPPoolReference, field string) (string, error) {
	group, kind := ref.APIGroup, ref.Kind
	if group == "" {
		group = metal3IPAMGroup
	}
	if kind == "" {
		kind = metal3PoolKind
	}
	if group != metal3IPAMGroup || kind != metal3PoolKind {
		return "", inputErr(field, "refers to kind %s of apiGroup %s, but only Metal3 IPAM IPPools (apiGroup ipam.metal3.io, kind IPPool) are supported for preprovisioning; refer to a Metal3 IPPool",
			quote(kind), quote(group))
	}
	return c.usePool(ref.Name), nil
}

// poolFromAnnotation reads a pool name from a BareMetalHost annotation.
func (c *compiler) poolFromAnnotation(a capm3.FromPoolAnnotation, field, alternative string) (string, error) {
	name, err := c.annotation(a.Object, a.Annotation, field, alternative)
	if err != nil {
		return "", err
	}
	if name == "" {
		return "", inputErr(field+".annotation", "BareMetalHost annotation %s is missing or empty; set it to the name of a Metal3 IPPool, or use %s", quote(a.Annotation), alternative)
	}
	return c.usePool(name), nil
}
