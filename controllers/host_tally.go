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

package controllers

import (
	"context"
	"fmt"
	"maps"
	"sync"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/controlplane"
	"github.com/capm3-preprov/capm3-preprov/internal/metrics"
	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// hostTally keeps a baremetal.Tally of every cached host from the cache's
// informers: a host's event sets where that one host stands, and an edit of
// what decides where a namespace's hosts stand (templates, data templates,
// what references a Metal3MachineTemplate) recounts that namespace. It runs
// on every replica, so a newly elected leader reports every host at once;
// the hosts metric and the template status read it.
type hostTally struct {
	cache     cache.Cache
	reader    client.Reader
	standings *baremetal.Standings
	tally     *baremetal.Tally
	// controlPlanes: KubeadmControlPlanes are served, and may reference
	// Metal3MachineTemplates.
	controlPlanes bool
	elected       <-chan struct{}

	// counting makes each host's standing and its Set one step, so a
	// standing computed before a template's edit never lands after the
	// recount that edit brings.
	counting sync.Mutex

	mu sync.Mutex
	// hosts is the host informer's registration, once made: it has synced
	// when every host of the initial list is in the tally.
	hosts toolscache.ResourceEventHandlerRegistration
	// templateStatus is the template status controller's queue, once it
	// runs (while this manager leads).
	templateStatus workqueue.TypedRateLimitingInterface[reconcile.Request]
}

func newHostTally(c cache.Cache, reader client.Reader, templates *baremetal.Templates, controlPlanes bool, elected <-chan struct{}) *hostTally {
	return &hostTally{
		cache: c, reader: reader, tally: baremetal.NewTally(), controlPlanes: controlPlanes, elected: elected,
		standings: &baremetal.Standings{Reader: reader, Templates: templates},
	}
}

// NeedLeaderElection is false: standby replicas keep their tally too.
func (h *hostTally) NeedLeaderElection() bool { return false }

// Start registers the handlers once the cache has synced, those of what
// decides where hosts stand first: then a host of the initial list is
// counted against templates that are all there.
func (h *hostTally) Start(ctx context.Context) error {
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithName("host-tally"))
	if !h.cache.WaitForCacheSync(ctx) {
		return nil // stopped before the cache synced
	}
	for _, obj := range h.standingInputs() {
		informer, err := h.cache.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("watching %T for the host tally: %w", obj, err)
		}
		if _, err = informer.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
			// The hosts are counted after the initial list, against it.
			AddFunc: func(obj any, isInInitialList bool) {
				if !isInInitialList {
					h.recount(ctx, obj)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				if specOrAnnotationsChanged(oldObj, newObj) {
					h.recount(ctx, newObj)
				}
			},
			DeleteFunc: func(obj any) { h.recount(ctx, obj) },
		}); err != nil {
			return fmt.Errorf("watching %T for the host tally: %w", obj, err)
		}
	}
	informer, err := h.cache.GetInformer(ctx, &bmov1alpha1.BareMetalHost{})
	if err != nil {
		return fmt.Errorf("watching BareMetalHosts for the host tally: %w", err)
	}
	registration, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { h.hostChanged(ctx, obj) },
		UpdateFunc: func(oldObj, newObj any) {
			if hostStandingInputChanged(oldObj, newObj) {
				h.hostChanged(ctx, newObj)
			}
		},
		DeleteFunc: func(obj any) { h.hostDeleted(ctx, obj) },
	})
	if err != nil {
		return fmt.Errorf("watching BareMetalHosts for the host tally: %w", err)
	}
	h.mu.Lock()
	h.hosts = registration
	h.mu.Unlock()
	<-ctx.Done()
	return nil
}

// standingInputs are the kinds, beside the hosts, that Standings reads.
func (h *hostTally) standingInputs() []client.Object {
	inputs := []client.Object{
		&preprovv1.Metal3PreprovisioningTemplate{}, &capm3.Metal3MachineTemplate{}, &capm3.Metal3DataTemplate{},
		&clusterv1.MachineDeployment{},
	}
	if h.controlPlanes {
		inputs = append(inputs, &controlplane.KubeadmControlPlane{})
	}
	return inputs
}

// synced is true once every host of the initial list is counted.
func (h *hostTally) synced() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hosts != nil && h.hosts.HasSynced()
}

// waitForSync waits until every host of the initial list is counted.
func (h *hostTally) waitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), h.synced) {
		return fmt.Errorf("waiting for the host tally: %w", ctx.Err())
	}
	return nil
}

// CountHosts is the hosts metric: nothing while this manager does not lead
// (the leader reports the same hosts) or has not counted them all yet.
func (h *hostTally) CountHosts() map[metrics.HostGroup]int {
	select {
	case <-h.elected:
	default:
		return nil
	}
	if !h.synced() {
		return nil
	}
	return h.tally.Groups()
}

// templateStatusSource hands the template status controller's queue to the
// tally, which adds the templates whose counts a host moved.
func (h *hostTally) templateStatusSource() source.Source {
	return source.Func(func(_ context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.templateStatus = queue
		return nil
	})
}

func (h *hostTally) hostChanged(ctx context.Context, obj any) {
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok {
		ctrl.LoggerFrom(ctx).Error(fmt.Errorf("unexpected %T", obj), "Counting a BareMetalHost")
		return
	}
	h.counting.Lock()
	defer h.counting.Unlock()
	outcome, err := h.standings.OfHost(ctx, host)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Counting a BareMetalHost", "BareMetalHost", client.ObjectKeyFromObject(host))
		return
	}
	h.enqueue(ctx, host, h.tally.Set(client.ObjectKeyFromObject(host), outcome))
}

func (h *hostTally) hostDeleted(ctx context.Context, obj any) {
	host, ok := unwrapDeleted(obj)
	if !ok {
		ctrl.LoggerFrom(ctx).Error(fmt.Errorf("unexpected %T", obj), "Uncounting a deleted BareMetalHost")
		return
	}
	h.counting.Lock()
	defer h.counting.Unlock()
	h.enqueue(ctx, host, h.tally.Remove(client.ObjectKeyFromObject(host)))
}

// recount sets again where the counted hosts of an object's namespace stand.
func (h *hostTally) recount(ctx context.Context, obj any) {
	input, ok := unwrapDeleted(obj)
	if !ok {
		ctrl.LoggerFrom(ctx).Error(fmt.Errorf("unexpected %T", obj), "Recounting the hosts of a namespace")
		return
	}
	h.counting.Lock()
	defer h.counting.Unlock()
	if err := h.standings.EachOfNamespace(ctx, input.GetNamespace(), func(host *bmov1alpha1.BareMetalHost, outcome baremetal.Outcome) {
		// A host not counted yet is counted by its own event.
		if key := client.ObjectKeyFromObject(host); h.tally.Has(key) {
			h.enqueue(ctx, host, h.tally.Set(key, outcome))
		}
	}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Recounting the hosts of a namespace", "namespace", input.GetNamespace())
	}
}

// enqueue adds the Metal3PreprovisioningTemplates among changed, whose
// counts host moved, to the template status controller's queue, once it
// runs, unless Cluster API pauses them. A host clusterctl moves (or Cluster
// API pauses) wakes no template: the template moves with it, and its status
// is written on the target.
func (h *hostTally) enqueue(ctx context.Context, host client.Object, changed []baremetal.TemplateKey) {
	if ownership.PausedOrMoving(host) {
		return
	}
	h.mu.Lock()
	queue := h.templateStatus
	h.mu.Unlock()
	if queue == nil {
		return
	}
	for _, key := range changed {
		if key.Ref.Kind != preprovv1.KindPreprovisioningTemplate {
			continue
		}
		name := types.NamespacedName{Namespace: key.Namespace, Name: key.Ref.Name}
		template := &preprovv1.Metal3PreprovisioningTemplate{}
		if err := h.reader.Get(ctx, name, template); err != nil {
			if !apierrors.IsNotFound(err) { // a deleted template has no status
				ctrl.LoggerFrom(ctx).Error(err, "Reading a Metal3PreprovisioningTemplate whose hosts moved", "Metal3PreprovisioningTemplate", name)
			}
			continue
		}
		if !ownership.PausedOrMoving(template) { // a paused one is left alone
			queue.Add(reconcile.Request{NamespacedName: name})
		}
	}
}

// unwrapDeleted returns the object of an event, the last known state of one
// deleted while the watch was down included.
func unwrapDeleted(obj any) (client.Object, bool) {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	object, ok := obj.(client.Object)
	return object, ok
}

// specOrAnnotationsChanged: what decides where hosts stand is in the spec
// (the generation counts its edits) and the annotations (a template's opt-in).
func specOrAnnotationsChanged(oldObj, newObj any) bool {
	oldObject, oldOK := oldObj.(client.Object)
	newObject, newOK := newObj.(client.Object)
	return !oldOK || !newOK || oldObject.GetGeneration() != newObject.GetGeneration() ||
		!maps.Equal(oldObject.GetAnnotations(), newObject.GetAnnotations())
}

// hostStandingInputChanged: where a host stands depends on its labels,
// annotations (our pause, the template it was set up from, its problem),
// deletion and BMC address.
func hostStandingInputChanged(oldObj, newObj any) bool {
	oldHost, oldOK := oldObj.(*bmov1alpha1.BareMetalHost)
	newHost, newOK := newObj.(*bmov1alpha1.BareMetalHost)
	return !oldOK || !newOK || !maps.Equal(oldHost.Labels, newHost.Labels) || !maps.Equal(oldHost.Annotations, newHost.Annotations) ||
		!oldHost.DeletionTimestamp.Equal(newHost.DeletionTimestamp) || oldHost.Spec.BMC.Address != newHost.Spec.BMC.Address
}
