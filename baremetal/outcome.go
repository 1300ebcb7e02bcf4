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
	"sync"
	"time"
	"unicode/utf8"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/template"
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
	// ReasonSecretConflict is a Secret of our name that we did not write
	// for this host.
	ReasonSecretConflict = "PreprovisioningSecretConflict"
	// ReasonSecretOfEarlierHost is a host waiting for the Secret of an
	// earlier host of the same name to be deleted.
	ReasonSecretOfEarlierHost = "PreprovisioningSecretOfEarlierHost"
	// ReasonNetworkDataTooLarge is network data larger than a Secret holds.
	ReasonNetworkDataTooLarge = "PreprovisioningNetworkDataTooLarge"
	// ReasonMACChanged warns that a link's MAC, taken from a host
	// interface, changed in a Secret we had written.
	ReasonMACChanged = "PreprovisioningMACChanged"
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
	// ReasonAddressHeld says which claims the host's network data no
	// longer names are kept because its machine may still use them, and
	// what releases each.
	ReasonAddressHeld = "PreprovisioningAddressHeld"
	// EventAction is the action of all our events on hosts.
	EventAction = "Preprovisioning"
)

// Outcome is where a host stands: what one reconcile of it found, or, read
// back from the objects, what Standing tells.
type Outcome struct {
	Phase    Phase
	Template template.Ref
	// Ignored says why the host is not ours, in PhaseIgnored.
	Ignored IgnoredBecause
	// Waiting says what the host waits for, in PhaseWaiting.
	Waiting WaitingFor
	// Conflicts are the templates that all select the host, in PhaseConflict.
	Conflicts []template.Ref
	// Reason is the event reason of a failure.
	Reason string
	// Message says why the host is not Ready, in words for a user.
	Message string
	// Items are what Message lists (a failure per pool, the templates in
	// conflict), in order: an event too long for the API names the first
	// of them and counts the rest.
	Items []string
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
	LeftOvers []template.Ref
	// TemplateUsers name what references Template, when there are LeftOvers.
	TemplateUsers []string
	// InspectionStalled is a Ready host that BMO has not got past
	// registering or inspecting in time since we unpaused it.
	InspectionStalled bool
	// Held are the claims of a Ready host that its network data no longer
	// names and that are kept because its machine may still run with
	// their addresses.
	Held []ipam.Held
	// Unreachable is what the host's network data gives its deploy ramdisk
	// no way to: the reason a paused host fails, a Warning on a Ready one.
	Unreachable *Unreachable
}

// Equal reports whether two outcomes say the same.
func (o Outcome) Equal(other Outcome) bool {
	return o.Phase == other.Phase && o.Ignored == other.Ignored && o.Waiting == other.Waiting && o.Template == other.Template && o.Reason == other.Reason &&
		o.Message == other.Message && slices.Equal(o.Conflicts, other.Conflicts) && o.BootNeedsDHCP == other.BootNeedsDHCP &&
		o.CollidingData == other.CollidingData && slices.Equal(o.LeftOvers, other.LeftOvers) &&
		o.InspectionStalled == other.InspectionStalled && slices.Equal(o.Held, other.Held) && o.Unreachable.Equal(other.Unreachable)
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
				"unpausedAt", host.Annotations[preprovv1.UnpausedAtAnnotation], "message", outcome.Message)
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
	previous, changed := m.reported.swap(key, host.UID, outcome)
	if !changed {
		return nil
	}
	if outcome.EventType == corev1.EventTypeWarning {
		metrics.Failures.WithLabelValues(outcome.Reason).Inc()
	}
	// Once per failure, conflict, drift or stall, not on every reconcile.
	if outcome.EventType != "" && (outcome.EventType != previous.EventType || outcome.Reason != previous.Reason ||
		outcome.Message != previous.Message) {
		m.event(host, outcome.EventType, outcome.Reason, outcome.Message, outcome.Items...)
	}
	// Once when a rollout's left-overs start or stop being set aside.
	if len(outcome.LeftOvers) > 0 && !slices.Equal(outcome.LeftOvers, previous.LeftOvers) {
		m.event(host, corev1.EventTypeNormal, ReasonLeftOverTemplates, LeftOversMessage(outcome.Template, outcome.TemplateUsers, outcome.LeftOvers),
			refNames(outcome.LeftOvers)...)
	}
	if outcome.Phase == PhaseOrphaned {
		m.event(host, corev1.EventTypeNormal, ReasonOrphaned, outcome.Message)
	}
	if outcome.CollidingData != "" && outcome.CollidingData != previous.CollidingData {
		m.event(host, corev1.EventTypeWarning, ReasonCAPM3NameCollision, CAPM3NameCollisionMessage(host.Name, outcome.CollidingData))
	}
	// Once when the claims kept for the host's machine change.
	if len(outcome.Held) > 0 && !slices.Equal(outcome.Held, previous.Held) {
		message, items := HeldMessage(outcome.Held)
		ctrl.LoggerFrom(ctx).Info("Keeping claims the host's machine may still use", "claims", items)
		m.event(host, corev1.EventTypeNormal, ReasonAddressHeld, message, items...)
	}
	// Once when what a set-up host's ramdisk cannot reach changes; a
	// paused host's is its failure, reported above.
	if outcome.Phase == PhaseReady && outcome.Unreachable != nil && !outcome.Unreachable.Equal(previous.Unreachable) {
		message, items := UnreachableMessage(outcome.Template, outcome.Unreachable, false)
		ctrl.LoggerFrom(ctx).Info("The deploy ramdisk cannot reach its endpoints", "unreachable", items)
		m.event(host, corev1.EventTypeWarning, ReasonEndpointUnreachable, message, items...)
	}
	// Once when a selected host's BMC address starts to need DHCP, not on
	// every change of its phase.
	if outcome.BootNeedsDHCP != "" && outcome.BootNeedsDHCP != previous.BootNeedsDHCP {
		m.event(host, corev1.EventTypeWarning, ReasonBootNeedsDHCP, BootNeedsDHCPMessage(outcome.BootNeedsDHCP))
	}
	return nil
}

// HeldMessage says which claims are kept for the host's machine, one item
// each.
func HeldMessage(held []ipam.Held) (string, []string) {
	items := make([]string, 0, len(held))
	for _, claim := range held {
		items = append(items, claim.String())
	}
	return "the host's network data no longer names these addresses, but a machine may still run with them, so they " +
		"are not released yet: " + strings.Join(items, "; "), items
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
	case outcome.Reason == ReasonSecretOfEarlierHost:
		// A wait that can last: BMO's finalizer may hold the Secret.
		return outcome.Reason
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
// when we never unpaused it. The time counts from when the host entered its
// state (pendingSince), not from its unpause: a host sent back to
// inspection long after is not stalled at once.
func InspectionStall(host *bmov1alpha1.BareMetalHost, now time.Time, timeout time.Duration) (bool, time.Duration) {
	if !inspectionPending(host.Status.Provisioning.State) {
		return false, 0
	}
	since, unpaused := pendingSince(host)
	if !unpaused {
		return false, 0
	}
	left := since.Add(timeout).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// pendingSince is when a host we unpaused entered the state it is in before
// the end of inspection, and false when we never unpaused it. BMO records
// when it starts each registration and inspection in
// status.operationHistory (recordStateBegin in its host state machine, on
// every entry into the state, and not again while it retries there), so a
// re-inspection (the inspect.metal3.io annotation, an externally
// provisioned host inspected) counts from its own start at no write of
// ours. A host BMO has not started on, or a BMO that recorded nothing,
// counts from our unpause, as does a start before it.
func pendingSince(host *bmov1alpha1.BareMetalHost) (time.Time, bool) {
	unpausedAt, err := time.Parse(time.RFC3339, host.Annotations[preprovv1.UnpausedAtAnnotation])
	if err != nil {
		return time.Time{}, false
	}
	var started time.Time
	switch history := host.Status.OperationHistory; host.Status.Provisioning.State {
	case bmov1alpha1.StateRegistering:
		started = history.Register.Start.Time
	case bmov1alpha1.StateInspecting:
		started = history.Inspect.Start.Time
	}
	if started.After(unpausedAt) {
		return started, true
	}
	return unpausedAt, true
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
	since, source := "we set its network data and removed our pause", ""
	entered, _ := pendingSince(host)
	at := entered.UTC().Format(time.RFC3339)
	if at != host.Annotations[preprovv1.UnpausedAtAnnotation] {
		since, source = "BMO started "+state+" it", ", from its status.operationHistory"
	}
	return fmt.Sprintf("the host is still %s %s after %s (at %s%s). Usual causes: "+
		"the deploy ramdisk has no glean (or cloud-init) to apply the network data; the BMC cannot boot virtual media, so "+
		"the ramdisk never gets the config drive; no route from the host's provisioning address to Ironic; the MAC "+
		"addresses in the network data are not the host's (check the template's links and spec.bootMACAddress). "+
		"See BMO's status.errorMessage and the Ironic node's last_error", state, timeout, since, at, source)
}

// reportedOutcomes holds the outcome last reported for each host, so that a
// host that stays failed, conflicting, drifted or stalled is not reported
// again on every reconcile. Only events and the failures metric depend on
// it: after a restart a host's current problem is reported once more.
//
// A host is told by its UID: a host deleted and registered again under its
// name is a new host, reported afresh, even when no reconcile saw it gone
// (the work queue merges the deletion and the creation under one name). The
// outcomes are found by name, so the entry of a deleted host is dropped by
// name, and a host registered again replaces the entry of the earlier one.
type reportedOutcomes struct {
	mu     sync.Mutex
	byHost map[types.NamespacedName]reportedOutcome
}

type reportedOutcome struct {
	uid     types.UID
	outcome Outcome
}

// swap stores a host's outcome and returns the one it replaces, and whether
// anything changed: the outcome, or the host under that name.
func (r *reportedOutcomes) swap(host types.NamespacedName, uid types.UID, outcome Outcome) (Outcome, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byHost == nil {
		r.byHost = map[types.NamespacedName]reportedOutcome{}
	}
	previous, known := r.byHost[host]
	r.byHost[host] = reportedOutcome{uid: uid, outcome: outcome}
	if !known || previous.uid != uid {
		return Outcome{}, true
	}
	return previous.outcome, !previous.outcome.Equal(outcome)
}

func (r *reportedOutcomes) forget(host types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byHost, host)
}

// MaxEventNote is the longest note an event may have: events.k8s.io/v1
// refuses longer ones, and client-go's recorder does not shorten them, so
// such an event would be lost.
const MaxEventNote = 1024

// EventNote is message as an event can carry it: whole when it fits, or else
// with the first of the items it lists (in order) and a count of the rest,
// keeping the words before and after the list. A message whose list cannot
// be found in it, or that does not fit even so, is cut. The log and the
// problem recorded on the host keep the full message. Every event we emit
// goes through it: the host's, the invalid template's, the handoff's.
func EventNote(message string, items []string) string {
	if len(message) <= MaxEventNote {
		return message
	}
	if ends := itemEnds(message, items); len(ends) > 1 {
		after := message[ends[len(ends)-1]:]
		for kept := len(ends) - 1; kept > 0; kept-- {
			note := fmt.Sprintf("%s … and %d more%s", message[:ends[kept-1]], len(ends)-kept, after)
			if len(note) <= MaxEventNote {
				return note
			}
		}
	}
	return cut(message, MaxEventNote)
}

// itemEnds returns where each item ends in message, or nil when one is not
// there. The items are looked for from the end: the words before a list may
// name what it lists (a template named in another's name, say).
func itemEnds(message string, items []string) []int {
	ends := make([]int, len(items))
	limit := len(message)
	for i := len(items) - 1; i >= 0; i-- {
		at := strings.LastIndex(message[:limit], items[i])
		if at < 0 || items[i] == "" {
			return nil
		}
		ends[i], limit = at+len(items[i]), at
	}
	return ends
}

// cut shortens text to at most limit bytes, at a character boundary, ending
// with an ellipsis.
func cut(text string, limit int) string {
	const ellipsis = "…"
	end := limit - len(ellipsis)
	for end > 0 && !utf8.RuneStart(text[end]) {
		end--
	}
	return text[:end] + ellipsis
}

// refNames are the templates' references as the messages name them.
func refNames(refs []template.Ref) []string {
	names := make([]string, 0, len(refs))
	for _, ref := range refs {
		names = append(names, ref.String())
	}
	return names
}
