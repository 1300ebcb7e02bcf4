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
	"maps"
	"regexp"
	"slices"
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Option adds to what a template's networkData says.
type Option func(*options)

type options struct {
	bondParams map[string]map[string]intstr.IntOrString
}

func newOptions(opts []Option) options {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithBondParameters gives bonds scalar parameters, by bond link id and
// parameter name, rendered as bond_<name>: value beside the bond's CAPM3
// parameters, or in place of one without a value: a
// Metal3PreprovisioningTemplate's spec.bondParameters. cloud-init and glean
// read such scalars (bond_miimon: 100); CAPM3's parameters only take
// objects, which they drop.
func WithBondParameters(params map[string]map[string]intstr.IntOrString) Option {
	return func(o *options) { o.bondParams = params }
}

// scalar is the JSON value of a bond parameter.
func scalar(v intstr.IntOrString) any {
	if v.Type == intstr.Int {
		return v.IntVal
	}
	return v.StrVal
}

var (
	// Linux bonding option names, which glean and cloud-init take as written.
	bondParamName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)
	// A word or number: glean writes it unquoted into BONDING_OPTS, so no
	// space or quote may break the line.
	bondParamWord = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+:,/-]{0,252}$`)
	// The bond_<name> keys CAPM3 renders from a bond's own fields.
	structuredBondParams = map[string]string{"mode": "bondMode", "links": "bondLinks", "xmit_hash_policy": "bondXmitHashPolicy"}
)

// bondParamErrors checks bond parameters in order of bond id and name: each
// name and value, and, when bondsKnown (a dataTemplateRef's bonds are not
// known to the webhook), that each bond id names one of bonds and that no
// parameter renders a key the bond already has. A CAPM3 parameter without a
// value is a placeholder that a bond parameter of its name fills: CAPM3's
// schema requires at least one parameter on a bond, and takes only objects.
func bondParamErrors(params map[string]map[string]intstr.IntOrString, links []linkSpec, bondsKnown bool) []error {
	bondParams := map[string][]capm3.NetworkDataLinkBondParam{}
	var ids []string
	for _, l := range links {
		if l.kind == kindBond {
			bondParams[l.id] = l.bond.Parameters
			ids = append(ids, quote(l.id))
		}
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(params)) {
		path := field.NewPath("spec", "bondParameters").Key(id)
		own, found := bondParams[id]
		if bondsKnown && !found {
			has := "it has none"
			if len(ids) > 0 {
				has = "it has " + strings.Join(ids, ", ")
			}
			errs = append(errs, inputErr(path.String(), "names no bond of spec.networkData.links.bonds (%s); key bondParameters by the id of a bond", has))
			continue
		}
		taken := map[string]string{}
		for _, p := range own {
			if !isPlaceholder(p) {
				taken[p.Name] = root + ".links.bonds[id=" + plain(id) + "].parameters[" + plain(p.Name) + "]"
			}
		}
		for _, name := range slices.Sorted(maps.Keys(params[id])) {
			if err := bondParamErr(path.Key(name).String(), name, params[id][name], taken[name]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// isPlaceholder is a CAPM3 bond parameter without a value (rendered null).
func isPlaceholder(p capm3.NetworkDataLinkBondParam) bool {
	raw := strings.TrimSpace(string(p.Value.Raw))
	return raw == "" || raw == "null"
}

// bondParamErr checks one parameter; takenBy is the CAPM3 parameter of the
// bond that already renders bond_<name>, if any.
func bondParamErr(path, name string, value intstr.IntOrString, takenBy string) error {
	switch structured, isStructured := structuredBondParams[name]; {
	case strings.HasPrefix(name, "bond_"):
		return inputErr(path, "starts with bond_, which rendering adds; write %s", quote(strings.TrimPrefix(name, "bond_")))
	case !bondParamName.MatchString(name):
		return inputErr(path, "%s is not a bond parameter name; write a Linux bonding option in lower case with underscores, e.g. miimon or lacp_rate", quote(name))
	case isStructured:
		return inputErr(path, "would render bond_%s, which the bond's %s sets; set %s on the bond instead", name, structured, structured)
	case takenBy != "":
		return inputErr(path, "would render bond_%s, which %s renders too; remove that parameter's value (a parameter without one is a placeholder this fills), or drop one of them", name, takenBy)
	}
	switch {
	case value.Type == intstr.Int && value.IntVal < 0:
		return inputErr(path, "%d is negative; bonding options are counts and milliseconds", value.IntVal)
	case value.Type == intstr.String && !bondParamWord.MatchString(value.StrVal):
		return inputErr(path, "%s is not a value the network tools can write; give a number, or a word such as fast or layer3+4 (letters, digits and . _ + : , / -)", quote(value.StrVal))
	}
	return nil
}
