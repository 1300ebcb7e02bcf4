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
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	ctrl "sigs.k8s.io/controller-runtime"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// hostSetUp is what the steps of one host's set-up read, and what each
// leaves for the next.
type hostSetUp struct {
	host      *bmov1alpha1.BareMetalHost
	governing template.Template

	networkData *capm3.NetworkData
	// plan is the network data compiled once: it names the pools to claim
	// from, and renders once their addresses are there.
	plan *networkdata.Plan
	// pools are the Metal3 IPPools of the plan, clusterAPIPools its Cluster
	// API IPAM pools.
	pools           []string
	clusterAPIPools []networkdata.Pool
	secret          *corev1.Secret
	claims          []ipam.PoolState
	rendered        []byte
	// held are the claims the host's network data no longer names that its
	// machine may still run with.
	held []ipam.Held
	// unreachable is what the rendered data gives the ramdisk no way to.
	unreachable *Unreachable
}

// setUpStep is one step of a host's set-up, as the phases of Cluster API's
// MachineSet doReconcile: it says whether the set-up stops here and, when it
// does, why (the host's outcome). Reconcile reports the outcome, in one place.
type setUpStep func(ctx context.Context, s *hostSetUp) (stop bool, why Outcome, err error)

// setUp runs the steps of a host's set-up from the template that governs
// it, in order, until one stops; a host no step stops is Ready.
func (m *HostManager) setUp(ctx context.Context, host *bmov1alpha1.BareMetalHost, governing template.Template) (Outcome, error) {
	s := &hostSetUp{host: host, governing: governing}
	for _, step := range []setUpStep{
		m.checkSecretName,
		m.compileNetworkData,
		// Before any claim: a Secret of our name that is not the host's
		// stops it, and a provisioned host whose Secret stays as it is
		// claims nothing.
		m.readSecret,
		m.releaseFailedClaims,
		m.driftWithoutClaims,
		m.refuseSharedPoolNames,
		m.releaseBeforeClaiming,
		m.claimAddresses,
		m.renderNetworkData,
		m.keepProvisionedHostsSecret,
		m.checkRamdiskReach,
		m.awaitCreatedSecret,
		m.writeSecret,
		m.pointHostAtSecret,
		// The Secret holds the new data: claims it no longer uses go.
		m.releaseUnusedClaims,
	} {
		if stop, why, err := step(ctx, s); err != nil || stop {
			return why, err
		}
	}
	return Outcome{Phase: PhaseReady, Template: governing.Ref, Held: s.held, Unreachable: s.unreachable}, nil
}

// goOn is what a step returns when the set-up goes on.
func goOn() (bool, Outcome, error) { return false, Outcome{}, nil }

// stopAt stops the set-up with the host's outcome.
func stopAt(why Outcome) (bool, Outcome, error) { return true, why, nil }

// failed stops the set-up on an error worth a retry.
func failed(err error) (bool, Outcome, error) { return true, Outcome{}, err }

// checkSecretName stops a host whose Secret name would be too long.
func (m *HostManager) checkSecretName(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	name := NetworkDataSecretName(s.host.Name)
	if len(name) <= validation.DNS1123SubdomainMaxLength {
		return goOn()
	}
	return stopAt(m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonNameTooLong, fmt.Sprintf("the host's network data Secret would be "+
		"named %q (%d characters), over the limit of %d: register the host under a name of at most %d characters", name, len(name),
		validation.DNS1123SubdomainMaxLength, validation.DNS1123SubdomainMaxLength-len(preprovv1.NetworkDataSecretSuffix))))
}

// compileNetworkData reads the template's network data and compiles it
// for the host.
func (m *HostManager) compileNetworkData(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	networkData, err := m.Templates.NetworkData(ctx, s.host.Namespace, s.governing)
	if err != nil {
		var templateErr *template.Error
		if errors.As(err, &templateErr) {
			return stopAt(m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonTemplateInvalid, templateErr.Message))
		}
		return failed(err)
	}
	plan, err := networkdata.Compile(networkData, HostFacts(s.host), s.governing.NetworkDataOptions()...)
	if err != nil {
		return stopAt(m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonRenderFailed, fmt.Sprintf("%s: %v", s.governing.Ref, err)))
	}
	s.networkData, s.plan, s.pools, s.clusterAPIPools = networkData, plan, plan.Pools(), plan.ClusterAPIPools()
	return goOn()
}

// claimAddresses makes sure the host has a claim on each pool, and stops it
// while IPAM has not served one (waiting) or when a claim needs a fix.
func (m *HostManager) claimAddresses(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	if len(s.pools) == 0 && len(s.clusterAPIPools) == 0 {
		return goOn()
	}
	states, err := m.Claims.Ensure(ctx, s.host, s.pools, &m.writes)
	if err != nil {
		return failed(err)
	}
	clusterAPIStates, err := m.Claims.EnsureClusterAPI(ctx, s.host, s.clusterAPIPools, m.addressUsers(ctx, s.host, s.secret), &m.writes)
	if err != nil {
		return failed(err)
	}
	states = append(states, clusterAPIStates...)
	var waiting, failures []string
	var retryAfter time.Duration
	for _, state := range states {
		m.reportRemade(s.host, state)
		switch {
		case state.Failed != "":
			failures = append(failures, state.Failed)
		case state.Address == nil:
			waiting = append(waiting, state.Waiting)
		default:
			continue
		}
		// A failed claim's turn may come without an event (a retry under
		// way that never showed stops holding it back): look again then.
		if state.RetryAfter > 0 && (retryAfter == 0 || state.RetryAfter < retryAfter) {
			retryAfter = state.RetryAfter
		}
	}
	if len(failures) > 0 {
		if m.Preallocations != nil {
			// An entry of ours the pool no longer holds fails the claim for good.
			if err := m.Preallocations.RemoveOutOfRange(ctx, s.host, s.pools); err != nil {
				return failed(err)
			}
		}
		outcome := m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonIPClaimFailed, strings.Join(failures, "; "))
		outcome.Items = failures
		outcome.RequeueAfter = retryAfter
		return stopAt(outcome)
	}
	if len(waiting) > 0 {
		if m.Preallocations != nil {
			// An entry of ours whose address another claim holds keeps IPAM
			// from serving the claim.
			if err := m.Preallocations.RemoveTaken(ctx, s.host, states); err != nil {
				return failed(err)
			}
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for IP addresses", "reasons", waiting)
		return stopAt(Outcome{Phase: PhaseWaiting, Waiting: WaitingForIPAM, Template: s.governing.Ref,
			Message: strings.Join(waiting, "; "), RequeueAfter: retryAfter})
	}
	if m.Preallocations != nil {
		full, err := m.Preallocations.Ensure(ctx, s.host, states)
		if err != nil {
			return failed(err)
		}
		for _, note := range full {
			m.event(s.host, corev1.EventTypeWarning, ReasonPreallocationsPoolFull, note)
		}
	}
	s.claims = states
	return goOn()
}

// renderNetworkData renders the document with the claimed addresses.
func (m *HostManager) renderNetworkData(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	rendered, err := s.plan.Render(addressesByPool(s.claims))
	if err != nil {
		return stopAt(m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonRenderFailed, fmt.Sprintf("%s: %v", s.governing.Ref, err)))
	}
	if len(rendered) > corev1.MaxSecretSize {
		// The API server would refuse every write of it.
		return stopAt(m.fail(ctx, s.host, PhaseFailed, s.governing.Ref, ReasonNetworkDataTooLarge, fmt.Sprintf("%s renders %d bytes of "+
			"network data for this host, over the %d bytes a Secret holds: use fewer links, networks, routes or DNS servers",
			s.governing.Ref, len(rendered), corev1.MaxSecretSize)))
	}
	s.rendered = rendered
	return goOn()
}

// keepProvisionedHostsSecret stops a provisioned host whose template now
// renders other data, unless its policy or the user asks for the update:
// its Secret is left as it is and the drift reported.
func (m *HostManager) keepProvisionedHostsSecret(_ context.Context, s *hostSetUp) (bool, Outcome, error) {
	host, secret := s.host, s.secret
	if secret == nil || !isProvisioned(host) || s.governing.UpdateProvisionedHosts || rerenderRequested(host) ||
		bytes.Equal(secret.Data[preprovv1.NetworkDataKey], s.rendered) {
		return goOn()
	}
	message := fmt.Sprintf("%s now renders different network data, but the host is %s: its Secret %q is left as it is "+
		"(annotate the host %s=true to re-render it once, or set provisionedHostPolicy: Update on a "+
		"Metal3PreprovisioningTemplate to change provisioned hosts)",
		s.governing.Ref, host.Status.Provisioning.State, secret.Name, preprovv1.RerenderAnnotation)
	return stopAt(Outcome{Phase: PhaseDrifted, Template: s.governing.Ref, Message: message,
		EventType: corev1.EventTypeNormal, Reason: ReasonNetworkDataDrift})
}

// awaitCreatedSecret stops a host whose Secret we created and our cache
// does not show yet: its own event brings the host back.
func (m *HostManager) awaitCreatedSecret(_ context.Context, s *hostSetUp) (bool, Outcome, error) {
	if s.secret != nil {
		m.writes.Forget(secretKey(s.host))
		return goOn()
	}
	if left, behind := m.writes.Behind(secretKey(s.host), ""); behind {
		return stopAt(Outcome{Phase: PhaseWaiting, Waiting: WaitingForCache, Template: s.governing.Ref, RequeueAfter: left,
			Message: fmt.Sprintf("Secret %q was created; waiting for it to show in the cache", NetworkDataSecretName(s.host.Name))})
	}
	return goOn()
}

// pointHostAtSecret is the one patch on the host (patchHost).
func (m *HostManager) pointHostAtSecret(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	if err := m.patchHost(ctx, s.host, s.governing.Ref, s.claims); err != nil {
		return failed(err)
	}
	return goOn()
}

// releaseUnusedClaims releases the claims the Secret no longer uses, and
// keeps those the host's machine may still run with.
func (m *HostManager) releaseUnusedClaims(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	users := m.addressUsers(ctx, s.host, s.secret)
	users.NetworkData = s.rendered
	held, err := m.releaseUnused(ctx, s.host, s.pools, s.clusterAPIPools, users)
	if err != nil {
		return failed(err)
	}
	s.held = held
	return goOn()
}

// releaseFailedClaims gives back the host's failed claims on pools its
// template no longer uses, whatever the host's state: they hold no address.
func (m *HostManager) releaseFailedClaims(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	if err := m.Claims.ReleaseFailed(ctx, s.host, s.pools); err != nil {
		return failed(err)
	}
	return goOn()
}

// releaseBeforeClaiming gives back, before the host waits for new claims,
// the claims of a host we never pointed at its Secret on pools its template
// no longer uses: no machine ever ran with them, and a pool the template
// moved to may be exhausted for long.
func (m *HostManager) releaseBeforeClaiming(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	if everPointedAtOurSecret(s.host) {
		return goOn()
	}
	if _, err := m.releaseUnused(ctx, s.host, s.pools, s.clusterAPIPools, m.addressUsers(ctx, s.host, s.secret)); err != nil {
		return failed(err)
	}
	return goOn()
}
