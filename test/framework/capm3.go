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

package framework

import (
	"context"
	"fmt"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProvisionAsCAPM3 creates what CAPM3 creates when a Machine takes a host,
// in its order: the Metal3Machine annotated with the host, the host's
// consumerRef, a Metal3DataClaim named like the Metal3Machine, and the
// Metal3Data of dataTemplate that answers it, which it returns as created.
func ProvisionAsCAPM3(ctx context.Context, c client.Client, namespace, hostName, machineName, dataName, dataTemplate string) (*capm3.Metal3Data, error) {
	template := &capm3.Metal3ObjectRef{Name: dataTemplate}
	machine := &capm3.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: machineName,
			Annotations: map[string]string{"metal3.io/BareMetalHost": namespace + "/" + hostName},
		},
		Spec: capm3.Metal3MachineSpec{DataTemplate: template},
	}
	if err := c.Create(ctx, machine); err != nil {
		return nil, fmt.Errorf("creating Metal3Machine %s: %w", machineName, err)
	}
	// A merge patch of the consumerRef alone: CAPM3 patches the host it
	// chose without caring what else changed on it.
	original := &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: hostName}}
	consumed := original.DeepCopy()
	consumed.Spec.ConsumerRef = &corev1.ObjectReference{
		APIVersion: capm3.GroupVersion.String(), Kind: "Metal3Machine", Namespace: namespace, Name: machineName,
	}
	if err := c.Patch(ctx, consumed, client.MergeFrom(original)); err != nil {
		return nil, fmt.Errorf("setting the consumerRef of BareMetalHost %s: %w", hostName, err)
	}
	claim := &capm3.Metal3DataClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: machineName},
		Spec:       capm3.Metal3DataClaimSpec{Template: template},
	}
	if err := c.Create(ctx, claim); err != nil {
		return nil, fmt.Errorf("creating Metal3DataClaim %s: %w", machineName, err)
	}
	data := &capm3.Metal3Data{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: dataName},
		Spec:       capm3.Metal3DataSpec{Index: new(int32), Claim: &capm3.Metal3ObjectRef{Name: machineName}, Template: template},
	}
	if err := c.Create(ctx, data); err != nil {
		return nil, fmt.Errorf("creating Metal3Data %s: %w", dataName, err)
	}
	return data, NameRenderedData(ctx, c, claim, dataName)
}

// NameRenderedData points a Metal3DataClaim's status.renderedData at its
// Metal3Data, as CAPM3's DataTemplateManager.createData does once the
// Metal3Data exists.
func NameRenderedData(ctx context.Context, c client.Client, claim *capm3.Metal3DataClaim, dataName string) error {
	original := claim.DeepCopy()
	claim.Status.RenderedData = &capm3.Metal3ObjectRef{Name: dataName}
	if err := c.Status().Patch(ctx, claim, client.MergeFrom(original)); err != nil {
		return fmt.Errorf("setting status.renderedData of Metal3DataClaim %s: %w", claim.Name, err)
	}
	return nil
}
