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
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/networkdata"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// Situation names where a host stands, for explain.
type Situation string

// The situations explain tells apart.
const (
	SituationPausedByCAPI    Situation = "PausedByClusterAPI"
	SituationBeingMoved      Situation = "BeingMoved"
	SituationBeingDeleted    Situation = "BeingDeleted"
	SituationPausedByOthers  Situation = "PausedBySomeoneElse"
	SituationNotHandedOver   Situation = "NotHandedOver"
	SituationNoTemplate      Situation = "NoTemplate"
	SituationConflict        Situation = "Conflict"
	SituationInvalidTemplate Situation = "InvalidTemplate"
	SituationRenderFailed    Situation = "RenderFailed"
	SituationClaimFailed     Situation = "IPClaimFailed"
	SituationUnreachable     Situation = "EndpointUnreachable"
	SituationWaitingForIPAM  Situation = "WaitingForIPAM"
	SituationWaiting         Situation = "Waiting"
	SituationFailed          Situation = "Failed"
	SituationNotSetUpYet     Situation = "NotSetUpYet"
	SituationSetUp           Situation = "SetUp"
	SituationStalled         Situation = "InspectionStalled"
	SituationAddressesHeld   Situation = "AddressesHeld"
	SituationDrift           Situation = "Drift"
	SituationOrphaned        Situation = "Orphaned"
)

// Explanation is why a host is where it is: what the controller recorded on
// it, and what the controller's own code finds now.
type Explanation struct {
	Host *bmov1alpha1.BareMetalHost
	// Recorded are our annotations on the host, and its pause.
	Recorded []string
	// Events are the host's events from us, oldest first.
	Events []corev1.Event
	// Outcome is what a reconcile of the host finds now.
	Outcome   baremetal.Outcome
	Situation Situation
	// Why says where the host stands, Fix what to do about it.
	Why, Fix string
	// Warnings are what the controller warns about besides the outcome.
	Warnings []string
	// Writes are what the controller would write on its next reconcile.
	Writes []string
	// Addresses are the host's claims on the pools of its template, with
	// their addresses, when a template governs the host.
	Addresses []ipam.PoolState
	// Templates are the namespace's templates and what they select, when
	// none selects the host.
	Templates []string
}

// explain runs the controller's reconcile of the host with its writes
// recorded instead of sent, and tells the outcome with its fix.
func explain(ctx context.Context, o *Options, live client.WithWatch, key client.ObjectKey) (*Explanation, error) {
	host := &bmov1alpha1.BareMetalHost{}
	if err := live.Get(ctx, key, host); err != nil {
		return nil, err
	}
	result := &Explanation{Host: host, Recorded: recorded(host)}
	var err error
	if result.Events, err = hostEvents(ctx, live, host); err != nil {
		return nil, err
	}
	if baremetal.Decide(host, nil).HeldByClusterAPI {
		// The reconcilers do not run the host manager for such a host.
		result.Outcome = baremetal.Outcome{Phase: baremetal.PhaseIgnored, Ignored: baremetal.HeldByClusterAPI}
		result.Situation, result.Why, result.Fix = situation(host, result.Outcome, false)
		return result, nil
	}
	endpoints, err := networkdata.ParseEndpoints(o.RamdiskEndpoints)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", baremetal.RamdiskEndpointsFlag, err)
	}
	recorder := &writeRecorder{scheme: o.scheme}
	dryRun := recorder.client(live)
	templates := &baremetal.Templates{Reader: live, AllMachineTemplates: o.AllMachineTemplates}
	manager := &baremetal.HostManager{
		Client:                 dryRun,
		Templates:              templates,
		Claims:                 &ipam.Claims{Client: dryRun},
		Recorder:               recorder,
		APIReader:              live,
		InspectionStallTimeout: o.InspectionStallTimeout,
		RamdiskEndpoints:       endpoints,
	}
	outcome, err := manager.Reconcile(ctrl.LoggerInto(ctx, logr.Discard()), host.DeepCopy())
	if err != nil {
		return nil, err
	}
	result.Outcome, result.Writes = outcome, recorder.Writes
	result.Situation, result.Why, result.Fix = situation(host, outcome, len(recorder.Writes) > 0)
	if outcome.CollidingData != "" {
		result.Warnings = append(result.Warnings, baremetal.CAPM3NameCollisionMessage(host.Name, outcome.CollidingData))
	}
	if outcome.BootNeedsDHCP != "" {
		result.Warnings = append(result.Warnings, baremetal.BootNeedsDHCPMessage(outcome.BootNeedsDHCP))
	}
	if outcome.Phase == baremetal.PhaseReady && outcome.Unreachable != nil {
		message, _ := baremetal.UnreachableMessage(outcome.Template, outcome.Unreachable, false)
		result.Warnings = append(result.Warnings, message)
	}
	if len(outcome.LeftOvers) > 0 {
		result.Warnings = append(result.Warnings, baremetal.LeftOversMessage(outcome.Template, outcome.TemplateUsers, outcome.LeftOvers))
	}
	if outcome.Phase == baremetal.PhaseNoTemplate {
		result.Templates, err = templateSelectors(ctx, templates, host.Namespace)
	}
	if err == nil && outcome.Phase != baremetal.PhaseIgnored && outcome.Template.Name != "" {
		result.Addresses, err = addressesOfHost(ctx, o, live, templates, host)
	}
	return result, err
}

// addressesOfHost reads the host's claims on the pools of its template with
// the controller's claim code, as render does, with writes of its own that
// are dropped: the reconcile above already recorded them.
func addressesOfHost(ctx context.Context, o *Options, live client.WithWatch, templates *baremetal.Templates,
	host *bmov1alpha1.BareMetalHost,
) ([]ipam.PoolState, error) {
	recorder := &writeRecorder{scheme: o.scheme}
	claims := &ipam.Claims{Client: recorder.client(live)}
	rendered, err := preview(ctx, templates, clusterClaims(claims, live, recorder, nil), host)
	if err != nil {
		return nil, err
	}
	return rendered.Claims, nil
}

// whyAddress says what becomes of a pre-provisioning claim's address when
// CAPM3 provisions the host.
func whyAddress(claim ipam.PoolState) string {
	if claim.ClaimKind == clusterAPIClaimKind {
		// CAPM3's DataManager.ensureIPClaim names its IPAddressClaim after
		// the Metal3Data and looks for no other.
		return fmt.Sprintf("The ramdisk's address. When CAPM3 provisions the host, the OS gets CAPM3's own IPAddressClaim "+
			"<Metal3Data>-%s on %s %s, so it gets a different address from this one; this claim stays for the host's lifetime "+
			"(the ramdisk boots again at deprovisioning and cleaning) and goes when the host is deleted or its template stops "+
			"using the pool: a pool both take from needs two addresses per host", claim.Pool, claim.PoolKind, claim.Pool)
	}
	return fmt.Sprintf("The ramdisk's address. When CAPM3 provisions the host it uses this IPClaim (it looks for <Metal3Data>-%s, "+
		"then %s, and the controller makes the Metal3Data an owner of it), so the OS keeps this address", claim.Pool, claim.Claim)
}

// heldByClusterAPI tells why a host that Cluster API holds is left alone
// (baremetal.HeldByClusterAPI): the controllers write nothing to it, its
// Secret or its claims, whatever event or timer brings it up.
func heldByClusterAPI(host *bmov1alpha1.BareMetalHost) (Situation, string, string) {
	if _, moving := host.Annotations[clusterctlv1.DeleteForMoveAnnotation]; moving {
		return SituationBeingMoved, fmt.Sprintf("clusterctl move copied the host to its target cluster and is deleting it here "+
				"(annotation %s): the controller leaves the host, its Secret and its claims as they are", clusterctlv1.DeleteForMoveAnnotation),
			"nothing: the manager on the target cluster takes the host over as it is"
	}
	return SituationPausedByCAPI, fmt.Sprintf("the host is paused by Cluster API (annotation %s, which holds every Cluster API "+
			"controller off an object, for example around a clusterctl move): the controller leaves the host, its Secret and its "+
			"claims as they are, whatever changes meanwhile", clusterv1.PausedAnnotation),
		fmt.Sprintf("remove the annotation %s when the hold is over; the controller then catches up with what changed meanwhile",
			clusterv1.PausedAnnotation)
}

// templateSelectors says what each template of the namespace selects, with
// the controller's selector, or why it selects no host.
func templateSelectors(ctx context.Context, templates *baremetal.Templates, namespace string) ([]string, error) {
	list, err := templates.List(ctx, namespace)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(list))
	for _, source := range list {
		selector, err := template.HostSelector(source.Selector)
		switch {
		case source.Invalid != "":
			lines = append(lines, fmt.Sprintf("%s selects no host: %s", source.Ref, source.Invalid))
		case err != nil:
			lines = append(lines, fmt.Sprintf("%s selects no host: %v", source.Ref, err))
		default:
			lines = append(lines, fmt.Sprintf("%s selects %s", source.Ref, selector))
		}
	}
	return lines, nil
}

// situation tells the outcome in words, with its fix. The controller's
// messages already name the fix of a failure; this adds one where they do
// not.
func situation(host *bmov1alpha1.BareMetalHost, outcome baremetal.Outcome, writes bool) (Situation, string, string) {
	switch outcome.Phase {
	case baremetal.PhaseIgnored:
		return ignored(host, outcome.Ignored)
	case baremetal.PhaseNoTemplate:
		return SituationNoTemplate, "no template selects the host: it stays paused until one does",
			"label the host to match a template's hostSelector, or create a template that selects it; a Metal3MachineTemplate " +
				"is a template only with the annotation " + preprovv1.EnabledAnnotation + `: "true"` +
				" (or with the manager's --all-machine-templates)"
	case baremetal.PhaseConflict:
		return SituationConflict, outcome.Message, "narrow one template's hostSelector or relabel the host"
	case baremetal.PhaseFailed:
		return failed(outcome)
	case baremetal.PhaseWaiting:
		if outcome.Waiting == baremetal.WaitingForIPAM {
			return SituationWaitingForIPAM, outcome.Message,
				"check that Metal3 IPAM runs and serves the pool (for a Cluster API IPAM pool: the provider of its kind): " +
					"a Metal3 IPPool with spec.clusterName is served only once that Cluster exists"
		}
		return SituationWaiting, outcome.Message, "nothing: the host moves on by itself"
	case baremetal.PhaseReady:
		switch {
		case outcome.InspectionStalled:
			return SituationStalled, outcome.Message, "go through the usual causes the message lists: the host's status.errorMessage " +
				"(BMO's) and kubectl preprov render (what the ramdisk got) tell most of them apart"
		case len(outcome.Held) > 0:
			message, _ := baremetal.HeldMessage(outcome.Held)
			return SituationAddressesHeld, fmt.Sprintf("set up from %s; %s", outcome.Template, message),
				"nothing: each claim is released once its machine boots with the new data, as its line says; the claim's " +
					preprovv1.UnusedSinceAnnotation + " annotation says since when its address is out of the network data"
		case writes:
			return SituationNotSetUpYet, "the controller would set the host up now (see the writes below), but has not",
				"check that the manager runs and manages this namespace (its --namespace and --watch-filter flags)"
		}
		return SituationSetUp, fmt.Sprintf("set up from %s: spec.preprovisioningNetworkDataName is %q and BMO has the host",
				outcome.Template, host.Spec.PreprovisioningNetworkDataName),
			"nothing; if inspection does not start, check what the ramdisk got (kubectl preprov render) and docs/ramdisk.md"
	case baremetal.PhaseDrifted:
		return SituationDrift, outcome.Message, fmt.Sprintf("annotate the host %s=true to re-render it once, or leave it: "+
			"a provisioned host keeps its network data", preprovv1.RerenderAnnotation)
	case baremetal.PhaseOrphaned:
		return SituationOrphaned, outcome.Message, "nothing, or label the host for a template again: it keeps its data and addresses"
	}
	return Situation(outcome.Phase), outcome.Message, ""
}

// ignored tells why a host is not the controller's, with what hands it over.
func ignored(host *bmov1alpha1.BareMetalHost, because baremetal.IgnoredBecause) (Situation, string, string) {
	switch because {
	case baremetal.HeldByClusterAPI:
		return heldByClusterAPI(host)
	case baremetal.BeingDeleted:
		return SituationBeingDeleted, "the host is being deleted; its claims and Secret go with it",
			"nothing: BMO deletes it once it has deprovisioned it"
	case baremetal.PausedBySomeoneElse:
		return SituationPausedByOthers, fmt.Sprintf("the host is paused with %q by someone else (CAPM3 pauses with "+
				"metal3.io/capm3, clusterctl move and users with their own values): the controller never touches such a host",
				host.Annotations[preprovv1.PausedAnnotation]),
			fmt.Sprintf("to hand it to capm3-preprov, set %s: %s instead, once whoever paused it is done",
				preprovv1.PausedAnnotation, preprovv1.PausedForPreprovisioning)
	}
	return SituationNotHandedOver, "the host is neither paused for preprovisioning nor set up by capm3-preprov, and no " +
			"template that selects it adopts existing hosts",
		fmt.Sprintf("register hosts with %s: %s, or set spec.adoptExistingHosts on a Metal3PreprovisioningTemplate "+
			"that selects it", preprovv1.PausedAnnotation, preprovv1.PausedForPreprovisioning)
}

func failed(outcome baremetal.Outcome) (Situation, string, string) {
	switch outcome.Reason {
	case baremetal.ReasonTemplateInvalid:
		return SituationInvalidTemplate, outcome.Message, "fix the template as the message says"
	case baremetal.ReasonRenderFailed:
		return SituationRenderFailed, outcome.Message, "fix the template or the host as the message says " +
			"(check a template before applying it with kubectl preprov render -f)"
	case baremetal.ReasonIPClaimFailed:
		return SituationClaimFailed, outcome.Message, "grow the pool or free one of its addresses, or fix what the message names " +
			"(the pool, its kind, or a claim of another owner)"
	case baremetal.ReasonEndpointUnreachable:
		return SituationUnreachable, outcome.Message, "give the network data an address of each endpoint's family and a route " +
			"to it (a default route through the gateway of the network's subnet; kubectl preprov render shows what the ramdisk " +
			"gets), or correct the endpoints: the template's spec.ramdiskEndpoints, else the manager's --" +
			baremetal.RamdiskEndpointsFlag + " (pass the same to kubectl preprov)"
	case baremetal.ReasonPoolNameShared:
		return SituationFailed, outcome.Message, "rename the Cluster API IPAM pool or the Metal3 IPPool of the same name, " +
			"and the template's reference to it: Metal3 IPAM serves IPAddressClaims by pool name"
	}
	return SituationFailed, outcome.Message, "as the message says"
}

// recorded lists what we keep on a host besides our label: our
// annotations, and its pause.
func recorded(host *bmov1alpha1.BareMetalHost) []string {
	var lines []string
	for _, key := range slices.Sorted(maps.Keys(host.Annotations)) {
		if strings.HasPrefix(key, ourPrefix) || key == preprovv1.PausedAnnotation {
			lines = append(lines, fmt.Sprintf("annotation %s=%s", key, host.Annotations[key]))
		}
	}
	return lines
}

// hostEvents returns the host's events from capm3-preprov, oldest first.
func hostEvents(ctx context.Context, reader client.Reader, host *bmov1alpha1.BareMetalHost) ([]corev1.Event, error) {
	list := &corev1.EventList{}
	if err := reader.List(ctx, list, client.InNamespace(host.Namespace),
		client.MatchingFields{"involvedObject.uid": string(host.UID)}); err != nil {
		return nil, fmt.Errorf("listing the events of %s/%s: %w", host.Namespace, host.Name, err)
	}
	var events []corev1.Event
	for _, event := range list.Items {
		if event.Action == baremetal.EventAction {
			events = append(events, event)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return lastSeen(events[i]).Before(lastSeen(events[j])) })
	return events, nil
}

// ourPrefix starts the names of our labels and annotations.
const ourPrefix = "preprovisioning.metal3.io/"

// lastSeen is when an event last happened, whichever API wrote it.
func lastSeen(event corev1.Event) time.Time {
	switch {
	case event.Series != nil:
		return event.Series.LastObservedTime.Time
	case !event.EventTime.IsZero():
		return event.EventTime.Time
	}
	return event.LastTimestamp.Time
}
