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
