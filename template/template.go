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

// Package template is the one view over both kinds of template (an
// opted-in Metal3MachineTemplate and our Metal3PreprovisioningTemplate): the
// From* constructors, the CAPM3 host selector, the template validator and the
// errors of a template a user must fix. It is pure (no client): the
// controller, the webhooks and the kubectl plugin share it.
//
// Layer: pure, above api/v1beta1 and networkdata, which are all it imports.
package template

import (
	"fmt"
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
)

// Ref names a template within the host's namespace.
type Ref struct {
	Kind string
	Name string
}

// String is the "<Kind>/<name>" form used in events and annotations.
func (r Ref) String() string { return r.Kind + "/" + r.Name }

// ParseRef reads the "<Kind>/<name>" form back.
func ParseRef(s string) (Ref, bool) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" {
		return Ref{}, false
	}
	return Ref{Kind: kind, Name: name}, true
}

// Template is one source of preprovisioning network data, whichever kind it
// came from, so the rest of the code never asks which kind it is.
type Template struct {
	Ref        Ref
	Generation int64
	Selector   capm3.HostSelector
	// Invalid says why the template selects no host: what the webhook
	// refuses, found on a template it never saw.
	Invalid string

	// Exactly one of NetworkData (inline) and DataTemplateName (a
	// Metal3DataTemplate in the same namespace) is the data source; a
	// DataTemplateError says why neither can be used.
	NetworkData       *capm3.NetworkData
	DataTemplateName  string
	DataTemplateError string
	// BondParameters are scalar bond parameters by bond id and name
	// (Metal3PreprovisioningTemplate spec.bondParameters).
	BondParameters map[string]map[string]intstr.IntOrString

	// RamdiskEndpoints are what the deploy ramdisk of the template's hosts
	// must reach (Metal3PreprovisioningTemplate spec.ramdiskEndpoints); when
	// empty, the manager's --ramdisk-endpoints apply.
	RamdiskEndpoints []networkdata.Endpoint

	// AdoptExistingHosts lets the template manage hosts that are not paused
	// for preprovisioning.
	AdoptExistingHosts bool
	// UpdateProvisionedHosts re-renders the Secret of provisioned hosts
	// instead of reporting drift.
	UpdateProvisionedHosts bool

	// selector is Selector compiled once (or why it cannot be): every host
	// of a namespace is matched against every template, on each reconcile
	// and each count of the hosts metric.
	selector    labels.Selector
	selectorErr error
}

// NetworkDataOptions are what the template adds to its network data for
// the renderer and its validator.
func (t Template) NetworkDataOptions() []networkdata.Option {
	return []networkdata.Option{networkdata.WithBondParameters(t.BondParameters)}
}

// Selects reports whether the template selects a host with these labels.
// An invalid template selects none, and says why.
func (t Template) Selects(hostLabels map[string]string) (bool, error) {
	if t.Invalid != "" {
		return false, fmt.Errorf("%s selects no host: %s", t.Ref, t.Invalid)
	}
	selector, err := t.selector, t.selectorErr
	if selector == nil && err == nil {
		selector, err = HostSelector(t.Selector)
	}
	if err != nil {
		return false, fmt.Errorf("%s: %w", t.Ref, err)
	}
	return selector.Matches(labels.Set(hostLabels)), nil
}

// withCompiledSelector returns the template with its selector compiled.
func (t Template) withCompiledSelector() Template {
	t.selector, t.selectorErr = HostSelector(t.Selector)
	return t
}

// FromMachineTemplate is the view of an opted-in Metal3MachineTemplate: its
// host selector and the networkData of the Metal3DataTemplate it names.
func FromMachineTemplate(m3mt *capm3.Metal3MachineTemplate) Template {
	spec := m3mt.Spec.Template.Spec
	template := Template{
		Ref:        Ref{Kind: preprovv1.KindMachineTemplate, Name: m3mt.Name},
		Generation: m3mt.Generation,
	}
	if spec.HostSelector != nil {
		template.Selector = *spec.HostSelector
	}
	switch {
	case spec.DataTemplate == nil || spec.DataTemplate.Name == "":
		template.DataTemplateError = fmt.Sprintf("%s has no spec.template.spec.dataTemplate: "+
			"name the Metal3DataTemplate whose networkData the host should boot with", template.Ref)
	case spec.DataTemplate.Namespace != "" && spec.DataTemplate.Namespace != m3mt.Namespace:
		template.DataTemplateError = fmt.Sprintf("%s names Metal3DataTemplate %s/%s in another namespace: "+
			"the data template must be in the namespace of the template and its hosts",
			template.Ref, spec.DataTemplate.Namespace, spec.DataTemplate.Name)
	default:
		template.DataTemplateName = spec.DataTemplate.Name
	}
	return template.withCompiledSelector()
}

// FromPreprovisioningTemplate is the view of one of our own templates.
func FromPreprovisioningTemplate(m3ppt *preprovv1.Metal3PreprovisioningTemplate) Template {
	spec := m3ppt.Spec
	template := Template{
		Ref:                    Ref{Kind: preprovv1.KindPreprovisioningTemplate, Name: m3ppt.Name},
		Generation:             m3ppt.Generation,
		Selector:               spec.HostSelector,
		NetworkData:            spec.NetworkData,
		BondParameters:         spec.BondParameters,
		AdoptExistingHosts:     spec.AdoptExistingHosts,
		UpdateProvisionedHosts: spec.ProvisionedHostPolicy == preprovv1.ProvisionedHostUpdate,
	}
	if errs := SpecErrors(&spec); len(errs) > 0 {
		template.Invalid = errs.ToAggregate().Error()
	} else {
		// SpecErrors found every endpoint valid.
		template.RamdiskEndpoints, _ = networkdata.ParseEndpoints(spec.RamdiskEndpoints)
	}
	switch {
	case spec.NetworkData != nil && spec.DataTemplateRef != nil:
		template.NetworkData = nil
		template.DataTemplateError = fmt.Sprintf("%s sets both spec.networkData and spec.dataTemplateRef: keep exactly one", template.Ref)
	case spec.DataTemplateRef != nil:
		template.DataTemplateName = spec.DataTemplateRef.Name
	case spec.NetworkData == nil:
		template.DataTemplateError = fmt.Sprintf("%s sets neither spec.networkData nor spec.dataTemplateRef: set exactly one", template.Ref)
	}
	return template.withCompiledSelector()
}

// NetworkData returns the network data a template renders. It returns a

// Error is a template that cannot be used until a user fixes it.
type Error struct {
	Message string
}

func (e *Error) Error() string { return e.Message }

// Selecting returns the templates that select a host with these labels, and
// the errors of invalid templates (they select nothing).
func Selecting(templates []Template, hostLabels map[string]string) ([]Template, []error) {
	var matching []Template
	var errs []error
	for _, template := range templates {
		selects, err := template.Selects(hostLabels)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if selects {
			matching = append(matching, template)
		}
	}
	return matching, errs
}

// AnyAdopts reports whether any of the templates adopts hosts that are not
// paused for preprovisioning.
func AnyAdopts(templates []Template) bool {
	for _, template := range templates {
		if template.AdoptExistingHosts {
			return true
		}
	}
	return false
}
