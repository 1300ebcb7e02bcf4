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
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// NetworkData reads the network data document we rendered for a host, from
// its Secret <host>-preprov-networkdata, decoded.
func NetworkData(ctx context.Context, c client.Reader, namespace, host string) (map[string]any, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: namespace, Name: host + preprovv1.NetworkDataSecretSuffix}
	if err := c.Get(ctx, key, secret); err != nil {
		return nil, err
	}
	var document map[string]any
	if err := json.Unmarshal(secret.Data[preprovv1.NetworkDataKey], &document); err != nil {
		return nil, fmt.Errorf("decoding the network data of Secret %s: %w", key, err)
	}
	return document, nil
}
