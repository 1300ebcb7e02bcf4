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

// Package capm3webhook stands in for CAPM3's validating webhook of
// Metal3DataTemplate in the test control planes, where CAPM3 does not run.
// It does what CAPM3's does (internal/webhooks/v1beta2/metal3datatemplate_webhook.go
// of metal3-io/cluster-api-provider-metal3, Metal3DataTemplate.ValidateUpdate
// and Metal3DataTemplate.validate) and nothing more, so that a test cannot
// edit a Metal3DataTemplate's networkData or metaData where a real
// management cluster would refuse it.
package capm3webhook

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Path is CAPM3's path of the webhook.
const Path = "/validate-infrastructure-cluster-x-k8s-io-v1beta2-metal3datatemplate"

// Start serves the stand-in on a port of its own, with a certificate of its
// own, and installs its ValidatingWebhookConfiguration into the control plane
// at config. It returns once the API server calls it; done reports the
// server's end after ctx is cancelled.
func Start(ctx context.Context, config *rest.Config, scheme *k8sruntime.Scheme) (done <-chan error, err error) {
	// A WebhookInstallOptions of its own, apart from the control plane's, so
	// that it serves next to a manager's webhook server without sharing its
	// port: envtest picks a free one.
	install := &envtest.WebhookInstallOptions{
		LocalServingHost:   "127.0.0.1",
		ValidatingWebhooks: []*admissionregistrationv1.ValidatingWebhookConfiguration{configuration()},
	}
	if err := install.PrepWithoutInstalling(); err != nil {
		return nil, fmt.Errorf("preparing the CAPM3 Metal3DataTemplate webhook stand-in: %w", err)
	}
	server := webhook.NewServer(webhook.Options{
		Host: install.LocalServingHost, Port: install.LocalServingPort, CertDir: install.LocalServingCertDir,
	})
	server.Register(Path, admission.WithValidator[*capm3.Metal3DataTemplate](scheme, Validator{}))
	serverDone := make(chan error, 1)
	go func() {
		err := server.Start(ctx)
		serverDone <- errors.Join(err, install.Cleanup())
	}()
	if err := install.Install(config); err != nil {
		return nil, fmt.Errorf("installing the CAPM3 Metal3DataTemplate webhook stand-in: %w", err)
	}
	return serverDone, nil
}

// configuration is CAPM3's webhook marker for the validation of
// Metal3DataTemplate (create and update of v1beta2, failurePolicy Fail).
func configuration() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "capm3-metal3datatemplate-standin"},
		TypeMeta:   metav1.TypeMeta{Kind: "ValidatingWebhookConfiguration", APIVersion: "admissionregistration.k8s.io/v1"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "validation.metal3datatemplate.infrastructure.cluster.x-k8s.io",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Name: "capm3-webhook-service", Namespace: "capm3-system", Path: ptr.To(Path)},
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{capm3.GroupVersion.Group}, APIVersions: []string{capm3.GroupVersion.Version},
					Resources: []string{"metal3datatemplates"},
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1", "v1beta1"},
		}},
	}
}

// Validator is CAPM3's Metal3DataTemplate validator.
type Validator struct{}

var _ admission.Validator[*capm3.Metal3DataTemplate] = Validator{}

// ValidateCreate is CAPM3's ValidateCreate: validate.
func (Validator) ValidateCreate(_ context.Context, dataTemplate *capm3.Metal3DataTemplate) (admission.Warnings, error) {
	return nil, validate(dataTemplate)
}

// ValidateUpdate is CAPM3's ValidateUpdate: spec.metaData and
// spec.networkData cannot be modified. CAPM3 names the kind Metal3Data in
// this error; so does the stand-in.
func (Validator) ValidateUpdate(_ context.Context, oldDataTemplate, newDataTemplate *capm3.Metal3DataTemplate) (admission.Warnings, error) {
	if oldDataTemplate == nil {
		return nil, apierrors.NewInternalError(errors.New("unable to convert existing object"))
	}
	var errs field.ErrorList
	if !reflect.DeepEqual(newDataTemplate.Spec.MetaData, oldDataTemplate.Spec.MetaData) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "MetaData"), newDataTemplate.Spec.MetaData, "cannot be modified"))
	}
	if !reflect.DeepEqual(newDataTemplate.Spec.NetworkData, oldDataTemplate.Spec.NetworkData) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "NetworkData"), newDataTemplate.Spec.NetworkData, "cannot be modified"))
	}
	if len(errs) == 0 {
		return nil, nil
	}
	return nil, apierrors.NewInvalid(capm3.GroupVersion.WithKind("Metal3Data").GroupKind(), newDataTemplate.Name, errs)
}

// ValidateDelete allows every deletion, as CAPM3's does.
func (Validator) ValidateDelete(context.Context, *capm3.Metal3DataTemplate) (admission.Warnings, error) {
	return nil, nil
}

// validate is CAPM3's validate, on the pinned v1beta2 types, where
// fromPoolRef and fromPoolAnnotation are structs, networks and fromBootMAC
// pointers: a
// metaData host interface names exactly one of fromBootMAC and interface;
// each IPv4 and IPv6 network names a pool.
func validate(dataTemplate *capm3.Metal3DataTemplate) error {
	var errs field.ErrorList
	if dataTemplate.Spec.MetaData != nil {
		for i, hostInterface := range dataTemplate.Spec.MetaData.FromHostInterfaces {
			path := field.NewPath("spec", "metaData", "fromHostInterfaces", strconv.Itoa(i), "interface")
			fromBootMAC := ptr.Deref(hostInterface.FromBootMAC, false)
			if !fromBootMAC && hostInterface.Interface == "" {
				errs = append(errs, field.Required(path, "interface must be specified when fromBootMAC is false"))
			}
			if fromBootMAC && hostInterface.Interface != "" {
				errs = append(errs, field.Invalid(path, hostInterface.Interface, "interface must be empty when fromBootMAC is true"))
			}
		}
	}
	if networkData := dataTemplate.Spec.NetworkData; networkData != nil && networkData.Networks != nil {
		for i, network := range networkData.Networks.IPv4 {
			if network.FromPoolRef.Name == "" && network.IPAddressFromIPPool == "" && reflect.ValueOf(network.FromPoolAnnotation).IsZero() {
				errs = append(errs, field.Required(field.NewPath("spec", "networkData", "networks", "ipv4", strconv.Itoa(i), "fromPoolRef", "name"),
					"fromPoolRef needs to contain a reference to an IPPool"))
			}
		}
		for i, network := range networkData.Networks.IPv6 {
			if network.FromPoolRef.Name == "" && network.IPAddressFromIPPool == "" && reflect.ValueOf(network.FromPoolAnnotation).IsZero() {
				errs = append(errs, field.Required(field.NewPath("spec", "networkData", "networks", "ipv6", strconv.Itoa(i), "fromPoolRef", "name"),
					"fromPoolRef needs to contain a reference to an IPPool"))
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(capm3.GroupVersion.WithKind("Metal3DataTemplate").GroupKind(), dataTemplate.Name, errs)
}
