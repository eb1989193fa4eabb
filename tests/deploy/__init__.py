"""Tests of the deployment artefacts: image, compose file, Kubernetes manifests, and start-up behaviour."""
