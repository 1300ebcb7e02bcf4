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
	"errors"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/baremetal"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io,resources=metal3preprovisioningtemplates/status,verbs=get;update;patch

// TemplateStatusReconciler keeps the status of Metal3PreprovisioningTemplates:
// the counts of their hosts by phase and their conditions, computed from the
// hosts, so a restarted or newly elected manager writes them right at once.
type TemplateStatusReconciler struct {
	Client    client.Client
	Templates *baremetal.Templates
	// Hosts counts each template's hosts, from the cached hosts.
	Hosts *hostTally
	// Recorder reports invalid templates.
	Recorder events.EventRecorder
}

// Reconcile recomputes one template's status.
func (r *TemplateStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	m3ppt := &preprovv1.Metal3PreprovisioningTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, m3ppt); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	helper, err := patch.NewHelper(m3ppt, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	defer func() {
		patchErr := helper.Patch(ctx, m3ppt, patch.WithOwnedConditions{Conditions: []string{
			preprovv1.ReadyCondition, preprovv1.NetworkDataUpToDateCondition,
		}})
		reterr = errors.Join(reterr, client.IgnoreNotFound(patchErr))
	}()

	// A manager that has just started counts every host first.
	if err = r.Hosts.waitForSync(ctx); err != nil {
		return ctrl.Result{}, err
	}
	view := template.FromPreprovisioningTemplate(m3ppt)
	counts := r.Hosts.tally.OfTemplate(m3ppt.Namespace, view.Ref)
	m3ppt.Status.ObservedGeneration = m3ppt.Generation
	m3ppt.Status.MatchedHosts = ptr.To(counts.Matched)
	m3ppt.Status.ReadyHosts = ptr.To(counts.Ready)
	m3ppt.Status.WaitingHosts = ptr.To(counts.Waiting)
	m3ppt.Status.FailedHosts = ptr.To(counts.Failed)
	m3ppt.Status.ConflictingHosts = ptr.To(counts.Conflicting)
	m3ppt.Status.OrphanedHosts = ptr.To(counts.Orphaned)
	m3ppt.Status.StalledHosts = ptr.To(counts.Stalled)

	problem, err := r.Templates.Problem(ctx, m3ppt.Namespace, view)
	if err != nil {
		return ctrl.Result{}, err
	}
	r.reportInvalid(m3ppt, problem)
	conditions.Set(m3ppt, baremetal.ReadyCondition(counts, problem))
	conditions.Set(m3ppt, baremetal.UpToDateCondition(counts))
	return ctrl.Result{}, nil
}

// reportInvalid emits a Warning event when a template becomes invalid or its
// problem changes, not on every reconcile: the Ready condition it replaces
// says what was reported last.
func (r *TemplateStatusReconciler) reportInvalid(template *preprovv1.Metal3PreprovisioningTemplate, problem string) {
	if problem == "" {
		return
	}
	if last := conditions.Get(template, preprovv1.ReadyCondition); last != nil && last.Reason == preprovv1.InvalidTemplateReason && last.Message == problem {
		return
	}
	r.Recorder.Eventf(template, nil, corev1.EventTypeWarning, baremetal.ReasonTemplateInvalid, baremetal.EventAction, "%s",
		baremetal.EventNote(problem, nil))
}

// SetupWithManager watches our templates, the data templates they name,
// the host tally (which adds a template when a host moves in or out of its
// counts) and the other templates of the namespace (which may start or stop
// selecting the same hosts). Status updates of the templates are watched
// too: the status patch is computed against the cached template, and when
// the cache was behind an earlier write the patch leaves out a field that
// looked unchanged; the next reconcile, on a fresh copy, puts it right, and
// otherwise writes nothing. Every watch goes through the controller's
// queue, so a burst of host changes never holds up the host controller.
func (r *TemplateStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	templateChanged := predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	return ctrl.NewControllerManagedBy(mgr).
		Named("metal3preprovisioningtemplate").
		For(&preprovv1.Metal3PreprovisioningTemplate{}).
		WithEventFilter(notPausedOrMoving).
		Watches(&capm3.Metal3DataTemplate{}, handler.EnqueueRequestsFromMapFunc(r.templatesNaming)).
		WatchesRawSource(r.Hosts.templateStatusSource()).
		Watches(&preprovv1.Metal3PreprovisioningTemplate{}, handler.EnqueueRequestsFromMapFunc(r.templatesOfNamespace),
			builder.WithPredicates(notInInitialList, templateChanged)).
		Watches(&capm3.Metal3MachineTemplate{}, handler.EnqueueRequestsFromMapFunc(r.templatesOfNamespace),
			builder.WithPredicates(notInInitialList, templateChanged)).
		Complete(r)
}

// templatesOfNamespace maps a template to every Metal3PreprovisioningTemplate
// of its namespace: a template that starts or stops selecting a host can put
// it in or out of conflict with the others.
func (r *TemplateStatusReconciler) templatesOfNamespace(ctx context.Context, obj client.Object) []reconcile.Request {
	templates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := r.Client.List(ctx, templates, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Metal3PreprovisioningTemplates of a namespace")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(templates.Items))
	for i := range templates.Items {
		requests = append(requests, requestFor(&templates.Items[i]))
	}
	return requests
}

func (r *TemplateStatusReconciler) templatesNaming(ctx context.Context, dataTemplate client.Object) []reconcile.Request {
	templates := &preprovv1.Metal3PreprovisioningTemplateList{}
	if err := r.Client.List(ctx, templates, client.InNamespace(dataTemplate.GetNamespace()),
		client.MatchingFields{index.DataTemplateField: dataTemplate.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the Metal3PreprovisioningTemplates of a Metal3DataTemplate")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(templates.Items))
	for i := range templates.Items {
		requests = append(requests, requestFor(&templates.Items[i]))
	}
	return requests
}
