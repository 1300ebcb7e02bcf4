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

package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// Preview is the network data a host would get now and what it is made
// of, found with the controller's functions: its template selection, its
// claims (online) and its renderer.
type Preview struct {
	Host *bmov1alpha1.BareMetalHost
	// Selecting are the templates that select the host.
	Selecting []template.Ref
	// Invalid are the templates of the namespace that select no host, and why.
	Invalid []string
	// Template governs the host; empty when none does, and Problem says why.
	Template template.Ref
	// Claims are the host's address on each pool its network data uses, or
	// why there is none.
	Claims []ipam.PoolState
	// Writes are what the controller would write for the claims.
	Writes []string
	// NetworkData is the document the host's Secret would hold.
	NetworkData []byte
	// Problem says why there is no document.
	Problem string
}

// claimSource gives the host's address on each pool: its Metal3 IPPools,
// then its Cluster API IPAM pools.
type claimSource func(ctx context.Context, host *bmov1alpha1.BareMetalHost, pools []string, clusterAPIPools []networkdata.Pool,
) ([]ipam.PoolState, []string, error)

// preview renders a host's network data as the controller would, with the
// addresses the claims give. It returns an error only when reading fails; a
// host that cannot be rendered has a Problem.
func preview(ctx context.Context, templates *baremetal.Templates, claims claimSource, host *bmov1alpha1.BareMetalHost) (*Preview, error) {
	result := &Preview{Host: host}
	source, err := governing(ctx, templates, host, result)
	if err != nil || source == nil {
		return result, err
	}
	result.Template = source.Ref

	networkData, err := templates.NetworkData(ctx, host.Namespace, *source)
	if err != nil {
		var templateErr *template.Error
		if errors.As(err, &templateErr) {
			result.Problem = templateErr.Message
			return result, nil
		}
		return nil, err
	}
	plan, err := networkdata.Compile(networkData, baremetal.HostFacts(host), source.NetworkDataOptions()...)
	if err != nil {
		result.Problem = fmt.Sprintf("%s: %v", source.Ref, err)
		return result, nil
	}
	if result.Claims, result.Writes, err = claims(ctx, host, plan.Pools(), plan.ClusterAPIPools()); err != nil {
		return nil, err
	}
	addresses, missing := addressesOf(result.Claims)
	if len(missing) > 0 {
		result.Problem = strings.Join(missing, "; ")
		if !strings.Contains(result.Problem, "--address") {
			result.Problem += " (--address <pool>=<IP> renders with an address of your choice; " +
				"<pool>=<IP>/<prefix>[,<gateway>] for a Cluster API IPAM pool)"
		}
		return result, nil
	}
	if result.NetworkData, err = plan.Render(addresses); err != nil {
		result.Problem = fmt.Sprintf("%s: %v", source.Ref, err)
	}
	return result, nil
}

// governing returns the template that governs the host, as the controller
// decides it (baremetal's DecideAmong), whether or not the host is the
// controller's, and records the selecting and invalid templates; nil, with
// the Problem, when none governs it.
func governing(ctx context.Context, templates *baremetal.Templates, host *bmov1alpha1.BareMetalHost, result *Preview,
) (*template.Template, error) {
	list, err := templates.List(ctx, host.Namespace)
	if err != nil {
		return nil, err
	}
	decision, err := templates.DecideAmong(ctx, host, list)
	if err != nil {
		return nil, err
	}
	for _, invalidErr := range decision.Invalid {
		result.Invalid = append(result.Invalid, invalidErr.Error())
	}
	result.Selecting = decision.Selecting
	switch {
	case decision.Governing != nil:
		return decision.Governing, nil
	case len(decision.Conflicts) > 0:
		result.Problem = fmt.Sprintf("selected by %d templates (%s): the controller leaves the host untouched until exactly one selects it",
			len(decision.Selecting), joinRefs(decision.Selecting))
		return nil, nil
	}
	result.Problem = "no template selects this host (a Metal3MachineTemplate is one only with the annotation " +
		preprovv1.EnabledAnnotation + `: "true", or with --all-machine-templates)`
	return nil, nil
}

// addressesOf returns the claims' addresses by pool, and why the others
// have none.
func addressesOf(claims []ipam.PoolState) (map[string]networkdata.Address, []string) {
	addresses := map[string]networkdata.Address{}
	var missing []string
	for _, claim := range claims {
		switch {
		case claim.Address != nil:
			addresses[claim.Pool] = *claim.Address
		case claim.Failed != "":
			missing = append(missing, claim.Failed)
		default:
			missing = append(missing, claim.Waiting)
		}
	}
	return addresses, missing
}

func joinRefs(refs []template.Ref) string {
	names := make([]string, 0, len(refs))
	for _, ref := range refs {
		names = append(names, ref.String())
	}
	return strings.Join(names, ", ")
}
