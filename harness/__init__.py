"""End-to-end resilience test harness: bounded waits, leak-proof port-forwards, pinned kube context."""
