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
	"encoding/base64"
	"fmt"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// fieldOwner is the suite's server-side apply field manager.
const fieldOwner = "capm3-preprov-e2e"

// needsPods are the kinds of config/default that only make sense with pods
// and cert-manager: nothing runs pods here, the manager runs as a process
// and the suite issues the webhook's serving certificate itself.
var needsPods = map[string]bool{"Deployment": true, "Service": true, "Certificate": true, "Issuer": true}

// installDefaultConfig installs what users get from config/default: our CRD
// (already there: applied anyway, it must apply cleanly), the Namespace,
// ServiceAccount, RBAC and the webhook configurations, pointed at the local
// manager's webhook server with the suite's CA.
func installDefaultConfig(ctx context.Context, c client.Client, artifactFolder string, webhookPort int, caPEM []byte) error {
	objects, err := framework.KustomizeBuild(ctx, "default", filepath.Join(artifactFolder, "config-default.yaml"))
	if err != nil {
		return err
	}
	var installed []*unstructured.Unstructured
	for _, obj := range objects {
		switch {
		case needsPods[obj.GetKind()]:
			continue
		case obj.GetKind() == "ValidatingWebhookConfiguration" || obj.GetKind() == "MutatingWebhookConfiguration":
			if err := pointWebhooksAt(obj, webhookPort, caPEM); err != nil {
				return err
			}
		}
		installed = append(installed, obj)
	}
	return applyObjects(ctx, c, installed)
}

// pointWebhooksAt replaces each webhook's Service by the URL of a webhook
// server on 127.0.0.1 (same path) and sets the CA that signed its
// certificate, which cert-manager would inject in a cluster.
func pointWebhooksAt(obj *unstructured.Unstructured, port int, caPEM []byte) error {
	webhooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
	if err != nil {
		return err
	}
	for i, item := range webhooks {
		webhook, ok := item.(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: webhook %d is not an object", obj.GetKind(), obj.GetName(), i)
		}
		path, found, err := unstructured.NestedString(webhook, "clientConfig", "service", "path")
		if err != nil || !found {
			return fmt.Errorf("%s %s: webhook %d has no clientConfig.service.path", obj.GetKind(), obj.GetName(), i)
		}
		webhook["clientConfig"] = map[string]any{
			"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, path),
			"caBundle": base64.StdEncoding.EncodeToString(caPEM),
		}
	}
	return unstructured.SetNestedSlice(obj.Object, webhooks, "webhooks")
}

// applyObjects server-side applies objects, as kubectl apply --server-side
// would.
func applyObjects(ctx context.Context, c client.Client, objects []*unstructured.Unstructured) error {
	for _, obj := range objects {
		obj.SetResourceVersion("")
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}
