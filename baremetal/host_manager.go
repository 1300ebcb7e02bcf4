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

// Package baremetal is the host manager: where a host stands (Decide), the
// per-host steps (claims -> render -> Secret -> patch, each idempotent) and
// the one place their outcome is reported, and the template status read back
// from the objects.
//
// Layer: above template, ipam, networkdata and the internal/ leaves; below
// controllers and the kubectl plugin, which both run it.
package baremetal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// HostManager runs the per-host steps.
type HostManager struct {
	Client    client.Client
	Templates *Templates
	Claims    *ipam.Claims
	// Preallocations, when set, records each address in its pool's
	// spec.preAllocations as a backstop.
	Preallocations *ipam.Preallocations
	Recorder       events.EventRecorder
	// APIReader reads Secrets our cache does not hold (those without our
	// label); the Client is used when it is nil.
	APIReader client.Reader

	// InspectionStallTimeout is how long BMO may take a host we unpaused
	// through registering and inspecting (DefaultInspectionStallTimeout
	// when zero).
	InspectionStallTimeout time.Duration
	// Clock tells the time of unpauses and stalls (the real clock when nil).
	Clock clock.PassiveClock

	// writes are our writes the cache may not show yet: the host's claims,
	// its Secret and our patches of the host.
	writes expectations.Writes
	// reported is what each host's events last said.
	reported reportedOutcomes
}

// reconcile takes one host as far as it can go now and says where it stands.
func (m *HostManager) reconcile(ctx context.Context, host *bmov1alpha1.BareMetalHost) (Outcome, error) {
	log := ctrl.LoggerFrom(ctx)
	if !host.DeletionTimestamp.IsZero() {
		// BMO runs no deletion (its finalizer stays) while the host is paused.
		return Outcome{Phase: PhaseIgnored}, m.unpauseForDeletion(ctx, host)
	}
	if ownership.PausedBySomeoneElse(host) {
		return Outcome{Phase: PhaseIgnored}, nil
	}
	pausedForUs := ownership.PausedForUs(host)
	setUpByUs := ownership.Ours(host)

	templates, err := m.Templates.List(ctx, host.Namespace)
	if err != nil {
		return Outcome{}, err
	}
	matching, selectorErrs := template.Selecting(templates, host.Labels)
	for _, selectorErr := range selectorErrs {
		log.Error(selectorErr, "Template is invalid and selects no host")
	}

	if !pausedForUs && !setUpByUs && !template.AnyAdopts(matching) {
		return Outcome{Phase: PhaseIgnored}, nil
	}

	var resolution Resolution
	if len(matching) > 1 {
		if resolution, err = m.Templates.Resolve(ctx, host.Namespace, setUpFrom(host), matching); err != nil {
			return Outcome{}, err
		}
		if resolution.Governing != nil {
			matching = []template.Template{*resolution.Governing}
		}
	}

	switch len(matching) {
	case 0:
		if setUpByUs {
			return m.orphaned(ctx, host), nil
		}
		log.V(1).Info("No template selects this host; it stays paused until one does")
		return Outcome{Phase: PhaseNoTemplate, Message: "no template selects this host"}, m.releaseBeforeSetUp(ctx, host)
	case 1:
	default:
		refs := make([]template.Ref, 0, len(matching))
		names := make([]string, 0, len(matching))
		for _, t := range matching {
			refs = append(refs, t.Ref)
			names = append(names, t.Ref.String())
		}
		message := fmt.Sprintf("selected by %d templates (%s): the host is left untouched until exactly one selects it; "+
			"narrow the hostSelectors or change the host's labels (Metal3MachineTemplates that render the same network data, "+
			"or of which exactly one is referenced by a MachineDeployment or KubeadmControlPlane, do not conflict)",
			len(matching), strings.Join(names, ", "))
		outcome := m.fail(ctx, host, PhaseConflict, template.Ref{}, ReasonTemplateConflict, message)
		outcome.Conflicts, outcome.Items = refs, names
		return outcome, m.releaseBeforeSetUp(ctx, host)
	}

	template := matching[0]
	ctx = ctrl.LoggerInto(ctx, log.WithValues("template", template.Ref.String()))
	outcome, err := m.reconcileWithTemplate(ctx, host, template)
	// Set up anyway: the network may have a DHCP server or relay for the boot.
	outcome.BootNeedsDHCP = bootNeedsDHCP(host.Spec.BMC.Address)
	if err == nil {
		outcome.CollidingData, err = m.Claims.CollidingData(ctx, host)
	}
	outcome.LeftOvers, outcome.TemplateUsers = resolution.LeftOvers, resolution.Users
	return outcome, err
}

// setUpFrom is the template recorded on a host we set up.
func setUpFrom(host *bmov1alpha1.BareMetalHost) template.Ref {
	ref, _ := template.ParseRef(host.Annotations[preprovv1.TemplateAnnotation])
	return ref
}

func (m *HostManager) reconcileWithTemplate(ctx context.Context, host *bmov1alpha1.BareMetalHost, governing template.Template) (Outcome, error) {
	if name := NetworkDataSecretName(host.Name); len(name) > validation.DNS1123SubdomainMaxLength {
		return m.fail(ctx, host, PhaseFailed, governing.Ref, ReasonNameTooLong, fmt.Sprintf("the host's network data Secret would be "+
			"named %q (%d characters), over the limit of %d: register the host under a name of at most %d characters", name, len(name),
			validation.DNS1123SubdomainMaxLength, validation.DNS1123SubdomainMaxLength-len(preprovv1.NetworkDataSecretSuffix))), nil
	}
	networkData, err := m.Templates.NetworkData(ctx, host.Namespace, governing)
	if err != nil {
		var templateErr *template.Error
		if errors.As(err, &templateErr) {
			return m.fail(ctx, host, PhaseFailed, governing.Ref, ReasonTemplateInvalid, templateErr.Message), nil
		}
		return Outcome{}, err
	}

	// Compiled once: the plan names the pools to claim from, and renders
	// once their addresses are there.
	plan, err := networkdata.Compile(networkData, HostFacts(host), governing.NetworkDataOptions()...)
	if err != nil {
		return m.fail(ctx, host, PhaseFailed, governing.Ref, ReasonRenderFailed, fmt.Sprintf("%s: %v", governing.Ref, err)), nil
	}
	pools := plan.Pools()

	// Before any claim: a Secret of our name that is not the host's stops
	// it, and a provisioned host whose Secret stays as it is claims nothing.
	secret, outcome, err := m.currentSecret(ctx, host, governing.Ref)
	if err != nil || outcome != nil {
		return derefOutcome(outcome), err
	}
	if drift, driftErr := m.driftWithoutClaims(ctx, host, governing, secret, pools); driftErr != nil || drift != nil {
		return derefOutcome(drift), driftErr
	}
	claims, outcome, err := m.claimStates(ctx, host, governing.Ref, pools)
	if err != nil || outcome != nil {
		return derefOutcome(outcome), err
	}

	rendered, err := plan.Render(addressesByPool(claims))
	if err != nil {
		return m.fail(ctx, host, PhaseFailed, governing.Ref, ReasonRenderFailed, fmt.Sprintf("%s: %v", governing.Ref, err)), nil
	}
	if len(rendered) > corev1.MaxSecretSize {
		// The API server would refuse every write of it.
		return m.fail(ctx, host, PhaseFailed, governing.Ref, ReasonNetworkDataTooLarge, fmt.Sprintf("%s renders %d bytes of "+
			"network data for this host, over the %d bytes a Secret holds: use fewer links, networks, routes or DNS servers",
			governing.Ref, len(rendered), corev1.MaxSecretSize)), nil
	}

	if secret != nil && isProvisioned(host) && !governing.UpdateProvisionedHosts && !rerenderRequested(host) &&
		!bytes.Equal(secret.Data[preprovv1.NetworkDataKey], rendered) {
		message := fmt.Sprintf("%s now renders different network data, but the host is %s: its Secret %q is left as it is "+
			"(annotate the host %s=true to re-render it once, or set provisionedHostPolicy: Update on a "+
			"Metal3PreprovisioningTemplate to change provisioned hosts)",
			governing.Ref, host.Status.Provisioning.State, secret.Name, preprovv1.RerenderAnnotation)
		return Outcome{Phase: PhaseDrifted, Template: governing.Ref, Message: message,
			EventType: corev1.EventTypeNormal, Reason: ReasonNetworkDataDrift}, nil
	}
	if secret != nil {
		m.writes.Forget(secretKey(host))
	} else {
		if left, behind := m.writes.Behind(secretKey(host), ""); behind {
			// Its own event brings the host back.
			return Outcome{Phase: PhaseWaiting, Template: governing.Ref, RequeueAfter: left,
				Message: fmt.Sprintf("Secret %q was created; waiting for it to show in the cache", NetworkDataSecretName(host.Name))}, nil
		}
	}
	if outcome, err := m.writeSecret(ctx, host, secret, rendered, governing.Ref, hostInterfaceLinks(networkData)); err != nil || outcome != nil {
		return derefOutcome(outcome), err
	}
	if err := m.pointHostAtSecret(ctx, host, governing.Ref, claims); err != nil {
		return Outcome{}, err
	}
	// The Secret holds the new data: claims it no longer uses go.
	if err := m.releaseUnusedClaims(ctx, host, pools, rendered); err != nil {
		return Outcome{}, err
	}
	return Outcome{Phase: PhaseReady, Template: governing.Ref}, nil
}

// claimStates returns the state of the host's claim on each pool, each with
// its address, or the outcome that stops the host here (waiting for IPAM, or
// a claim that needs a fix).
func (m *HostManager) claimStates(ctx context.Context, host *bmov1alpha1.BareMetalHost, ref template.Ref,
	pools []string,
) ([]ipam.PoolState, *Outcome, error) {
	if len(pools) == 0 {
		return nil, nil, nil
	}
	states, err := m.Claims.Ensure(ctx, host, pools, &m.writes)
	if err != nil {
		return nil, nil, err
	}
	var waiting, failed []string
	var retryAfter time.Duration
	for _, state := range states {
		m.reportRemade(host, state)
		switch {
		case state.Failed != "":
			failed = append(failed, state.Failed)
		case state.Address == nil:
			waiting = append(waiting, state.Waiting)
			if state.RetryAfter > 0 && (retryAfter == 0 || state.RetryAfter < retryAfter) {
				retryAfter = state.RetryAfter
			}
		}
	}
	if len(failed) > 0 {
		outcome := m.fail(ctx, host, PhaseFailed, ref, ReasonIPClaimFailed, strings.Join(failed, "; "))
		outcome.Items = failed
		return nil, &outcome, nil
	}
	if len(waiting) > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for IP addresses", "reasons", waiting)
		return nil, &Outcome{Phase: PhaseWaiting, Template: ref, Message: strings.Join(waiting, "; "), RequeueAfter: retryAfter}, nil
	}
	if m.Preallocations != nil {
		if err := m.Preallocations.Ensure(ctx, host, states); err != nil {
			return nil, nil, err
		}
	}
	return states, nil, nil
}

func addressesByPool(claims []ipam.PoolState) map[string]networkdata.Address {
	addresses := make(map[string]networkdata.Address, len(claims))
	for _, claim := range claims {
		addresses[claim.Pool] = *claim.Address
	}
	return addresses
}

// orphaned reports a host we set up that no template selects any more. It
// keeps its Secret, claims and provisioning state: we never undo a host.
func (m *HostManager) orphaned(ctx context.Context, host *bmov1alpha1.BareMetalHost) Outcome {
	ref, _ := template.ParseRef(host.Annotations[preprovv1.TemplateAnnotation])
	message := fmt.Sprintf("no template selects this host any more (it was set up by %s); "+
		"it keeps its network data Secret and IP claims", ref)
	ctrl.LoggerFrom(ctx).Info("Host is orphaned", "reason", message)
	return Outcome{Phase: PhaseOrphaned, Template: ref, Message: message}
}

// fail reports a problem that needs a user's fix: an error in the log, and
// a Warning event on the host once the outcome is recorded as new. The host
// is left as it is.
func (m *HostManager) fail(ctx context.Context, host *bmov1alpha1.BareMetalHost, phase Phase, ref template.Ref,
	reason, message string,
) Outcome {
	ctrl.LoggerFrom(ctx).Error(errors.New(message), "Host cannot be set up", "reason", reason, "host", host.Name)
	return Outcome{Phase: phase, Template: ref, Reason: reason, Message: message, EventType: corev1.EventTypeWarning}
}

// event records an event on the host. A message too long for an event
// names its first items (what it lists, in order) and counts the rest; the
// log keeps the full message.
func (m *HostManager) event(host *bmov1alpha1.BareMetalHost, eventType, reason, message string, items ...string) {
	m.Recorder.Eventf(host, nil, eventType, reason, EventAction, "%s", EventNote(message, items))
}

func derefOutcome(outcome *Outcome) Outcome {
	if outcome == nil {
		return Outcome{}
	}
	return *outcome
}

// rerenderRequested is a user's request to re-render a provisioned host's
// network data once, despite the drift policy.
func rerenderRequested(host *bmov1alpha1.BareMetalHost) bool {
	_, requested := host.Annotations[preprovv1.RerenderAnnotation]
	return requested
}

func isProvisioned(host *bmov1alpha1.BareMetalHost) bool {
	state := host.Status.Provisioning.State
	return state == bmov1alpha1.StateProvisioned || state == bmov1alpha1.StateExternallyProvisioned
}

// HostFacts are what the renderer reads of a host.
func HostFacts(host *bmov1alpha1.BareMetalHost) networkdata.Host {
	facts := networkdata.Host{
		Name:           host.Name,
		Namespace:      host.Namespace,
		Annotations:    host.Annotations,
		BootMACAddress: host.Spec.BootMACAddress,
	}
	if host.Status.HardwareDetails != nil {
		for _, nic := range host.Status.HardwareDetails.NIC {
			facts.NICs = append(facts.NICs, networkdata.NIC{Name: nic.Name, MAC: nic.MAC})
		}
	}
	return facts
}

// secretKey and hostKey name a host's Secret and the host in our writes,
// with the host's UID: a host registered again under its name waits for
// none of the earlier host's writes.
func secretKey(host *bmov1alpha1.BareMetalHost) expectations.Key {
	secret := client.ObjectKey{Namespace: host.Namespace, Name: NetworkDataSecretName(host.Name)}
	return expectations.Key{Kind: "Secret", NamespacedName: secret, Host: host.UID}
}

func hostKey(host *bmov1alpha1.BareMetalHost) expectations.Key {
	return expectations.Key{Kind: "BareMetalHost", NamespacedName: client.ObjectKeyFromObject(host), Host: host.UID}
}
