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

// Package webhooks holds the admission webhooks of Metal3PreprovisioningTemplate:
// a template is refused when it is written, with every problem and its fix,
// instead of being reported later on the hosts it selects; and the opt-in
// webhook that pauses new BareMetalHosts for preprovisioning.
//
// Layer: beside controllers; it imports only api/v1beta1, template and the
// internal/index leaf, never the host manager.
package webhooks

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/internal/index"
	"github.com/capm3-preprov/capm3-preprov/template"
)

// +kubebuilder:webhook:path=/validate-infrastructure-cluster-x-k8s-io-v1beta1-metal3preprovisioningtemplate,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.cluster.x-k8s.io,resources=metal3preprovisioningtemplates,verbs=create;update,versions=v1beta1,name=validation.metal3preprovisioningtemplate.infrastructure.cluster.x-k8s.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/mutate-infrastructure-cluster-x-k8s-io-v1beta1-metal3preprovisioningtemplate,mutating=true,failurePolicy=fail,sideEffects=None,groups=infrastructure.cluster.x-k8s.io,resources=metal3preprovisioningtemplates,verbs=create;update,versions=v1beta1,name=default.metal3preprovisioningtemplate.infrastructure.cluster.x-k8s.io,admissionReviewVersions=v1

// SetupWebhooksWithManager registers the defaulting and validating webhooks
// of Metal3PreprovisioningTemplate and the BareMetalHost auto-pause webhook
// with the manager's webhook server, and the cache index they read.
func SetupWebhooksWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := index.RegisterHostNameStem(ctx, mgr.GetFieldIndexer()); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(autoPausePath, &webhook.Admission{Handler: autoPauser{decoder: admission.NewDecoder(mgr.GetScheme())}})
	return ctrl.NewWebhookManagedBy(mgr, &preprovv1.Metal3PreprovisioningTemplate{}).
		WithDefaulter(templateDefaulter{}).
		WithValidator(templateValidator{reader: mgr.GetClient()}).
		Complete()
}

var templateGroupKind = schema.GroupKind{Group: preprovv1.GroupVersion.Group, Kind: preprovv1.KindPreprovisioningTemplate}

// templateValidator refuses a template the controller could not use, or that
// would select every host of its namespace, and warns about hosts whose
// names meet CAPM3's.
type templateValidator struct {
	// reader is the manager's cache: the webhook runs in the manager.
	reader client.Reader
}

var _ admission.Validator[*preprovv1.Metal3PreprovisioningTemplate] = templateValidator{}

func (v templateValidator) ValidateCreate(ctx context.Context, m3ppt *preprovv1.Metal3PreprovisioningTemplate) (admission.Warnings, error) {
	if err := validate(m3ppt); err != nil {
		return nil, err
	}
	return v.capm3NameWarnings(ctx, m3ppt), nil
}

func (v templateValidator) ValidateUpdate(ctx context.Context, _, m3ppt *preprovv1.Metal3PreprovisioningTemplate) (admission.Warnings, error) {
	if err := validate(m3ppt); err != nil {
		return nil, err
	}
	return v.capm3NameWarnings(ctx, m3ppt), nil
}

// ValidateDelete is never called: the webhook is registered for create and
// update only, so a template can always be deleted.
func (templateValidator) ValidateDelete(context.Context, *preprovv1.Metal3PreprovisioningTemplate) (admission.Warnings, error) {
	return nil, nil
}

// validate returns every problem of the template as one Invalid error, so a
// user fixes them all in one go.
func validate(m3ppt *preprovv1.Metal3PreprovisioningTemplate) error {
	if errs := template.SpecErrors(&m3ppt.Spec); len(errs) > 0 {
		return apierrors.NewInvalid(templateGroupKind, m3ppt.Name, errs)
	}
	return nil
}

// templateDefaulter sets provisionedHostPolicy to ReportDrift, as the CRD
// default does. The CRD default only fills an absent field before admission;
// the webhook also turns an explicit "", which templating tools render for an
// unset value, into the default instead of letting the CRD enum refuse it.
type templateDefaulter struct{}

var _ admission.Defaulter[*preprovv1.Metal3PreprovisioningTemplate] = templateDefaulter{}

func (templateDefaulter) Default(_ context.Context, m3ppt *preprovv1.Metal3PreprovisioningTemplate) error {
	if m3ppt.Spec.ProvisionedHostPolicy == "" {
		m3ppt.Spec.ProvisionedHostPolicy = preprovv1.ProvisionedHostReportDrift
	}
	return nil
}
