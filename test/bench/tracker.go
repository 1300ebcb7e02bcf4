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

package main

import (
	"context"
	"maps"
	"strings"
	"sync"
	"time"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	preprovv1 "github.com/capm3-preprov/capm3-preprov/api/v1beta1"
	"github.com/capm3-preprov/capm3-preprov/test/framework"
)

// tracker watches one namespace and notes when each host is done: unpaused,
// pointing at its Secret, and the Secret exists. It only watches, so it
// costs the API server nothing per host.
type tracker struct {
	mu        sync.Mutex
	expected  int
	unpaused  map[string]time.Time
	secret    map[string]time.Time
	done      map[string]time.Time
	allDone   chan struct{}
	lastDone  time.Time
	closeOnce sync.Once
}

// startTracker watches the namespace until ctx ends; it returns once its
// watches are established.
func startTracker(ctx context.Context, config *rest.Config, namespace string, expected int) (*tracker, error) {
	t := &tracker{
		expected: expected,
		unpaused: map[string]time.Time{}, secret: map[string]time.Time{}, done: map[string]time.Time{},
		allDone: make(chan struct{}),
	}
	informers, err := cache.New(config, cache.Options{
		Scheme:            framework.Scheme(),
		DefaultNamespaces: map[string]cache.Config{namespace: {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{preprovv1.ManagedLabel: preprovv1.ManagedLabelValue})},
			// The harness reads no status: dropping it keeps its memory and
			// CPU (it shares the machine) small in the hardware scenario.
			&bmov1alpha1.BareMetalHost{}: {Transform: func(obj any) (any, error) {
				if host, ok := obj.(*bmov1alpha1.BareMetalHost); ok {
					host.Status = bmov1alpha1.BareMetalHostStatus{}
				}
				return obj, nil
			}},
		},
	})
	if err != nil {
		return nil, err
	}
	hosts, err := informers.GetInformer(ctx, &bmov1alpha1.BareMetalHost{})
	if err != nil {
		return nil, err
	}
	if _, err = hosts.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    t.onHost,
		UpdateFunc: func(_, obj any) { t.onHost(obj) },
	}); err != nil {
		return nil, err
	}
	secrets, err := informers.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return nil, err
	}
	if _, err := secrets.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: t.onSecret}); err != nil {
		return nil, err
	}
	go func() { _ = informers.Start(ctx) }()
	informers.WaitForCacheSync(ctx)
	return t, ctx.Err()
}

func (t *tracker) onHost(obj any) {
	host, ok := obj.(*bmov1alpha1.BareMetalHost)
	if !ok {
		return
	}
	_, paused := host.Annotations[preprovv1.PausedAnnotation]
	if paused || host.Spec.PreprovisioningNetworkDataName != host.Name+preprovv1.NetworkDataSecretSuffix {
		return
	}
	t.observe(t.unpaused, host.Name)
}

func (t *tracker) onSecret(obj any) {
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return
	}
	if hostName, ours := strings.CutSuffix(secret.Name, preprovv1.NetworkDataSecretSuffix); ours {
		t.observe(t.secret, hostName)
	}
}

// observe notes the first time a host reached a state, and the host as done
// once it reached both.
func (t *tracker) observe(state map[string]time.Time, hostName string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := state[hostName]; seen {
		return
	}
	state[hostName] = now
	_, unpaused := t.unpaused[hostName]
	_, secret := t.secret[hostName]
	if !unpaused || !secret {
		return
	}
	t.done[hostName] = now
	t.lastDone = now
	if len(t.done) == t.expected {
		t.closeOnce.Do(func() { close(t.allDone) })
	}
}

// wait returns when every host is done, with the time the last one was.
func (t *tracker) wait(ctx context.Context) (time.Time, error) {
	select {
	case <-t.allDone:
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.lastDone, nil
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
}

// progress is how many hosts are done.
func (t *tracker) progress() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.done)
}

// doneAt is when each host was done.
func (t *tracker) doneAt() map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.done)
}
