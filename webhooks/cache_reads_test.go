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
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Creates, updates and their server-side dry runs read no BareMetalHost and
// no Metal3DataTemplate from the API server: the webhook reads the manager's
// cache, which its watches keep. Each still warns as before.
func TestTemplateWebhookReadsNoHostsFromTheAPIServer(t *testing.T) {
	ctx := context.Background()
	c := apiClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-reads-"}}
	require.NoError(t, c.Create(ctx, ns))
	template := createNamedLikeDataFixtures(t, ns.Name)
	// The first request may start the cache's watches; later ones use them.
	waitForWarnings(t, func(warned client.Client) error { return warned.Create(ctx, template.DeepCopy(), client.DryRunAll) }, 1)

	managerReads.reset()
	writes := map[string]func(warned client.Client) error{
		"dry-run create": func(warned client.Client) error { return warned.Create(ctx, template.DeepCopy(), client.DryRunAll) },
		"create":         func(warned client.Client) error { return warned.Create(ctx, template) },
		"dry-run update": func(warned client.Client) error { return warned.Update(ctx, template.DeepCopy(), client.DryRunAll) },
		"update":         func(warned client.Client) error { return warned.Update(ctx, template) },
	}
	for _, name := range []string{"dry-run create", "create", "dry-run update", "update"} {
		assert.Len(t, warningsOf(t, writes[name]), 1, name)
	}
	assert.Empty(t, managerReads.of("baremetalhosts"), "BareMetalHosts read from the API server")
	assert.Empty(t, managerReads.of("metal3datatemplates"), "Metal3DataTemplates read from the API server")
}

// apiReads records the gets and lists (not the watches) a client sends.
type apiReads struct {
	mu   sync.Mutex
	urls []string
}

func (r *apiReads) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(request *http.Request) (*http.Response, error) {
		if request.Method == http.MethodGet && request.URL.Query().Get("watch") != "true" {
			r.mu.Lock()
			r.urls = append(r.urls, request.URL.Path)
			r.mu.Unlock()
		}
		return next.RoundTrip(request)
	})
}

// of lists the paths read of a resource.
func (r *apiReads) of(resource string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var paths []string
	for _, path := range r.urls {
		if strings.Contains(path, "/"+resource) {
			paths = append(paths, path)
		}
	}
	return paths
}

func (r *apiReads) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.urls = nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(request *http.Request) (*http.Response, error) { return f(request) }
