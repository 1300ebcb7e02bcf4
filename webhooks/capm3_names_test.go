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

package webhooks

import (
	"context"
	"sync"
	"testing"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	capm3 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// warningsRecorder keeps the warnings the API server returns.
type warningsRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningsRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// A template that selects a host named like a Metal3Data of a
// Metal3DataTemplate of its namespace ("<datatemplate>-<n>") is accepted with
// a warning: CAPM3 would meet that host's claims with another host's.
func TestTemplateSelectingAHostNamedLikeAMetal3DataIsWarned(t *testing.T) {
	ctx := context.Background()
	c := apiClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-names-"}}
	require.NoError(t, c.Create(ctx, ns))
	template := createNamedLikeDataFixtures(t, ns.Name)

	// The webhook reads the manager's cache: wait until it has the hosts.
	waitForWarnings(t, func(warned client.Client) error { return warned.Create(ctx, template.DeepCopy(), client.DryRunAll) }, 1)
	warnings := warningsOf(t, func(warned client.Client) error { return warned.Create(ctx, template) })
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], `BareMetalHost "pooled-3", which this template selects, is named like a Metal3Data of Metal3DataTemplate "pooled"`)
	assert.Contains(t, warnings[0], "rename the host")
}

// createNamedLikeDataFixtures creates a Metal3DataTemplate "pooled" and two
// hosts of rack r1, "pooled-3" and "rack-r1-node-7", and returns a template
// (not created) selecting them.
func createNamedLikeDataFixtures(t *testing.T, namespace string) *preprovv1.Metal3PreprovisioningTemplate {
	t.Helper()
	racked := map[string]string{"rack": "r1"}
	for _, obj := range []client.Object{
		&capm3.Metal3DataTemplate{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pooled"},
			Spec:       capm3.Metal3DataTemplateSpec{ClusterName: "preprov"},
		},
		&bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "pooled-3", Labels: racked}},
		&bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "rack-r1-node-7", Labels: racked}},
	} {
		require.NoError(t, k8sClient.Create(context.Background(), obj))
	}
	return &preprovv1.Metal3PreprovisioningTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "rack-r1"},
		Spec: preprovv1.Metal3PreprovisioningTemplateSpec{
			HostSelector:    capm3.HostSelector{MatchLabels: racked},
			DataTemplateRef: &corev1.LocalObjectReference{Name: "pooled"},
		},
	}
}

// warningsOf runs write with a client that keeps the API server's warnings,
// requires it to succeed and returns the warnings.
func warningsOf(t require.TestingT, write func(warned client.Client) error) []string {
	recorder := &warningsRecorder{}
	config := rest.CopyConfig(restConfig)
	config.WarningHandler = recorder
	warned, err := client.New(config, client.Options{Scheme: k8sClient.Scheme()})
	require.NoError(t, err)
	require.NoError(t, write(warned))
	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	return recorder.warnings
}

// waitForWarnings waits until write (a dry run) gets n warnings.
func waitForWarnings(t *testing.T, write func(warned client.Client) error, n int) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, warningsOf(c, write), n)
	}, 30*time.Second, 100*time.Millisecond)
}
