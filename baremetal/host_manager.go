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
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/expectations"
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

	// RamdiskEndpoints are what the deploy ramdisk must reach without DHCP
	// (--ramdisk-endpoints), for hosts whose template names none: a host
	// whose network data has no way to one is kept paused.
	RamdiskEndpoints []networkdata.Endpoint

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

// reconcile takes one host as far as it can go now and says where it stands:
// where Decide puts it, or, with one template governing it, where the steps
// of its set-up stop.
func (m *HostManager) reconcile(ctx context.Context, host *bmov1alpha1.BareMetalHost) (Outcome, error) {
	log := ctrl.LoggerFrom(ctx)
	decision, err := m.Templates.Decide(ctx, host)
	if err != nil {
		return Outcome{}, err
	}
	for _, invalid := range decision.Invalid {
		log.Error(invalid, "Template is invalid and selects no host")
	}
	switch {
	case decision.Ignored == BeingDeleted:
		// BMO runs no deletion (its finalizer stays) while the host is paused.
		return Outcome{Phase: PhaseIgnored, Ignored: BeingDeleted}, m.unpauseForDeletion(ctx, host)
	case decision.Phase == PhaseIgnored:
		return Outcome{Phase: PhaseIgnored, Ignored: decision.Ignored}, nil
	case decision.Phase == PhaseOrphaned:
		return m.orphaned(ctx, decision.SetUpFrom), m.Claims.ReleaseFailed(ctx, host, nil)
	case decision.Phase == PhaseNoTemplate:
		log.V(1).Info("No template selects this host; it stays paused until one does")
		return Outcome{Phase: PhaseNoTemplate, Message: "no template selects this host"}, m.releaseBeforeSetUp(ctx, host)
	case decision.Phase == PhaseConflict:
		return m.conflict(ctx, host, decision.Conflicts), m.releaseBeforeSetUp(ctx, host)
	}

	governing := *decision.Governing
	ctx = ctrl.LoggerInto(ctx, log.WithValues("template", governing.Ref.String()))
	outcome, err := m.setUp(ctx, host, governing)
	// Set up anyway: the network may have a DHCP server or relay for the boot.
	outcome.BootNeedsDHCP = bootNeedsDHCP(host.Spec.BMC.Address)
	if err == nil {
		outcome.CollidingData, err = m.Claims.CollidingData(ctx, host)
	}
	outcome.LeftOvers, outcome.TemplateUsers = decision.Resolution.LeftOvers, decision.Resolution.Users
	return outcome, err
}

// conflict reports a host that several templates select: it is left
// untouched until one does.
func (m *HostManager) conflict(ctx context.Context, host *bmov1alpha1.BareMetalHost, conflicts []template.Ref) Outcome {
	names := refNames(conflicts)
	message := fmt.Sprintf("selected by %d templates (%s): the host is left untouched until exactly one selects it; "+
		"narrow the hostSelectors or change the host's labels (Metal3MachineTemplates that render the same network data, "+
		"or of which exactly one is referenced by a MachineDeployment or KubeadmControlPlane, do not conflict)",
		len(conflicts), strings.Join(names, ", "))
	outcome := m.fail(ctx, host, PhaseConflict, template.Ref{}, ReasonTemplateConflict, message)
	outcome.Conflicts, outcome.Items = conflicts, names
	return outcome
}

func addressesByPool(claims []ipam.PoolState) map[string]networkdata.Address {
	addresses := make(map[string]networkdata.Address, len(claims))
	for _, claim := range claims {
		addresses[claim.Pool] = *claim.Address
	}
	return addresses
}

// orphaned reports a host we set up that no template selects any more. It
// keeps its Secret, claims and provisioning state: we never undo a host. Its
// failed claims go (Reconcile): they hold no address.
func (m *HostManager) orphaned(ctx context.Context, ref template.Ref) Outcome {
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
