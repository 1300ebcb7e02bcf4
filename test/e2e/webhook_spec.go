//go:build e2e

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

package e2e

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// validatingWebhook is the name of our validating webhook in the webhook
// configuration, which the API server quotes when it refuses a request.
const validatingWebhook = "validation.metal3preprovisioningtemplate.infrastructure.cluster.x-k8s.io"

// WebhookSpec: the API server calls the manager's webhooks as installed, so
// an invalid Metal3PreprovisioningTemplate is refused when it is written,
// and a valid one is defaulted.
func WebhookSpec(ctx context.Context, inputGetter func() SpecInput) {
	var (
		input     SpecInput
		namespace string
	)
	BeforeEach(func() {
		input = inputGetter()
		Expect(input.Cluster).NotTo(BeNil())
		namespace = input.Cluster.createNamespace(ctx, "webhook")
	})

	It("refuses an invalid Metal3PreprovisioningTemplate with every problem, and defaults a valid one", func() {
		c := input.Cluster
		By("Creating a template with an empty selector and two network data sources")
		invalid := fixtures.PreprovisioningTemplate(namespace, "invalid", nil, fixtures.StaticNetworkData())
		invalid.Spec.DataTemplateRef = &corev1.LocalObjectReference{Name: "workers"}
		err := c.Client.Create(ctx, invalid)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "expected an Invalid error, got %v", err)
		Expect(err.Error()).To(SatisfyAll(
			ContainSubstring(`admission webhook %q denied the request`, validatingWebhook),
			ContainSubstring("spec.hostSelector"),
			ContainSubstring("spec.dataTemplateRef"),
		))
		Expect(apierrors.IsNotFound(c.Client.Get(ctx, client.ObjectKeyFromObject(invalid), invalid))).To(BeTrue())

		By("Creating a valid template with an empty provisionedHostPolicy, as templating tools render an unset value")
		valid := fixtures.PreprovisioningTemplate(namespace, "valid", map[string]string{"rack": "r1"}, fixtures.StaticNetworkData())
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(valid)
		Expect(err).NotTo(HaveOccurred())
		unstructuredValid := &unstructured.Unstructured{Object: content}
		unstructuredValid.SetAPIVersion(preprovv1.GroupVersion.String())
		unstructuredValid.SetKind("Metal3PreprovisioningTemplate")
		Expect(unstructured.SetNestedField(unstructuredValid.Object, "", "spec", "provisionedHostPolicy")).To(Succeed())
		Expect(c.Client.Create(ctx, unstructuredValid)).To(Succeed())
		Expect(c.Client.Get(ctx, client.ObjectKeyFromObject(valid), valid)).To(Succeed())
		Expect(valid.Spec.ProvisionedHostPolicy).To(Equal(preprovv1.ProvisionedHostReportDrift))
	})
}
