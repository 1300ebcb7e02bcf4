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
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// notPausedOrMoving drops the events of objects that Cluster API tells
// controllers to leave alone, as CAPI providers' ResourceNotPaused does:
//   - cluster.x-k8s.io/paused, set by a user to hold reconciliation;
//   - clusterctl.cluster.x-k8s.io/delete-for-move, which `clusterctl move`
//     puts on every object it has copied to the target, right before it
//     deletes it from the source. A source controller still running would
//     otherwise see its hosts' claims and Secret go, and create them again.
var notPausedOrMoving = predicate.NewPredicateFuncs(func(obj client.Object) bool {
	return !pausedOrMoving(obj)
})

func pausedOrMoving(obj client.Object) bool {
	_, moving := obj.GetAnnotations()[clusterctlv1.DeleteForMoveAnnotation]
	return moving || annotations.HasPaused(obj)
}
