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
	"fmt"
	"slices"
	"strings"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// ReasonEndpointUnreachable is a host whose network data gives the deploy
// ramdisk no way to an endpoint it must reach without DHCP (Ironic's API,
// its image server).
const ReasonEndpointUnreachable = "PreprovisioningEndpointUnreachable"

// RamdiskEndpointsFlag is the manager's flag (and the plugin's) naming the
// endpoints every template's hosts must reach.
const RamdiskEndpointsFlag = "ramdisk-endpoints"

// Unreachable is what the ramdisk of a host cannot reach, and from where
// the endpoints came.
type Unreachable struct {
	// Source names where the endpoints came from: the manager's flag or the
	// template's field.
	Source    string
	Endpoints []networkdata.Unreached
}

// Equal reports whether two say the same.
func (u *Unreachable) Equal(other *Unreachable) bool {
	if u == nil || other == nil {
		return u == other
	}
	return u.Source == other.Source && slices.Equal(u.Endpoints, other.Endpoints)
}

// checkRamdiskReach keeps a host paused for us whose network data gives the
// deploy ramdisk no way to an endpoint it must reach: booted, it could
// never call Ironic back, and would only fail in Ironic, where a fix of the
// data reaches it late. Nothing is written for it; a fix of the template
// or of the endpoints sets it up. A host no longer paused for us is set up
// anyway, with the Warning: we never pause a host.
func (m *HostManager) checkRamdiskReach(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	endpoints, source := m.ramdiskEndpoints(s.governing)
	if len(endpoints) == 0 {
		return goOn()
	}
	unreached, err := networkdata.Unreachable(s.rendered, endpoints)
	if err != nil {
		return failed(fmt.Errorf("checking the network data of %s against the ramdisk's endpoints: %w", s.governing.Ref, err))
	}
	if len(unreached) == 0 {
		return goOn()
	}
	s.unreachable = &Unreachable{Source: source, Endpoints: unreached}
	if !ownership.PausedForUs(s.host) {
		return goOn()
	}
	message, items := UnreachableMessage(s.governing.Ref, s.unreachable, true)
	outcome := m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonEndpointUnreachable, message)
	outcome.Items, outcome.Unreachable = items, s.unreachable
	return stopAt(outcome)
}

// ramdiskEndpoints are the endpoints the template's hosts must reach: the
// template's own, else the manager's; and where they came from.
func (m *HostManager) ramdiskEndpoints(governing template.Template) ([]networkdata.Endpoint, string) {
	if len(governing.RamdiskEndpoints) > 0 {
		return governing.RamdiskEndpoints, "the template's spec.ramdiskEndpoints"
	}
	return m.RamdiskEndpoints, "the manager's --" + RamdiskEndpointsFlag
}

// UnreachableMessage says which endpoints the network data of a host gives
// its ramdisk no way to, and what becomes of the host (kept paused, or set
// up anyway); one item per endpoint.
func UnreachableMessage(ref template.Ref, unreachable *Unreachable, keptPaused bool) (string, []string) {
	items := make([]string, 0, len(unreachable.Endpoints))
	for _, endpoint := range unreachable.Endpoints {
		items = append(items, endpoint.String())
	}
	what := fmt.Sprintf("the network data %s renders gives the deploy ramdisk no way to what it must reach without DHCP "+
		"(%s): %s", ref, unreachable.Source, strings.Join(items, "; "))
	if keptPaused {
		return fmt.Sprintf("the host is kept paused (%s) and nothing is written for it: %s. Fix the network data (kubectl "+
			"preprov render shows it) or the endpoints; the host is set up and unpaused once its data reaches them",
			preprovv1.PausedForPreprovisioning, what), items
	}
	return fmt.Sprintf("%s. The host is not paused for preprovisioning, so it is set up anyway: its ramdisk will not reach "+
		"them when it next boots (inspection, cleaning, provisioning) until the network data is fixed", what), items
}
