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
	"maps"
	"strings"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// NetworkDataSecretName is the name of the Secret holding a host's
// preprovisioning network data.
func NetworkDataSecretName(hostName string) string {
	return hostName + preprovv1.NetworkDataSecretSuffix
}

// readSecret reads the host's Secret from the cache, and stops the host
// when a Secret of that name is not this host's.
func (m *HostManager) readSecret(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: s.host.Namespace, Name: NetworkDataSecretName(s.host.Name)}
	if err := m.Client.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return goOn()
		}
		return failed(fmt.Errorf("getting Secret %s: %w", key, err))
	}
	if outcome := m.secretNotOurs(ctx, s.host, s.governing.Ref, secret); outcome != nil {
		return stopAt(*outcome)
	}
	s.secret = secret
	return goOn()
}

// secretNotOurs is the outcome of a host whose Secret name is taken: by an
// earlier host of the same name (it goes once that host is deleted), or by
// somebody else (a user must remove it). It is nil for the Secret we wrote
// for this host.
func (m *HostManager) secretNotOurs(ctx context.Context, host *bmov1alpha1.BareMetalHost, ref template.Ref,
	secret *corev1.Secret,
) *Outcome {
	ownedByHost := ownership.OwnedByHost(secret, host)
	if ownedByHost && writtenForHost(secret, host) {
		return nil
	}
	if !ownedByHost && ownership.HasStaleHostOwner(secret, host) {
		return m.earlierHostsSecret(ctx, host, ref, secret)
	}
	why := fmt.Sprintf("it has no owner reference to BareMetalHost %q", host.Name)
	if ownedByHost {
		why = fmt.Sprintf("it is owned by the host, as BMO makes every Secret a host points at, but has neither our "+
			"annotation %s naming this host nor, from before that annotation, our label %s",
			preprovv1.WrittenForAnnotation, preprovv1.ManagedLabel)
	}
	outcome := m.fail(ctx, host, PhaseFailed, ref, ReasonSecretConflict, fmt.Sprintf("Secret %q exists but was not created for this "+
		"host (%s): it is left as it is; delete or rename it, and the host is set up", secret.Name, why))
	// Such a Secret may lack our label, and then no event of our cache
	// says when it is gone.
	outcome.RequeueAfter = takenSecretRetry
	return &outcome
}

// writtenForHost is true for a Secret we wrote for this host: our
// annotation names the host, and only we write it. Its name, not its UID:
// clusterctl move recreates the host under a new UID and rewrites the
// Secret's owner reference to it, but copies annotations as they are; the
// owner reference's UID already tells an earlier host of the same name. A Secret without
// the annotation is ours when it carries our label: we wrote such Secrets
// before the annotation existed (and add it with our next write of them),
// and BMO, which puts the host's owner reference on the Secrets it
// acquires, never adds our label.
func writtenForHost(secret *corev1.Secret, host *bmov1alpha1.BareMetalHost) bool {
	if writtenFor, ok := secret.Annotations[preprovv1.WrittenForAnnotation]; ok {
		return writtenFor == host.Name
	}
	return ownership.Ours(secret)
}

// earlierHostsSecret is the outcome of a host whose Secret name is held by
// the Secret of an earlier host of the same name: the garbage collector
// deletes it, and BMO's finalizer keeps it until BMO has deleted that host.
// The host waits, with an event that says on what, and is set up once the
// Secret is gone: the Secret's deletion brings it back when our cache holds
// the Secret, the timer when it does not.
func (m *HostManager) earlierHostsSecret(ctx context.Context, host *bmov1alpha1.BareMetalHost, ref template.Ref,
	secret *corev1.Secret,
) *Outcome {
	outcome := &Outcome{Phase: PhaseWaiting, Waiting: WaitingForEarlierHost, Template: ref, Reason: ReasonSecretOfEarlierHost, EventType: corev1.EventTypeNormal,
		RequeueAfter: takenSecretRetry, Message: fmt.Sprintf("Secret %q belongs to an earlier BareMetalHost named %q; "+
			"waiting for the garbage collector to delete it, then the host is set up", secret.Name, host.Name)}
	if !secret.DeletionTimestamp.IsZero() && len(secret.Finalizers) > 0 {
		outcome.EventType = corev1.EventTypeWarning
		outcome.Message = fmt.Sprintf("Secret %q of an earlier BareMetalHost named %q is being deleted but is held by its "+
			"finalizers %s; the host is set up once it is gone. BMO removes its finalizer %s once it has deleted the earlier "+
			"host: if that host was removed without BMO (its finalizer taken off by hand), remove the Secret's finalizers",
			secret.Name, host.Name, strings.Join(secret.Finalizers, ", "), preprovv1.BMOSecretFinalizer)
	}
	ctrl.LoggerFrom(ctx).Info("Waiting for the Secret of an earlier host of the same name to go", "secret", secret.Name,
		"finalizers", secret.Finalizers)
	return outcome
}

func (m *HostManager) apiReader() client.Reader {
	if m.APIReader != nil {
		return m.APIReader
	}
	return m.Client
}

// takenSecretRetry is how often a host whose Secret name is taken looks again.
const takenSecretRetry = 10 * time.Second

// secretLabels are the labels our Secret must carry: BMO's, so its Secret
// cache sees it, and ours and the host's shard (--watch-filter), so our
// cache does.
func secretLabels(host *bmov1alpha1.BareMetalHost) map[string]string {
	return ownership.WithHostShard(host, map[string]string{
		preprovv1.BMOSecretLabel: preprovv1.BMOSecretLabelValue,
		preprovv1.ManagedLabel:   preprovv1.ManagedLabelValue,
	})
}

// writeSecret creates the Secret, or patches it when its data or our labels
// differ. Nothing else is compared: with BMO's -build-preprov-image every
// write rebuilds the host's image, so a write that changes nothing is a cost.
// A change of the MAC of a link the template takes from the host's
// interfaces is reported.
func (m *HostManager) writeSecret(ctx context.Context, s *hostSetUp) (bool, Outcome, error) {
	host, secret, rendered, ref := s.host, s.secret, s.rendered, s.governing.Ref
	if secret == nil {
		existing, notOurs, err := m.createSecret(ctx, host, rendered, ref)
		switch {
		case err != nil:
			return failed(err)
		case notOurs != nil:
			return stopAt(*notOurs)
		case existing == nil:
			return goOn()
		}
		// The host's own Secret, which lost our label: put it back below.
		secret = existing
	}

	wantLabels := secretLabels(host)
	if string(secret.Data[preprovv1.NetworkDataKey]) == string(rendered) && hasLabels(secret.Labels, wantLabels) {
		return goOn()
	}
	original := secret.DeepCopy()
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	maps.Copy(secret.Labels, wantLabels)
	// A Secret we wrote before the annotation existed gets it with this
	// write, never with a write of its own (a cost, see above).
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	secret.Annotations[preprovv1.WrittenForAnnotation] = host.Name
	if secret.Data == nil {
		secret.Data = map[string][]byte{}
	}
	secret.Data[preprovv1.NetworkDataKey] = rendered
	// Fenced on the resourceVersion we read, as Cluster API's patch helper
	// fences its writes: a Secret deleted and made again under our name by
	// somebody else since (our cache still showing ours, or in the moment
	// between the create that found the name taken and this patch) is a
	// conflict, never overwritten. The retry reads it and stops the host.
	if err := m.Client.Patch(ctx, secret, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
		return failed(fmt.Errorf("updating Secret %s/%s: %w", secret.Namespace, secret.Name, err))
	}
	m.event(host, corev1.EventTypeNormal, ReasonSecretUpdated,
		fmt.Sprintf("re-rendered network data from %s into Secret %q", ref, secret.Name))
	m.reportMACChanges(ctx, host, secret.Name, macChanges(hostInterfaceLinks(s.networkData), original.Data[preprovv1.NetworkDataKey], rendered))
	return goOn()
}

// createSecret creates the host's Secret. When one of that name exists
// already, it returns it if it is ours (our cache did not show it: it lost
// our label), or the outcome that stops the host.
func (m *HostManager) createSecret(ctx context.Context, host *bmov1alpha1.BareMetalHost, rendered []byte, ref template.Ref,
) (*corev1.Secret, *Outcome, error) {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NetworkDataSecretName(host.Name),
			Namespace:   host.Namespace,
			Labels:      secretLabels(host),
			Annotations: map[string]string{preprovv1.WrittenForAnnotation: host.Name},
			// Not a controller reference: BMO watches Secrets through
			// their owner references and must be woken by changes too.
			OwnerReferences: []metav1.OwnerReference{ownership.HostOwnerReference(host)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{preprovv1.NetworkDataKey: rendered},
	}
	err := m.Client.Create(ctx, secret)
	if err == nil {
		m.writes.Wrote(secretKey(host), "")
		return nil, nil, nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return nil, nil, fmt.Errorf("creating Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	// Our cache only holds Secrets with our label: read this one past it.
	existing := &corev1.Secret{}
	if err := m.apiReader().Get(ctx, client.ObjectKeyFromObject(secret), existing); err != nil {
		return nil, nil, fmt.Errorf("getting Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	if outcome := m.secretNotOurs(ctx, host, ref, existing); outcome != nil {
		return nil, outcome, nil
	}
	return existing, nil, nil
}

func hasLabels(have, want map[string]string) bool {
	for key, value := range want {
		if have[key] != value {
			return false
		}
	}
	return true
}
