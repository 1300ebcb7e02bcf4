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
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/ipam"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// patchHost is the one patch on the host: it sets
// spec.preprovisioningNetworkDataName, removes our pause (recording when),
// marks the host as ours, records its template and removes the problem
// recorded before. Only the fields we own are sent, and with an optimistic
// lock, so a pause somebody else set in the meantime is never removed.
func (m *HostManager) patchHost(ctx context.Context, host *bmov1alpha1.BareMetalHost, ref template.Ref,
	claims []ipam.PoolState,
) error {
	secretName := NetworkDataSecretName(host.Name)
	pausedForUs := ownership.PausedForUs(host)
	if host.Spec.PreprovisioningNetworkDataName == secretName && !pausedForUs && !rerenderRequested(host) && ownership.Ours(host) &&
		host.Annotations[preprovv1.TemplateAnnotation] == ref.String() {
		return nil
	}

	original := host.DeepCopy()
	host.Spec.PreprovisioningNetworkDataName = secretName
	if host.Labels == nil {
		host.Labels = map[string]string{}
	}
	host.Labels[preprovv1.ManagedLabel] = preprovv1.ManagedLabelValue
	if host.Annotations == nil {
		host.Annotations = map[string]string{}
	}
	host.Annotations[preprovv1.TemplateAnnotation] = ref.String()
	if pausedForUs {
		delete(host.Annotations, preprovv1.PausedAnnotation)
		host.Annotations[preprovv1.UnpausedAtAnnotation] = m.clock().Now().UTC().Format(time.RFC3339)
	}
	// The host has its network data: a problem recorded before is gone, in
	// this same write. A stall is BMO's, and is decided after it.
	if host.Annotations[preprovv1.ProblemAnnotation] != ReasonInspectionStalled {
		delete(host.Annotations, preprovv1.ProblemAnnotation)
	}
	// The re-render it asked for is done.
	delete(host.Annotations, preprovv1.RerenderAnnotation)
	patch := client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})
	if err := m.Client.Patch(ctx, host, patch); err != nil {
		return fmt.Errorf("pointing BareMetalHost %s/%s at Secret %q: %w", host.Namespace, host.Name, secretName, err)
	}
	m.writes.Wrote(hostKey(host), original.ResourceVersion)
	message, claimed := setUpMessage(ref, claims, secretName, pausedForUs)
	m.event(host, corev1.EventTypeNormal, ReasonNetworkDataSet, message, claimed...)
	if pausedForUs {
		metrics.SecondsToUnpause.Observe(time.Since(host.CreationTimestamp.Time).Seconds())
	}
	ctrl.LoggerFrom(ctx).Info("Host network data set", "secret", secretName, "unpaused", pausedForUs)
	return nil
}

// recordProblem writes the host's problem annotation when it differs. Only
// a host with a problem, or one whose problem went, is written: the happy
// path costs no write.
func (m *HostManager) recordProblem(ctx context.Context, host *bmov1alpha1.BareMetalHost, problem string) error {
	if host.Annotations[preprovv1.ProblemAnnotation] == problem {
		return nil
	}
	original := host.DeepCopy()
	if problem == "" {
		delete(host.Annotations, preprovv1.ProblemAnnotation)
	} else {
		if host.Annotations == nil {
			host.Annotations = map[string]string{}
		}
		host.Annotations[preprovv1.ProblemAnnotation] = problem
	}
	// Only our annotation is sent: no lock is needed.
	if err := m.Client.Patch(ctx, host, client.MergeFrom(original)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("recording problem %q on BareMetalHost %s/%s: %w", problem, host.Namespace, host.Name, err))
	}
	m.writes.Wrote(hostKey(host), original.ResourceVersion)
	return nil
}

// PatchPending reports whether the host, as the cache shows it, is still
// the version our last patch replaced, and for how much longer to wait for
// the newer one. Working from it would redo the host's steps and send the
// patch again, only to lose its optimistic lock; the patch's own update
// event brings the host back.
func (m *HostManager) PatchPending(host *bmov1alpha1.BareMetalHost) (time.Duration, bool) {
	return m.writes.Behind(hostKey(host), host.ResourceVersion)
}

// setUpMessage is the note of a host's one set-up event: what each step
// did, and the claims it lists.
func setUpMessage(ref template.Ref, claims []ipam.PoolState, secretName string, unpaused bool) (string, []string) {
	var b strings.Builder
	fmt.Fprintf(&b, "set up from %s:", ref)
	claimed := make([]string, 0, len(claims))
	for _, claim := range claims {
		claimed = append(claimed, fmt.Sprintf("%s %q has %s from %s %q;", claim.ClaimKind, claim.Claim, claim.Address.IP, claim.PoolKind, claim.Pool))
		b.WriteString(" " + claimed[len(claimed)-1])
	}
	fmt.Fprintf(&b, " network data in Secret %q; set spec.preprovisioningNetworkDataName", secretName)
	if unpaused {
		b.WriteString(" and removed the pause " + preprovv1.PausedForPreprovisioning)
	}
	return b.String(), claimed
}

// unpauseForDeletion removes our pause, and only ours, from a host being
// deleted, so that BMO can deprovision it and drop its finalizer. Nothing
// else is changed: the host is going.
func (m *HostManager) unpauseForDeletion(ctx context.Context, host *bmov1alpha1.BareMetalHost) error {
	if !ownership.PausedForUs(host) {
		return nil
	}
	original := host.DeepCopy()
	delete(host.Annotations, preprovv1.PausedAnnotation)
	patch := client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})
	if err := m.Client.Patch(ctx, host, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the pause %s from BareMetalHost %s/%s being deleted: %w",
			preprovv1.PausedForPreprovisioning, host.Namespace, host.Name, err))
	}
	ctrl.LoggerFrom(ctx).Info("Removed our pause from a host being deleted, so BMO can delete it")
	return nil
}
