#!/usr/bin/env bats
# The writes of e2e-tests/cluster/selection.bats, through this suite's cluster and presets.

load ../cluster/common

@test "the API server sends each preset of this cluster exactly the writes policy-host selects predicts" {
  sent_as_predicted
}
