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

package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/capm3-preprov/capm3-preprov/internal/ownership"
)

// notPausedOrMoving drops the events of objects that Cluster API tells
// controllers to leave alone (ownership.PausedOrMoving).
var notPausedOrMoving = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	return !ownership.PausedOrMoving(obj)
})

// heldByClusterAPI is true for a host Cluster API tells controllers to
// leave alone. The event filter only sees the object of an event: a
// reconcile of the host also starts from its template's, pool's, claims',
// addresses', Secret's or Metal3Data's events, and from timed requeues.
// So each reconciler asks again of the host itself, and writes nothing to
// it, its Secret or its claims until the hold is over; the host's update
// that ends the hold brings it back.
func heldByClusterAPI(ctx context.Context, host client.Object) bool {
	if !ownership.PausedOrMoving(host) {
		return false
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Host is paused or being moved by Cluster API; leaving it alone")
	return true
}
