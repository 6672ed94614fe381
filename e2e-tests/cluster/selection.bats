#!/usr/bin/env bats
# What reaches the policy is the API server's choice: the writes of the lifecycle corpus, the e2e
# fixtures and the proof's generated marker changes, sent through the real API server, reach each
# one-tool preset's webhook exactly as `policy-host selects` predicts from the manifest (on
# Kubernetes older than 1.30, without its matchConditions, as kubewarden-controller drops them).

load common

@test "the API server sends each one-tool preset exactly the writes policy-host selects predicts" {
  sent_as_predicted
}
