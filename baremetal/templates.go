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

package baremetal

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal/networkdata"
	"github.com/capm3-preprov/capm3-preprov/internal/controlplane"
)

// Template kinds, as they appear in events, logs and TemplateRef.
const (
	KindMachineTemplate         = "Metal3MachineTemplate"
	KindPreprovisioningTemplate = "Metal3PreprovisioningTemplate"
)

// TemplateRef names a template within the host's namespace.
type TemplateRef struct {
	Kind string
	Name string
}

// String is the "<Kind>/<name>" form used in events and annotations.
func (r TemplateRef) String() string { return r.Kind + "/" + r.Name }

// ParseTemplateRef reads the "<Kind>/<name>" form back.
func ParseTemplateRef(s string) (TemplateRef, bool) {
	kind, name, ok := strings.Cut(s, "/")
	if !ok || kind == "" || name == "" {
		return TemplateRef{}, false
	}
	return TemplateRef{Kind: kind, Name: name}, true
}

// Template is one source of preprovisioning network data, whichever kind it
// came from, so the rest of the code never asks which kind it is.
type Template struct {
	Ref        TemplateRef
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

// Templates reads the templates of a namespace from both sources.
type Templates struct {
	Reader client.Reader
	// AllMachineTemplates opts every Metal3MachineTemplate in, not only those
	// annotated preprovisioning.metal3.io/enabled: "true".
	AllMachineTemplates bool
}

// List returns the templates of a namespace, sorted by kind and name.
func (t *Templates) List(ctx context.Context, namespace string) ([]Template, error) {
	machineTemplates := &capm3.Metal3MachineTemplateList{}
	if err := t.Reader.List(ctx, machineTemplates, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Metal3MachineTemplates in %q: %w", namespace, err)
	}
	preprovTemplates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := t.Reader.List(ctx, preprovTemplates, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Metal3PreprovisioningTemplates in %q: %w", namespace, err)
	}

	templates := make([]Template, 0, len(machineTemplates.Items)+len(preprovTemplates.Items))
	for i := range machineTemplates.Items {
		if m3mt := &machineTemplates.Items[i]; t.MachineTemplateEnabled(m3mt) {
			templates = append(templates, FromMachineTemplate(m3mt))
		}
	}
	for i := range preprovTemplates.Items {
		templates = append(templates, FromPreprovisioningTemplate(&preprovTemplates.Items[i]))
	}
	sort.Slice(templates, func(i, j int) bool { return templates[i].Ref.String() < templates[j].Ref.String() })
	return templates, nil
}

// MachineTemplateEnabled reports whether a Metal3MachineTemplate is a source.
func (t *Templates) MachineTemplateEnabled(m3mt *capm3.Metal3MachineTemplate) bool {
	return t.AllMachineTemplates || m3mt.Annotations[preprovv1.EnabledAnnotation] == "true"
}

// FromMachineTemplate is the view of an opted-in Metal3MachineTemplate: its
// host selector and the networkData of the Metal3DataTemplate it names.
func FromMachineTemplate(m3mt *capm3.Metal3MachineTemplate) Template {
	spec := m3mt.Spec.Template.Spec
	template := Template{
		Ref:        TemplateRef{Kind: KindMachineTemplate, Name: m3mt.Name},
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
		Ref:                    TemplateRef{Kind: KindPreprovisioningTemplate, Name: m3ppt.Name},
		Generation:             m3ppt.Generation,
		Selector:               spec.HostSelector,
		NetworkData:            spec.NetworkData,
		BondParameters:         spec.BondParameters,
		AdoptExistingHosts:     spec.AdoptExistingHosts,
		UpdateProvisionedHosts: spec.ProvisionedHostPolicy == preprovv1.ProvisionedHostUpdate,
	}
	if errs := TemplateSpecErrors(&spec); len(errs) > 0 {
		template.Invalid = errs.ToAggregate().Error()
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
// *TemplateError when the template cannot be used as it is.
func (t *Templates) NetworkData(ctx context.Context, namespace string, template Template) (*capm3.NetworkData, error) {
	if template.DataTemplateError != "" {
		return nil, &TemplateError{Message: template.DataTemplateError}
	}
	if template.DataTemplateName == "" {
		return template.NetworkData, nil
	}
	dataTemplate := &capm3.Metal3DataTemplate{}
	key := client.ObjectKey{Namespace: namespace, Name: template.DataTemplateName}
	if err := t.Reader.Get(ctx, key, dataTemplate); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &TemplateError{Message: fmt.Sprintf("%s names Metal3DataTemplate %q, which does not exist in namespace %q: create it or fix the name",
				template.Ref, template.DataTemplateName, namespace)}
		}
		return nil, fmt.Errorf("getting Metal3DataTemplate %s: %w", key, err)
	}
	if dataTemplate.Spec.NetworkData == nil {
		return nil, &TemplateError{Message: fmt.Sprintf("Metal3DataTemplate %q (used by %s) has no spec.networkData: "+
			"without it the deploy ramdisk has no network", template.DataTemplateName, template.Ref)}
	}
	return dataTemplate.Spec.NetworkData, nil
}

// Resolution is which of several templates that select a host governs it.
type Resolution struct {
	// Governing is the template the host is set up from; nil is a conflict.
	Governing *Template
	// LeftOvers are the other templates when a MachineDeployment or
	// KubeadmControlPlane references the governing one and they would
	// render different network data: left-overs of a rollout.
	LeftOvers []TemplateRef
	// Users name what references the governing template, for the event.
	Users []string
}

// Resolve decides between several templates that select a host. Only
// Metal3MachineTemplates can be resolved, since a CAPI rollout leaves the
// old ones in place while old MachineSets use them: (a) templates that
// render the same network data do not conflict; (b) otherwise the one
// template a MachineDeployment or KubeadmControlPlane of the namespace
// references now governs; (c) otherwise it is a conflict. setUpFrom is the
// template the host was set up from, kept in case (a) when nothing decides.
func (t *Templates) Resolve(ctx context.Context, namespace string, setUpFrom TemplateRef, matching []Template) (Resolution, error) {
	for _, template := range matching {
		if template.Ref.Kind != KindMachineTemplate {
			return Resolution{}, nil
		}
	}
	users, err := t.machineTemplateUsers(ctx, namespace)
	if err != nil {
		return Resolution{}, err
	}
	var referenced []int
	for i, template := range matching {
		if len(users[template.Ref.Name]) > 0 {
			referenced = append(referenced, i)
		}
	}
	same, err := t.renderTheSame(ctx, namespace, matching)
	if err != nil {
		return Resolution{}, err
	}
	switch {
	case same && len(referenced) == 1:
		return Resolution{Governing: &matching[referenced[0]]}, nil
	case same:
		for i := range matching {
			if matching[i].Ref == setUpFrom {
				return Resolution{Governing: &matching[i]}, nil
			}
		}
		return Resolution{Governing: &matching[0]}, nil
	case len(referenced) == 1:
		governing := &matching[referenced[0]]
		resolution := Resolution{Governing: governing, Users: users[governing.Ref.Name]}
		for _, template := range matching {
			if template.Ref != governing.Ref {
				resolution.LeftOvers = append(resolution.LeftOvers, template.Ref)
			}
		}
		return resolution, nil
	}
	return Resolution{}, nil
}

// ReasonLeftOverTemplates is the Normal event of a host whose governing
// template is referenced by a MachineDeployment or KubeadmControlPlane while
// left-overs of a rollout select it too.
const ReasonLeftOverTemplates = "PreprovisioningTemplateLeftOver"

// LeftOversMessage says which template governs a host and which are
// left-overs, for the event.
func LeftOversMessage(governing TemplateRef, users []string, leftOvers []TemplateRef) string {
	names := make([]string, 0, len(leftOvers))
	for _, ref := range leftOvers {
		names = append(names, ref.String())
	}
	return fmt.Sprintf("%s governs this host: %s references it. Also selecting it, and set aside as left-overs of a rollout "+
		"while they render different network data: %s", governing, strings.Join(users, ", "), strings.Join(names, ", "))
}

// machineTemplateUsers returns, by Metal3MachineTemplate name, the
// MachineDeployments (spec.template.spec.infrastructureRef) and
// KubeadmControlPlanes (spec.machineTemplate.spec.infrastructureRef) of the
// namespace that reference it now, as "<Kind>/<name>".
func (t *Templates) machineTemplateUsers(ctx context.Context, namespace string) (map[string][]string, error) {
	users := map[string][]string{}
	add := func(ref clusterv1.ContractVersionedObjectReference, user string) {
		if ref.Kind == KindMachineTemplate && ref.APIGroup == capm3.GroupVersion.Group && ref.Name != "" {
			users[ref.Name] = append(users[ref.Name], user)
		}
	}
	deployments := &clusterv1.MachineDeploymentList{}
	if err := t.Reader.List(ctx, deployments, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing MachineDeployments in %q: %w", namespace, err)
	}
	for _, deployment := range deployments.Items {
		add(deployment.Spec.Template.Spec.InfrastructureRef, "MachineDeployment/"+deployment.Name)
	}
	controlPlanes := &controlplane.KubeadmControlPlaneList{}
	// A management cluster without Kubeadm's control plane provider has
	// no KubeadmControlPlane to reference a template.
	if err := t.Reader.List(ctx, controlPlanes, client.InNamespace(namespace)); err != nil && !meta.IsNoMatchError(err) {
		return nil, fmt.Errorf("listing KubeadmControlPlanes in %q: %w", namespace, err)
	}
	for _, controlPlane := range controlPlanes.Items {
		add(controlPlane.Spec.MachineTemplate.Spec.InfrastructureRef, "KubeadmControlPlane/"+controlPlane.Name)
	}
	return users, nil
}

// renderTheSame reports whether the templates would render the same network
// data for any host: the same network data and bond parameters. A template
// that cannot be used renders nothing, so it is never the same.
func (t *Templates) renderTheSame(ctx context.Context, namespace string, templates []Template) (bool, error) {
	var first *capm3.NetworkData
	for i, template := range templates {
		networkData, err := t.NetworkData(ctx, namespace, template)
		if err != nil {
			var templateErr *TemplateError
			if errors.As(err, &templateErr) {
				return false, nil
			}
			return false, err
		}
		if i == 0 {
			first = networkData
			continue
		}
		if !equality.Semantic.DeepEqual(first, networkData) ||
			!equality.Semantic.DeepEqual(templates[0].BondParameters, template.BondParameters) {
			return false, nil
		}
	}
	return true, nil
}

// TemplateError is a template that cannot be used until a user fixes it.
type TemplateError struct {
	Message string
}

func (e *TemplateError) Error() string { return e.Message }
