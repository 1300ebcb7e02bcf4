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
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework/fixtures"
)

// The auto-pause webhook is installed as config/webhook builds it, with its
// namespaceSelector, so these tests also check which namespaces it serves.

func TestAutoPauseOnCreate(t *testing.T) {
	tests := []struct {
		name           string
		namespaceLabel string // "" leaves the namespace without the label
		annotations    map[string]string
		networkData    string
		want           map[string]string
	}{
		{
			name:           "a host without annotations is paused for us",
			namespaceLabel: preprovv1.AutoPauseLabelValue,
			want:           map[string]string{preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning},
		},
		{
			name:           "a host with other annotations is paused for us and keeps them",
			namespaceLabel: preprovv1.AutoPauseLabelValue,
			annotations:    map[string]string{"example.com/rack": "r1"},
			want:           map[string]string{"example.com/rack": "r1", preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning},
		},
		{
			name:           "a host paused by someone else keeps that pause",
			namespaceLabel: preprovv1.AutoPauseLabelValue,
			annotations:    map[string]string{preprovv1.PausedAnnotation: "metal3.io/capm3"},
			want:           map[string]string{preprovv1.PausedAnnotation: "metal3.io/capm3"},
		},
		{
			name:           "a host paused with an empty value keeps it",
			namespaceLabel: preprovv1.AutoPauseLabelValue,
			annotations:    map[string]string{preprovv1.PausedAnnotation: ""},
			want:           map[string]string{preprovv1.PausedAnnotation: ""},
		},
		{
			name:           "a host with pre-provisioning network data is not paused",
			namespaceLabel: preprovv1.AutoPauseLabelValue,
			networkData:    "host-networkdata",
		},
		{
			name: "a host in a namespace without the label is not paused",
		},
		{
			name:           "a host in a namespace labelled false is not paused",
			namespaceLabel: "false",
		},
	}
	c := apiClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			namespace := autoPauseNamespace(t, c, tt.namespaceLabel)
			host := fixtures.Host(namespace, "host", "52:54:00:00:10:01", nil)
			host.Annotations = tt.annotations
			host.Spec.PreprovisioningNetworkDataName = tt.networkData
			require.NoError(t, c.Create(ctx, host))

			got := &bmov1alpha1.BareMetalHost{}
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(host), got))
			assert.Equal(t, tt.want, got.Annotations)
			assert.Equal(t, tt.networkData, got.Spec.PreprovisioningNetworkDataName)
		})
	}
}

// A dry run shows the pause too: the webhook declares no side effects, so
// the API server calls it on dry runs (kubectl apply --dry-run=server).
func TestAutoPauseOnDryRun(t *testing.T) {
	c := apiClient(t)
	host := fixtures.Host(autoPauseNamespace(t, c, preprovv1.AutoPauseLabelValue), "host", "52:54:00:00:10:02", nil)
	host.Annotations = nil
	require.NoError(t, c.Create(context.Background(), host, client.DryRunAll))
	assert.Equal(t, map[string]string{preprovv1.PausedAnnotation: preprovv1.PausedForPreprovisioning}, host.Annotations)
}

// Only a create is paused: our controller removes our pause from a host being
// deleted (and users remove theirs) with an update, which must stick.
func TestAutoPauseLeavesUpdatesAlone(t *testing.T) {
	ctx := context.Background()
	c := apiClient(t)
	host := fixtures.Host(autoPauseNamespace(t, c, preprovv1.AutoPauseLabelValue), "host", "52:54:00:00:10:03", nil)
	host.Annotations = nil
	require.NoError(t, c.Create(ctx, host))
	require.Equal(t, preprovv1.PausedForPreprovisioning, host.Annotations[preprovv1.PausedAnnotation])

	delete(host.Annotations, preprovv1.PausedAnnotation)
	require.NoError(t, c.Update(ctx, host))
	got := &bmov1alpha1.BareMetalHost{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(host), got))
	assert.NotContains(t, got.Annotations, preprovv1.PausedAnnotation)
}

// autoPauseNamespace creates a namespace with the auto-pause label set to
// value, or without it when value is empty.
func autoPauseNamespace(t *testing.T, c client.Client, value string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "auto-pause-"}}
	if value != "" {
		ns.Labels = map[string]string{preprovv1.AutoPauseLabel: value}
	}
	require.NoError(t, c.Create(context.Background(), ns))
	return ns.Name
}
