// tunnelbench: benchmarks (policy, packet, wireguard, store, ring).
print("tunnelbench")
