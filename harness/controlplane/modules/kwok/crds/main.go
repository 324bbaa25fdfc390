// Command crds prints the CustomResourceDefinition of kwok's namespaced PortForward, as kwok's own release embeds it.
// The control plane installs it and starts kwok with --enable-crds=PortForward, so a spec routes a pod's port to a
// local process by creating a PortForward named after the pod, while the plane runs (no restart of kwok).
package main

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kwok/kustomize/crd"
)

func main() {
	fmt.Println(strings.TrimRight(string(crd.PortForward), "\n"))
}
