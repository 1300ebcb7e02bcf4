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
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
)

// Phase is where a host stands with us.
type Phase string

// Phases of a host. PhaseIgnored hosts are not ours and are never written.
const (
	PhaseIgnored    Phase = "Ignored"
	PhaseNoTemplate Phase = "NoTemplate"
	PhaseConflict   Phase = "Conflict"
	PhaseWaiting    Phase = "Waiting"
	PhaseFailed     Phase = "Failed"
	PhaseReady      Phase = "Ready"
	PhaseDrifted    Phase = "Drifted"
	PhaseOrphaned   Phase = "Orphaned"
)

// Event reasons on the BareMetalHost.
const (
	ReasonTemplateConflict = "PreprovisioningTemplateConflict"
	ReasonTemplateInvalid  = "PreprovisioningTemplateInvalid"
	ReasonIPClaimFailed    = "PreprovisioningIPClaimFailed"
	ReasonRenderFailed     = "PreprovisioningRenderFailed"
	ReasonSecretUpdated    = "PreprovisioningSecretUpdated"
	// ReasonSecretConflict is a Secret of our name that another object
	// than this host owns.
	ReasonSecretConflict = "PreprovisioningSecretConflict"
	// ReasonNameTooLong is a host whose Secret name would be too long.
	ReasonNameTooLong = "PreprovisioningNameTooLong"
	// ReasonNetworkDataSet is the one Normal event of a host's set-up: it
	// names every step (claims, addresses, Secret, patch), so a fleet's
	// events cost one write per host.
	ReasonNetworkDataSet   = "PreprovisioningNetworkDataSet"
	ReasonNetworkDataDrift = "PreprovisioningNetworkDataDrift"
	ReasonOrphaned         = "PreprovisioningTemplateGone"
	// ReasonCAPM3NameCollision warns that a Metal3Data of another host is
	// named like the host, so CAPM3 would take the host's claims for its own.
	ReasonCAPM3NameCollision = "PreprovisioningCAPM3NameCollision"
	// ReasonBootNeedsDHCP warns that the host's BMC driver boots the deploy
	// ramdisk over the network, which needs DHCP; the host is set up anyway.
	ReasonBootNeedsDHCP = "PreprovisioningBootNeedsDHCP"
	// ReasonInspectionStalled warns that BMO has not got a host we unpaused
	// past registering or inspecting in time.
	ReasonInspectionStalled = "PreprovisioningInspectionStalled"
	// EventAction is the action of all our events on hosts.
	EventAction = "Preprovisioning"
)

// Outcome is where a host stands: what one reconcile of it found, or, read
// back from the objects, what Standing tells.
type Outcome struct {
	Phase    Phase
	Template TemplateRef
	// Conflicts are the templates that all select the host, in PhaseConflict.
	Conflicts []TemplateRef
	// Reason is the event reason of a failure.
	Reason string
	// Message says why the host is not Ready, in words for a user.
	Message string
	// RequeueAfter, when set, is when to look at the host again if no
	// event brings it back first.
	RequeueAfter time.Duration
	// BootNeedsDHCP is, for a host one template selects, the scheme of its
	// BMC address when that driver boots the deploy ramdisk over the
	// network (which needs DHCP); empty otherwise.
	BootNeedsDHCP string
	// CollidingData is a Metal3Data of another host named like this host.
	CollidingData string
	// EventType, with Reason and Message, is the event the outcome is
	// reported with when it is new for the host: a host that stays
	// failed, conflicting or drifted is not reported again on every reconcile.
	EventType string
	// LeftOvers are the other Metal3MachineTemplates that select the host
	// when a MachineDeployment or KubeadmControlPlane references Template:
	// left-overs of a rollout, which do not govern it.
	LeftOvers []TemplateRef
	// TemplateUsers name what references Template, when there are LeftOvers.
	TemplateUsers []string
	// InspectionStalled is a Ready host that BMO has not got past
	// registering or inspecting in time since we unpaused it.
	InspectionStalled bool
}

// Equal reports whether two outcomes say the same.
func (o Outcome) Equal(other Outcome) bool {
	return o.Phase == other.Phase && o.Template == other.Template && o.Reason == other.Reason &&
		o.Message == other.Message && slices.Equal(o.Conflicts, other.Conflicts) && o.BootNeedsDHCP == other.BootNeedsDHCP &&
		o.CollidingData == other.CollidingData && slices.Equal(o.LeftOvers, other.LeftOvers) &&
		o.InspectionStalled == other.InspectionStalled
}

// Reconcile takes one host as far as it can go now and reports the outcome:
// the problem recorded on the host, the events and the metrics. It returns
// an error only for failures worth a retry (the API server); a problem that
// needs a user's fix is an Outcome with an event and a log line, and the
// watches bring the host back once something it depends on changes.
func (m *HostManager) Reconcile(ctx context.Context, host *bmov1alpha1.BareMetalHost) (Outcome, error) {
	outcome, err := m.reconcile(ctx, host)
	if err != nil {
		return Outcome{}, err
	}
	if outcome.Phase == PhaseReady {
		outcome = m.withInspectionStall(host, outcome)
		if outcome.InspectionStalled {
			ctrl.LoggerFrom(ctx).Info("Host does not get past inspection", "state", host.Status.Provisioning.State,
				"unpausedAt", host.Annotations[preprovv1.UnpausedAtAnnotation])
		}
	}
	return outcome, m.report(ctx, host, outcome)
}

// Forget drops what was reported for a deleted host.
func (m *HostManager) Forget(host types.NamespacedName) {
	m.reported.forget(host)
}

// report records the host's problem on it and sends the events of what is
// new since the host's last reported outcome.
func (m *HostManager) report(ctx context.Context, host *bmov1alpha1.BareMetalHost, outcome Outcome) error {
	key := client.ObjectKeyFromObject(host)
	if outcome.Phase == PhaseIgnored {
		// Not ours: never written, and reported afresh if it becomes ours.
		m.reported.forget(key)
		return nil
	}
	if err := m.recordProblem(ctx, host, problemOf(outcome)); err != nil {
		return err
	}
	previous, changed := m.reported.swap(key, outcome)
	if !changed {
		return nil
	}
	if outcome.EventType == corev1.EventTypeWarning {
		metrics.Failures.WithLabelValues(outcome.Reason).Inc()
	}
	// Once per failure, conflict, drift or stall, not on every reconcile.
	if outcome.EventType != "" && (outcome.EventType != previous.EventType || outcome.Reason != previous.Reason ||
		outcome.Message != previous.Message) {
		m.event(host, outcome.EventType, outcome.Reason, outcome.Message)
	}
	// Once when a rollout's left-overs start or stop being set aside.
	if len(outcome.LeftOvers) > 0 && !slices.Equal(outcome.LeftOvers, previous.LeftOvers) {
		m.event(host, corev1.EventTypeNormal, ReasonLeftOverTemplates, LeftOversMessage(outcome.Template, outcome.TemplateUsers, outcome.LeftOvers))
	}
	if outcome.Phase == PhaseOrphaned {
		m.event(host, corev1.EventTypeNormal, ReasonOrphaned, outcome.Message)
	}
	if outcome.CollidingData != "" && outcome.CollidingData != previous.CollidingData {
		m.event(host, corev1.EventTypeWarning, ReasonCAPM3NameCollision, CAPM3NameCollisionMessage(host.Name, outcome.CollidingData))
	}
	// Once when a selected host's BMC address starts to need DHCP, not on
	// every change of its phase.
	if outcome.BootNeedsDHCP != "" && outcome.BootNeedsDHCP != previous.BootNeedsDHCP {
		m.event(host, corev1.EventTypeWarning, ReasonBootNeedsDHCP, BootNeedsDHCPMessage(outcome.BootNeedsDHCP))
	}
	return nil
}

// problemOf is what is recorded on a host for an outcome: what the host's
// standing cannot be told from the objects alone (why it failed, that it
// drifted or stalled). Waiting, conflicting, orphaned and ready hosts are
// told from their annotations and the templates that select them.
func problemOf(outcome Outcome) string {
	switch {
	case outcome.Phase == PhaseFailed:
		return outcome.Reason
	case outcome.Phase == PhaseDrifted:
		return ReasonNetworkDataDrift
	case outcome.InspectionStalled:
		return ReasonInspectionStalled
	}
	return ""
}

func (m *HostManager) clock() clock.PassiveClock {
	if m.Clock == nil {
		return clock.RealClock{}
	}
	return m.Clock
}

func (m *HostManager) inspectionStallTimeout() time.Duration {
	if m.InspectionStallTimeout == 0 {
		return DefaultInspectionStallTimeout
	}
	return m.InspectionStallTimeout
}

// DefaultInspectionStallTimeout is how long BMO may take a host we unpaused
// through registering and inspecting before the host is reported.
const DefaultInspectionStallTimeout = 15 * time.Minute

// withInspectionStall marks a Ready host that BMO has not got past
// registering or inspecting in time since we unpaused it, or asks to look at
// it again when that time is up.
func (m *HostManager) withInspectionStall(host *bmov1alpha1.BareMetalHost, outcome Outcome) Outcome {
	stalled, left := InspectionStall(host, m.clock().Now(), m.inspectionStallTimeout())
	switch {
	case stalled:
		outcome.InspectionStalled = true
		outcome.EventType, outcome.Reason = corev1.EventTypeWarning, ReasonInspectionStalled
		outcome.Message = InspectionStalledMessage(host, m.inspectionStallTimeout())
	case left > 0 && (outcome.RequeueAfter == 0 || left < outcome.RequeueAfter):
		outcome.RequeueAfter = left
	}
	return outcome
}

// InspectionStall reports whether BMO has left a host we unpaused in
// registering or inspecting (or not started on it) for longer than timeout
// at now, and otherwise how long it has left; zero once BMO moved it on or
// when we never unpaused it.
func InspectionStall(host *bmov1alpha1.BareMetalHost, now time.Time, timeout time.Duration) (bool, time.Duration) {
	if !inspectionPending(host.Status.Provisioning.State) {
		return false, 0
	}
	unpausedAt, err := time.Parse(time.RFC3339, host.Annotations[preprovv1.UnpausedAtAnnotation])
	if err != nil {
		return false, 0
	}
	left := unpausedAt.Add(timeout).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// inspectionPending is a provisioning state before the end of inspection:
// what the ramdisk's network configuration decides.
func inspectionPending(state bmov1alpha1.ProvisioningState) bool {
	switch state {
	case bmov1alpha1.StateNone, bmov1alpha1.StateRegistering, bmov1alpha1.StateInspecting:
		return true
	}
	return false
}

// InspectionStalledMessage is the Warning of a host whose inspection stalls,
// with the usual causes.
func InspectionStalledMessage(host *bmov1alpha1.BareMetalHost, timeout time.Duration) string {
	state := string(host.Status.Provisioning.State)
	if state == "" {
		state = "not registered by BMO"
	}
	return fmt.Sprintf("the host is still %s %s after we set its network data and removed our pause (at %s). Usual causes: "+
		"the deploy ramdisk has no glean (or cloud-init) to apply the network data; the BMC cannot boot virtual media, so "+
		"the ramdisk never gets the config drive; no route from the host's provisioning address to Ironic; the MAC "+
		"addresses in the network data are not the host's (check the template's links and spec.bootMACAddress). "+
		"See BMO's status.errorMessage and the Ironic node's last_error", state, timeout, host.Annotations[preprovv1.UnpausedAtAnnotation])
}

// reportedOutcomes holds the outcome last reported for each host, so that a
// host that stays failed, conflicting, drifted or stalled is not reported
// again on every reconcile. Only events depend on it: after a restart a
// host's current problem is reported once more.
type reportedOutcomes struct {
	mu     sync.Mutex
	byHost map[types.NamespacedName]Outcome
}

// swap stores a host's outcome and returns the one it replaces, and whether
// anything changed.
func (r *reportedOutcomes) swap(host types.NamespacedName, outcome Outcome) (Outcome, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byHost == nil {
		r.byHost = map[types.NamespacedName]Outcome{}
	}
	previous, known := r.byHost[host]
	r.byHost[host] = outcome
	return previous, !known || !previous.Equal(outcome)
}

func (r *reportedOutcomes) forget(host types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byHost, host)
}
