"""Kubernetes types that KubeVirt objects embed, modelled with the same conventions as the rest."""
