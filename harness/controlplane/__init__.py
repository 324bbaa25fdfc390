"""A real Kubernetes control plane on this machine: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and kwok (Nodes and pods simulated: no container runtime), built from their Go modules and run on 127.0.0.1."""
