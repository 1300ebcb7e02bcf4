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
	"os"
	"path/filepath"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
)

// ApplyExamples applies folder's namespace.yaml, then each of its example
// folders in turn, as make run does.
func ApplyExamples(ctx context.Context, c client.Client, folder string) error {
	paths := []string{filepath.Join(folder, "namespace.yaml")}
	entries, err := os.ReadDir(folder)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if entry.IsDir() {
			paths = append(paths, filepath.Join(folder, entry.Name()))
		}
	}
	_, err = ApplyFiles(ctx, c, paths...)
	return err
}

// WaitForHostsSettled waits until no host is left paused for
// preprovisioning, or timeout has passed: a host with bad input stays
// paused, and says why in its events. It returns only ctx's error.
func WaitForHostsSettled(ctx context.Context, c client.Client, timeout time.Duration) error {
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_ = wait.PollUntilContextCancel(waitCtx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		hosts := &bmov1alpha1.BareMetalHostList{}
		if err := c.List(ctx, hosts); err != nil {
			return false, nil //nolint:nilerr // keep waiting through API hiccups
		}
		for _, host := range hosts.Items {
			if host.Annotations[preprovv1.PausedAnnotation] == preprovv1.PausedForPreprovisioning {
				return false, nil
			}
		}
		return true, nil
	})
	return ctx.Err()
}
