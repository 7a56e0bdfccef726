# Sourced by the bench scripts. star_topo N FILE writes the one platform they
# compare on: N GPUs on one switch (the nvswitch template), one 12.5 GBps,
# 1 us link each way between every GPU and the switch, as SimGrid's cluster
# (SPLITDUPLEX) platform; compute at peak so that only the network counts.
star_topo() {
  cat >"$2" <<YAML
schema_version: 1
name: star$1
gpu: A100-SXM4-80GB
nodes: 1
gpus_per_node: $1
intra_node:
  template: nvswitch
  link_bw: 12.5GBps
  link_lat: 1us
compute:
  flops_efficiency: 1
  mem_efficiency: 1
  kernel_overhead: 0us
  fp32_math: fp32
YAML
}
