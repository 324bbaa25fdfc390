// Command stages prints the default node and pod stages kwok's own kwokctl configures (node-initialize,
// node-heartbeat-with-lease, pod-ready, pod-complete, pod-delete), as one multi-document YAML for kwok's --config.
// kwok itself starts no stage it is not given: without these it exits with "no stages found".
package main

import (
	"fmt"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodelease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

func main() {
	docs := []string{
		nodefast.DefaultNodeInit,
		nodelease.DefaultNodeHeartbeatWithLease,
		podfast.DefaultPodReady,
		podfast.DefaultPodComplete,
		podfast.DefaultPodDelete,
	}
	for i, doc := range docs {
		if i > 0 {
			fmt.Println("---")
		}
		fmt.Println(strings.TrimRight(doc, "\n"))
	}
}
