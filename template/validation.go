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

package template

import (
	"errors"
	"maps"
	"slices"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// SpecErrors returns every problem of a Metal3PreprovisioningTemplate
// spec, with paths under spec. The webhook refuses a template with any; the
// controller, which may run without the webhook (the namespaced install) or
// find templates older than it, lets such a template select no host.
func SpecErrors(spec *preprovv1.Metal3PreprovisioningTemplateSpec) field.ErrorList {
	path := field.NewPath("spec")
	errs := selectorErrors(spec.HostSelector, path.Child("hostSelector"))
	errs = append(errs, sourceErrors(spec, path)...)
	return append(errs, endpointErrors(spec.RamdiskEndpoints, path.Child("ramdiskEndpoints"))...)
}

// endpointErrors checks each endpoint with ParseEndpoint, the function the
// controller reads them with.
func endpointErrors(endpoints []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, endpoint := range endpoints {
		if _, err := networkdata.ParseEndpoint(endpoint); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), endpoint, err.Error()))
		}
	}
	return errs
}

// selectorErrors refuses a selector that would select every host of the
// namespace, and checks each requirement alone with HostSelector,
// the function the controller matches hosts with, so both agree on what is
// valid and every bad requirement is reported at its own path.
func selectorErrors(selector capm3.HostSelector, path *field.Path) field.ErrorList {
	if len(selector.MatchLabels) == 0 && len(selector.MatchExpressions) == 0 {
		return field.ErrorList{field.Required(path, "an empty selector selects every BareMetalHost of the namespace; "+
			"set matchLabels or matchExpressions to select only the hosts this template is for")}
	}
	var errs field.ErrorList
	for _, key := range slices.Sorted(maps.Keys(selector.MatchLabels)) {
		label := capm3.HostSelector{MatchLabels: map[string]string{key: selector.MatchLabels[key]}}
		if _, err := HostSelector(label); err != nil {
			// The requirement's own paths (key, values[0]) mean the label's
			// key and value here, which its bad value shows.
			errs = append(errs, requirementErrors(err, path.Child("matchLabels").Key(key), false)...)
		}
	}
	for i, expression := range selector.MatchExpressions {
		requirement := capm3.HostSelector{MatchExpressions: []capm3.HostSelectorRequirement{expression}}
		if _, err := HostSelector(requirement); err != nil {
			errs = append(errs, requirementErrors(err, path.Child("matchExpressions").Index(i), true)...)
		}
	}
	return errs
}

// requirementErrors turns the field errors of a label requirement into errors
// at path; withSubPath keeps their own paths (key, operator, values[i]) below
// it, which are also the names of a matchExpressions entry's fields.
func requirementErrors(err error, path *field.Path, withSubPath bool) field.ErrorList {
	causes := []error{err}
	var aggregate utilerrors.Aggregate
	if errors.As(err, &aggregate) {
		causes = aggregate.Errors()
	}
	var errs field.ErrorList
	for _, cause := range causes {
		var fieldErr *field.Error
		if !errors.As(cause, &fieldErr) {
			errs = append(errs, field.Invalid(path, field.OmitValueType{}, cause.Error()))
			continue
		}
		rebased := *fieldErr
		rebased.Field = path.String()
		if withSubPath {
			rebased.Field += "." + fieldErr.Field
		}
		errs = append(errs, &rebased)
	}
	return errs
}

// sourceErrors checks that exactly one network data source is set and that
// the one set is usable.
func sourceErrors(spec *preprovv1.Metal3PreprovisioningTemplateSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	refPath := path.Child("dataTemplateRef")
	switch {
	case spec.NetworkData != nil && spec.DataTemplateRef != nil:
		errs = append(errs, field.Forbidden(refPath, "spec.networkData is set too; keep exactly one of "+
			"spec.networkData (the network configuration inline) and spec.dataTemplateRef (a Metal3DataTemplate whose networkData is used)"))
	case spec.NetworkData == nil && spec.DataTemplateRef == nil:
		errs = append(errs, field.Required(path, "set exactly one of spec.networkData (the network configuration inline) "+
			"and spec.dataTemplateRef (a Metal3DataTemplate whose networkData is used); without either the hosts get no network configuration"))
	}
	if spec.DataTemplateRef != nil && spec.DataTemplateRef.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), "name the Metal3DataTemplate of this namespace whose networkData the hosts boot with"))
	}
	// networkdata paths start with spec.networkData or spec.bondParameters,
	// as here. With a dataTemplateRef, the bonds the bond parameters name
	// are checked by the controller, which reads the Metal3DataTemplate.
	bondParams := networkdata.WithBondParameters(spec.BondParameters)
	for _, e := range networkdata.ValidateTemplate(spec.NetworkData, bondParams) {
		errs = append(errs, field.Invalid(field.NewPath(e.Field), field.OmitValueType{}, e.Reason))
	}
	return errs
}
