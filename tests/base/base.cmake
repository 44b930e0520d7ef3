# The base layer has no tests of its own: its errors and tunables are tested through the layers
# above (the worker pool and NUMA placement moved to the offload layer, tests/offload/).
