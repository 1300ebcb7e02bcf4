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
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/controlplane"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// Templates reads the templates of a namespace from both sources.
type Templates struct {
	Reader client.Reader
	// AllMachineTemplates opts every Metal3MachineTemplate in, not only those
	// annotated preprovisioning.metal3.io/enabled: "true".
	AllMachineTemplates bool
}

// List returns the templates of a namespace, sorted by kind and name.
func (t *Templates) List(ctx context.Context, namespace string) ([]template.Template, error) {
	machineTemplates := &capm3.Metal3MachineTemplateList{}
	if err := t.Reader.List(ctx, machineTemplates, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Metal3MachineTemplates in %q: %w", namespace, err)
	}
	preprovTemplates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := t.Reader.List(ctx, preprovTemplates, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing Metal3PreprovisioningTemplates in %q: %w", namespace, err)
	}

	templates := make([]template.Template, 0, len(machineTemplates.Items)+len(preprovTemplates.Items))
	for i := range machineTemplates.Items {
		if m3mt := &machineTemplates.Items[i]; t.MachineTemplateEnabled(m3mt) {
			templates = append(templates, template.FromMachineTemplate(m3mt))
		}
	}
	for i := range preprovTemplates.Items {
		templates = append(templates, template.FromPreprovisioningTemplate(&preprovTemplates.Items[i]))
	}
	sort.Slice(templates, func(i, j int) bool { return templates[i].Ref.String() < templates[j].Ref.String() })
	return templates, nil
}

// MachineTemplateEnabled reports whether a Metal3MachineTemplate is a source.
func (t *Templates) MachineTemplateEnabled(m3mt *capm3.Metal3MachineTemplate) bool {
	return t.AllMachineTemplates || m3mt.Annotations[preprovv1.EnabledAnnotation] == "true"
}

// *TemplateError when the template cannot be used as it is.
func (t *Templates) NetworkData(ctx context.Context, namespace string, source template.Template) (*capm3.NetworkData, error) {
	if source.DataTemplateError != "" {
		return nil, &template.Error{Message: source.DataTemplateError}
	}
	if source.DataTemplateName == "" {
		return source.NetworkData, nil
	}
	dataTemplate := &capm3.Metal3DataTemplate{}
	key := client.ObjectKey{Namespace: namespace, Name: source.DataTemplateName}
	if err := t.Reader.Get(ctx, key, dataTemplate); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &template.Error{Message: fmt.Sprintf("%s names Metal3DataTemplate %q, which does not exist in namespace %q: create it or fix the name",
				source.Ref, source.DataTemplateName, namespace)}
		}
		return nil, fmt.Errorf("getting Metal3DataTemplate %s: %w", key, err)
	}
	if dataTemplate.Spec.NetworkData == nil {
		return nil, &template.Error{Message: fmt.Sprintf("Metal3DataTemplate %q (used by %s) has no spec.networkData: "+
			"without it the deploy ramdisk has no network", source.DataTemplateName, source.Ref)}
	}
	return dataTemplate.Spec.NetworkData, nil
}

// Resolution is which of several templates that select a host governs it.
type Resolution struct {
	// Governing is the template the host is set up from; nil is a conflict.
	Governing *template.Template
	// LeftOvers are the other templates when a MachineDeployment or
	// KubeadmControlPlane references the governing one and they would
	// render different network data: left-overs of a rollout.
	LeftOvers []template.Ref
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
func (t *Templates) Resolve(ctx context.Context, namespace string, setUpFrom template.Ref, matching []template.Template) (Resolution, error) {
	for _, template := range matching {
		if template.Ref.Kind != preprovv1.KindMachineTemplate {
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
func LeftOversMessage(governing template.Ref, users []string, leftOvers []template.Ref) string {
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
		if ref.Kind == preprovv1.KindMachineTemplate && ref.APIGroup == capm3.GroupVersion.Group && ref.Name != "" {
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
func (t *Templates) renderTheSame(ctx context.Context, namespace string, templates []template.Template) (bool, error) {
	var first *capm3.NetworkData
	for i, source := range templates {
		networkData, err := t.NetworkData(ctx, namespace, source)
		if err != nil {
			var templateErr *template.Error
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
			!equality.Semantic.DeepEqual(templates[0].BondParameters, source.BondParameters) {
			return false, nil
		}
	}
	return true, nil
}
